// What a seat answers its session's hooks: presence from each hook, the event plane told, and on
// SessionStart and UserPromptSubmit the mail that waits, framed into additionalContext. A reply
// that carries mail is a hand-over: acked when the hook confirms it wrote the reply (`confirm`),
// released (flagged a possible repeat) otherwise.
import { setTimeout as sleep } from "node:timers/promises";
import type { ConnectorConfig } from "./config.js";
import type { EventPlane } from "./event-plane.js";
import type { HookAnswer, HookHandler, HookVia } from "./hook-socket.js";
import type { Handover, Selection } from "./inbox.js";
import { drainLead, handoverLine, identityLine, permissionDecision, waitingLine } from "./model-text.js";
import { presenceFromHook } from "./presence.js";
import { HookPayload, isHookEvent, type HookEvent, type HookRequest } from "./protocol.js";
import type { Seat } from "./seat.js";

/** Room kept in a drain's budget for the lead line's count and the footer. */
const FOOTER_ROOM = 240;

export class HookResponder implements HookHandler {
  constructor(
    private readonly seat: Seat,
    private readonly cfg: ConnectorConfig,
  ) {}

  async handle(req: HookRequest, via: HookVia): Promise<HookAnswer> {
    const { seat } = this;
    if (seat.leaving) return { reply: {} }; // the connector is leaving: hooks get nothing
    if (via.transport === "socket" && this.cfg.pairing && req.pids.length && !req.pids.includes(this.cfg.parentPid) && !req.pids.includes(process.pid)) {
      seat.log.warn({ event: req.event }, "refused a hook from another session (its process is not a child of this connector's Claude)");
      return { reply: {} };
    }
    if (!isHookEvent(req.event)) return { reply: {} };
    const event: HookEvent = req.event;
    // The first hook means a session is attached: join now (a health check never sends one).
    // SessionEnd of a session that never joined has nothing to say.
    if (event === "SessionEnd" && !seat.joined) return { reply: {} };
    try {
      await seat.activate(`${event} hook`);
    } catch {
      return { reply: {} };
    }
    const payload = HookPayload.parse({ ...req.payload, hook_event_name: event });
    // Facts the card's reserved meta keys name, as the session reports them.
    seat.noteSessionFacts({
      ...(payload.session_id ? { sessionId: payload.session_id.slice(0, 200) } : {}),
      ...(payload.model ? { model: payload.model.slice(0, 200) } : {}),
    });
    const { patch, turnOpen } = presenceFromHook(event, payload, seat.turn);
    seat.turn.turnOpen = turnOpen;
    if (event === "SessionStart") seat.resetForSession(patch);
    else if (patch) void seat.setPresence(patch);
    if (event === "Stop" || event === "StopFailure") seat.wentIdle();
    notePlane(seat.plane, event, payload);
    if (event === "PermissionRequest" && seat.approvals) return this.askMesh(payload);
    // No permission dialog outlives its turn: an ask still open was answered at the terminal.
    if (event === "Stop" || event === "StopFailure" || event === "UserPromptSubmit" || event === "SessionEnd") seat.approvals?.movedOn();
    if (event !== "SessionStart" && event !== "UserPromptSubmit") {
      seat.log.debug({ event }, "hook answered");
      return { reply: {} };
    }

    // The backlog latch has its own deadline; this one only guards against a join that never ends.
    await Promise.race([seat.ready(), sleep(this.cfg.readyTimeoutMs + 2_000, undefined, { ref: false })]);
    const { text, handover } = this.drainContext(event, via.canHandOver);
    if (!handover) seat.log.debug({ event, mail: 0 }, "hook answered");
    if (!text) return { reply: {} };
    const reply: Record<string, unknown> = { hookSpecificOutput: { hookEventName: event, additionalContext: text } };
    if (!handover) return { reply };
    // One line the person at the terminal sees (the context itself is invisible there).
    reply.systemMessage = handoverLine(handover.entries, seat.unread());
    seat.refreshUnread();
    seat.log.debug({ event, handover: handover.id, messages: handover.entries.length }, "handing mail to a hook");
    return { reply, receipt: handover.id };
  }

  /**
   * Put a permission ask to the mesh and wait for a person's answer (ApprovalDesk): the decision
   * goes back to the CLI; within the bound nobody answered, a managed seat's ask is denied and a
   * hand-started session's own dialog stands (an empty reply).
   */
  private async askMesh(payload: HookPayload): Promise<HookAnswer> {
    const { seat } = this;
    const tool = payload.tool_name ?? "tool";
    const outcome = await seat.approvals!.ask(tool, payload.ask_input ?? {});
    if (outcome.kind === "answered") void seat.setPresence({ status: "working", condition: null, activity: tool.slice(0, 200) });
    else if (this.cfg.managed) void seat.setPresence({ status: "working", condition: null });
    const decision = permissionDecision(outcome, { managed: this.cfg.managed, timeoutMs: this.cfg.approvalTimeoutMs });
    return { reply: decision && seat.permissionReply ? seat.permissionReply(decision) : {} };
  }

  /** The additionalContext of a draining hook: identity (at SessionStart), framed mail, what still waits. */
  drainContext(event: "SessionStart" | "UserPromptSubmit", canHandOver = true): { text?: string; handover?: Handover } {
    const { seat } = this;
    const inbox = seat.inbox;
    const intro = event === "SessionStart" ? identityLine(seat.facts()) : undefined;
    const reserve = (intro ? intro.length + 1 : 0) + drainLead(seat.id, 999).length + 1 + FOOTER_ROOM;
    const counts = inbox.counts();
    const sel: Selection = canHandOver
      ? inbox.drain(Math.max(0, this.cfg.drainBudget - reserve))
      : { text: [], waiting: counts.directed + counts.channel, pullOnly: counts.pull, tooLarge: 0 };
    const lines: string[] = [];
    if (intro) lines.push(intro);
    if (sel.text.length) lines.push(drainLead(seat.id, sel.text.length), ...sel.text);
    const footer = waitingLine(sel, inbox.returnedCount);
    if (footer) lines.push(footer);
    if (!lines.length) return {};
    if (sel.handover) seat.answered();
    return { text: lines.join("\n"), ...(sel.handover ? { handover: sel.handover } : {}) };
  }

  async confirm(receipt: string): Promise<void> {
    const n = await this.seat.inbox.confirm(receipt);
    this.seat.log.debug({ handover: receipt, acked: n }, "hook confirmed its reply was written; acked");
    this.seat.refreshUnread();
  }

  release(receipt: string, why: string): void {
    this.seat.inbox.release(receipt);
    this.seat.refreshUnread();
    this.seat.log.info({ handover: receipt, why }, "hand-over not confirmed; its mail stays, flagged as a possible repeat");
  }
}

/** Tell the event plane what the hook says (it returns at once: the plane works off the hook's path). */
function notePlane(plane: EventPlane | undefined, event: HookEvent, payload: HookPayload): void {
  if (!plane) return;
  if (event === "SessionStart" && payload.session_id) {
    plane.sessionStart({
      sessionId: payload.session_id,
      ...(payload.transcript_path ? { transcriptPath: payload.transcript_path } : {}),
      ...(payload.source ? { source: payload.source } : {}),
    });
    return;
  }
  if (payload.session_id && payload.transcript_path) plane.sessionSeen({ sessionId: payload.session_id, transcriptPath: payload.transcript_path });
  if (event === "Stop" || event === "StopFailure") {
    plane.turnEnded(event === "Stop" ? "finished" : "failed");
  } else {
    plane.poke();
  }
}
