// Approvals from anywhere, as readers see them (docs/SPEC.md §2, docs/events.md): a seat's open
// permission asks, read from the event planes' recent frames, and an answer sent on the seat's
// approve subject as the answerer. `cotal approvals`/`approve`/`deny`, the console and the
// dashboard all use these.
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  APPROVAL_EVENTS,
  ApprovalAnswered,
  ApprovalAsked,
  ApprovalExpired,
  ApprovalReply,
  approveSubject,
  decodeMessage,
  eventPlaneOf,
  eventsChannelOf,
  filters,
  frameOf,
  parsePrincipal,
  parseSubject,
  Presence,
  principalId,
  type AgUiFrame,
  type ApprovalAnswer,
  type ApprovalDecision,
  type ApprovalRefusalCode,
  type Principal,
} from "../schemas/index.js";
import { callControl } from "./control.js";
import { collectHistory } from "./history.js";
import { isNoResponders, isTimeout } from "./js-errors.js";

/** An ask nobody answered yet, and that has not expired. */
export interface OpenApproval {
  /** The ask id (`ap-…`), what `cotal approve` takes. */
  id: string;
  /** The seat that asks, `<owner>.<actor>`. */
  seat: string;
  tool: string;
  /** The tool's input as the agent CLI shows it (a Bash call: `command`, `description`). */
  input: Record<string, string>;
  askedAt: number;
  expiresAt: number;
  /** What happens at expiresAt: `denied` (a managed seat) or `prompt` (a hand-started session's own prompt stands). */
  onExpiry: "denied" | "prompt";
}

export interface OpenApprovalsOptions {
  /** Who reads: history is asked as this principal (its read scope applies). */
  me: Principal;
  /** Only these seats' planes (default: every agent on the roster that is not offline). */
  seats?: Principal[];
  /** How far back to read, ms (default 15 minutes: no ask waits longer than its bound). */
  windowMs?: number;
  /** Now, for tests (default Date.now()). */
  now?: number;
}

/** The approval events of one frame, as they appear: an ask, an answer, an expiry (refusals change nothing). */
export type ApprovalEvent =
  | { kind: "asked"; ask: OpenApproval }
  | { kind: "answered"; id: string; seat: string; decision: ApprovalDecision; by: string; at: number }
  | { kind: "expired"; id: string; seat: string; outcome: "denied" | "prompt"; at: number };

/** The approval events a frame of `seat`'s plane carries (the CUSTOM events named in APPROVAL_EVENTS), in order. */
export function approvalEventsOf(seat: Principal, frame: AgUiFrame): ApprovalEvent[] {
  const out: ApprovalEvent[] = [];
  const id = principalId(seat);
  for (const e of frame.events) {
    if (e.type !== "CUSTOM") continue;
    const name = (e as { name?: unknown }).name;
    const value = (e as { value?: unknown }).value;
    if (name === APPROVAL_EVENTS.asked) {
      const a = ApprovalAsked.safeParse(value);
      // A seat speaks only for itself: an ask naming another seat is not taken.
      if (a.success && a.data.seat === id) out.push({ kind: "asked", ask: a.data });
    } else if (name === APPROVAL_EVENTS.answered) {
      const a = ApprovalAnswered.safeParse(value);
      if (a.success) out.push({ kind: "answered", id: a.data.id, seat: id, decision: a.data.decision, by: a.data.by, at: a.data.at });
    } else if (name === APPROVAL_EVENTS.expired) {
      const a = ApprovalExpired.safeParse(value);
      if (a.success) out.push({ kind: "expired", id: a.data.id, seat: id, outcome: a.data.outcome, at: a.data.at });
    }
  }
  return out;
}

/**
 * Folds approval events into the open asks: an ask stays open until an answer or expiry frame
 * names it, or its expiresAt passes.
 */
export class OpenApprovalSet {
  private readonly open = new Map<string, OpenApproval>();
  private readonly closed = new Set<string>();

  apply(e: ApprovalEvent): void {
    if (e.kind === "asked") {
      if (!this.closed.has(e.ask.id)) this.open.set(e.ask.id, e.ask);
      return;
    }
    this.closed.add(e.id);
    this.open.delete(e.id);
  }

  /** The open asks at `now`, oldest first. */
  list(now = Date.now()): OpenApproval[] {
    return [...this.open.values()].filter((a) => a.expiresAt > now).sort((a, b) => a.askedAt - b.askedAt || a.id.localeCompare(b.id));
  }
}

