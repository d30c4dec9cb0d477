// A seat's permission asks, answered from anywhere (docs/security.md, The approve right): the
// PermissionRequest hook asks here; the ask goes out as an event-plane frame; an answer arrives as
// a request on the seat's approve subject, whose last two tokens (pinned by the broker) name who
// sent it; the right is checked, the seat replies, and the hook returns the decision to the CLI.
// Within the bound nobody answered: a managed seat's ask is denied, a hand-started session's own
// prompt stands.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "../broker/index.js";
import {
  APPROVAL_EVENTS,
  ApprovalAnswer,
  approveInbox,
  mayApprove,
  OPERATOR_PRINCIPAL,
  parseApproveSubject,
  principalId,
  type ApprovalAsked,
  type ApprovalDecision,
  type ApprovalRefusalCode,
  type ApprovalReply,
  type Principal,
} from "../schemas/index.js";

/** What became of one ask. */
export type AskOutcome =
  | { kind: "answered"; decision: ApprovalDecision; by: string; reason?: string }
  /** Nobody with the right answered within the bound (or the seat is leaving). */
  | { kind: "expired" };

export interface ApprovalDeskOptions {
  nc: NatsConnection;
  space: string;
  me: Principal;
  /** The seat's owner, `<owner>.<actor>` (who spawned it, or a hand-started session's person): may answer. */
  owner?: string | undefined;
  /** Managed (nobody at its terminal): an unanswered ask is denied; hand-started: the CLI's own prompt stands. */
  managed: boolean;
  /** How long an ask waits for an answer, ms. */
  timeoutMs: number;
  /** Where the frames go (the seat's event plane); none: asks are answered but nobody sees them listed. */
  plane?: { custom(name: string, value: unknown): void } | undefined;
  /** Whether `who` holds the approve right for this seat (the mesh service's `may-approve`). */
  approveRight: (who: Principal) => Promise<boolean>;
  log: Logger;
}

const PersonFile = z.object({ name: z.string().regex(/^[A-Za-z0-9_]{1,64}$/), space: z.string() });

/**
 * The person recorded in `<dir>/.cotal/person.json` for `space` (`local.<name>`), the owner of a
 * hand-started session in that folder; undefined when there is none (or it is for another space).
 */
export function folderPerson(dir: string, space: string): string | undefined {
  try {
    const r = PersonFile.safeParse(JSON.parse(readFileSync(path.join(dir, ".cotal", "person.json"), "utf8")));
    return r.success && r.data.space === space ? `local.${r.data.name}` : undefined;
  } catch {
    return undefined;
  }
}

const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";

/** A fresh ask id: `ap-` and 10 base32 characters (50 random bits). */
export function newAskId(): string {
  const bytes = randomBytes(10);
  let s = "";
  for (const b of bytes) s += BASE32[b & 31];
  return `ap-${s}`;
}

/** Asks answered or expired recently are remembered by id (so a late answer is told which), at most this many. */
const MAX_CLOSED = 256;

interface Open {
  ask: ApprovalAsked;
  settle: (o: AskOutcome) => void;
  timer: NodeJS.Timeout;
}

const enc = new TextEncoder();

export class ApprovalDesk {
  private sub?: Subscription;
  private readonly open = new Map<string, Open>();
  private readonly closed = new Map<string, "answered" | "expired">();

  constructor(private readonly o: ApprovalDeskOptions) {}

  /** Start taking answers on the seat's approve subject. */
  start(): void {
    if (this.sub) return;
    this.sub = this.o.nc.subscribe(approveInbox(this.o.space, this.o.me), { callback: (err, msg) => void (err ? undefined : this.onAnswer(msg)) });
  }

  /** Open asks (tests, status). */
  get pending(): number {
    return this.open.size;
  }

  /**
   * Ask the mesh about one tool call: the ask frame goes out at once, and the outcome comes when a
   * person with the right answers, or the bound passes.
   */
  ask(tool: string, input: Record<string, string>): Promise<AskOutcome> {
    const id = newAskId();
    const askedAt = Date.now();
    const ask: ApprovalAsked = {
      id,
      seat: principalId(this.o.me),
      tool: tool.slice(0, 200) || "tool",
      input,
      askedAt,
      expiresAt: askedAt + this.o.timeoutMs,
      onExpiry: this.o.managed ? "denied" : "prompt",
    };
    return new Promise<AskOutcome>((resolve) => {
      const timer = setTimeout(() => this.expire(id), this.o.timeoutMs);
      timer.unref();
      this.open.set(id, { ask, settle: resolve, timer });
      this.o.plane?.custom(APPROVAL_EVENTS.asked, ask);
      this.o.log.info({ ask: id, tool: ask.tool, timeoutMs: this.o.timeoutMs }, "asked the mesh for a permission");
    });
  }

  private expire(id: string): void {
    const open = this.open.get(id);
    if (!open) return;
    this.close(id, "expired");
    const outcome = this.o.managed ? "denied" : "prompt";
    this.o.plane?.custom(APPROVAL_EVENTS.expired, { id, outcome, at: Date.now() });
    this.o.log.info({ ask: id, outcome }, "nobody answered a permission ask in time");
    open.settle({ kind: "expired" });
  }

  private close(id: string, how: "answered" | "expired"): void {
    const open = this.open.get(id);
    if (open) clearTimeout(open.timer);
    this.open.delete(id);
    this.closed.set(id, how);
    if (this.closed.size > MAX_CLOSED) this.closed.delete(this.closed.keys().next().value!);
  }

  /** One answer: who sent it from the subject, the body checked, the right checked, then the reply. */
  private async onAnswer(msg: Msg): Promise<void> {
    const reply = (r: ApprovalReply) => {
      if (msg.reply) msg.respond(enc.encode(JSON.stringify(r)));
    };
    const refuse = (id: string, by: string, code: ApprovalRefusalCode, message: string) => {
      reply({ ok: false, code, message });
      this.o.plane?.custom(APPROVAL_EVENTS.refused, { id: id.slice(0, 100), by, why: code, at: Date.now() });
      this.o.log.warn({ ask: id, by, code }, "refused an answer to a permission ask");
    };
    const parsed = parseApproveSubject(msg.subject);
    if (!parsed || parsed.seat.owner !== this.o.me.owner || parsed.seat.actor !== this.o.me.actor) return;
    const by = principalId(parsed.from);
    let body: unknown;
    try {
      body = msg.json();
    } catch {
      body = undefined;
    }
    const answer = ApprovalAnswer.safeParse(body);
    if (!answer.success) {
      reply({ ok: false, code: "malformed", message: "An answer is {id, decision: allow|deny, reason?}." });
      return;
    }
    const { id, decision, reason } = answer.data;
    const open = this.open.get(id);
    if (!open) {
      const was = this.closed.get(id);
      if (was === "answered") return refuse(id, by, "already-answered", `${id} was already answered.`);
      if (was === "expired") return refuse(id, by, "expired", `${id} expired: nobody answered it in time.`);
      return refuse(id, by, "unknown-ask", `${principalId(this.o.me)} has no ask ${id}.`);
    }
    let allowed: boolean;
    try {
      allowed = mayApprove(parsed.from, this.o.me, { operator: OPERATOR_PRINCIPAL, owner: this.o.owner }) || (await this.o.approveRight(parsed.from));
    } catch (err) {
      this.o.log.warn({ err, ask: id, by }, "could not check the approve right; the answer is refused");
      allowed = false;
    }
    if (!allowed)
      return refuse(
        id,
        by,
        "not-allowed",
        `${by} may not answer ${principalId(this.o.me)}'s permission asks: only its owner, the operator, or a person minted with the approve right for it (cotal mint <name> --profile person --approve ${this.o.me.actor}).`,
      );
    // Checked again: the answer of another person may have landed while the right was looked up.
    if (!this.open.has(id)) return refuse(id, by, this.closed.get(id) === "expired" ? "expired" : "already-answered", `${id} was settled meanwhile.`);
    this.close(id, "answered");
    reply({ ok: true });
    const at = Date.now();
    this.o.plane?.custom(APPROVAL_EVENTS.answered, { id, decision, by, at, ...(reason ? { reason } : {}) });
    this.o.log.info({ ask: id, decision, by }, "a permission ask was answered");
    open.settle({ kind: "answered", decision, by, ...(reason ? { reason } : {}) });
  }

  /**
   * The session moved on (its turn ended, a new prompt came): an ask still open was answered at the
   * terminal, whose dialog Claude shows beside the hook. It leaves the list as expired, outcome
   * `prompt` (the CLI's own dialog decided), and its hook returns no decision.
   */
  movedOn(): void {
    for (const [id, open] of [...this.open]) {
      this.close(id, "expired");
      this.o.plane?.custom(APPROVAL_EVENTS.expired, { id, outcome: "prompt", at: Date.now() });
      this.o.log.info({ ask: id }, "the session moved on: a permission ask was answered at its terminal");
      open.settle({ kind: "expired" });
    }
  }

  /** Stop taking answers; open asks settle as expired (a managed seat's are denied, a hand-started session's prompt stands). */
  stop(): void {
    this.sub?.unsubscribe();
    this.sub = undefined;
    for (const [id, open] of [...this.open]) {
      this.close(id, "expired");
      open.settle({ kind: "expired" });
    }
  }
}