/** The agents on the roster that are not offline (their planes may hold open asks). */
async function liveSeats(nc: NatsConnection, space: string, me: Principal): Promise<Principal[]> {
  const out: Principal[] = [];
  let after: string | undefined;
  for (let page = 0; page < 1_000; page++) {
    const rows = await callControl(nc, space, "roster", me, after ? { after } : {});
    for (const r of rows) {
      if (r.deleted) continue;
      const p = Presence.safeParse(r.presence);
      if (p.success && p.data.card.kind === "agent" && p.data.status !== "offline") out.push(parsePrincipal(r.id));
    }
    if (!rows.length) break;
    const last = rows.at(-1)!.id;
    if (last === after) break;
    after = last;
  }
  return out;
}

/**
 * The open permission asks of the space's seats: each seat's event plane read back `windowMs`
 * (through the mesh service's history, as `me`), folded into asks with no answer or expiry
 * frame and not past their expiresAt, oldest first.
 */
export async function openApprovals(nc: NatsConnection, space: string, opts: OpenApprovalsOptions): Promise<OpenApproval[]> {
  const now = opts.now ?? Date.now();
  const seats = opts.seats ?? (await liveSeats(nc, space, opts.me));
  const set = new OpenApprovalSet();
  await Promise.all(
    seats.map(async (seat) => {
      const items = await collectHistory(eventsChannelOf(seat), { sinceMs: now - (opts.windowMs ?? 15 * 60_000) }, (args) =>
        callControl(nc, space, "history", opts.me, args),
      ).catch(() => []);
      for (const it of items) {
        const f = frameOf(it.message.parts);
        if (f) for (const e of approvalEventsOf(seat, f)) set.apply(e);
      }
    }),
  );
  return set.list(now);
}

/** What an answer came to: the seat took it, or refused it (or could not be reached). */
export type AnswerResult = { ok: true } | { ok: false; code: ApprovalRefusalCode | "unreachable"; message: string };

/**
 * Answer one ask of `ask.seat` as `me` (core request/reply on the seat's approve subject, where
 * the broker pins `me`). The seat checks the approve right and replies; a seat that is gone, or
 * did not answer within `timeoutMs`, comes back `unreachable`.
 */
export async function answerApproval(
  nc: NatsConnection,
  space: string,
  me: Principal,
  ask: { seat: string | Principal; id: string },
  decision: ApprovalDecision,
  reason?: string,
  opts: { timeoutMs?: number } = {},
): Promise<AnswerResult> {
  const seat = typeof ask.seat === "string" ? parsePrincipal(ask.seat) : ask.seat;
  const body: ApprovalAnswer = { id: ask.id, decision, ...(reason ? { reason } : {}) };
  try {
    const reply = await nc.request(approveSubject(space, seat, me), JSON.stringify(body), { timeout: opts.timeoutMs ?? 5_000 });
    const r = ApprovalReply.safeParse(reply.json());
    if (!r.success) return { ok: false, code: "unreachable", message: `${principalId(seat)} answered with something that is not an approval reply.` };
    return r.data;
  } catch (err) {
    if (isNoResponders(err)) return { ok: false, code: "unreachable", message: `${principalId(seat)} is not listening for answers (its connector is gone).` };
    if (isTimeout(err)) return { ok: false, code: "unreachable", message: `${principalId(seat)} did not reply in time.` };
    throw err;
  }
}

/**
 * Follow approval events live: every frame published on any seat's plane, its approval events
 * handed to `onEvent` (call `openApprovals` first for what is already open). The reader needs
 * subscribe rights on every plane (person, observer, admin, operator). Unsubscribe to stop.
 */
export function watchApprovals(nc: NatsConnection, space: string, onEvent: (e: ApprovalEvent) => void): Subscription {
  return nc.subscribe(filters.kind(space, "events"), {
    callback: (err, msg) => {
      if (err) return;
      const parsed = parseSubject(msg.subject);
      if (parsed.kind !== "events") return;
      const seat = eventPlaneOf(parsed.channel);
      if (!seat) return;
      let frame: AgUiFrame | undefined;
      try {
        frame = frameOf(decodeMessage(msg.data).parts);
      } catch {
        return;
      }
      if (frame) for (const e of approvalEventsOf(seat, frame)) onEvent(e);
    },
  });
}
