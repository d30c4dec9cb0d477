// Approvals over the mesh (docs/SPEC.md §2 and §3, docs/security.md "The approve right"): a seat's
// permission ask goes out as event-plane frames, a person answers it on the seat's approve subject.
import { z } from "zod";
import { assertToken } from "./tokens.js";
import { ROOT } from "./subjects.js";
import { PrincipalId, principalId, type Principal } from "./principal.js";

/**
 * The subject an answer to `seat`'s asks is sent on, by `answerer`: exactly 7 tokens,
 * `cotal.<space>.approve.<seatOwner>.<seatActor>.<owner>.<actor>`. The last two name the
 * answerer, where the broker pins them (each principal may publish here only as itself).
 */
export function approveSubject(space: string, seat: Principal, answerer: Principal): string {
  const t = (p: Principal) => `${assertToken("principal", "owner", p.owner)}.${assertToken("principal", "actor name", p.actor)}`;
  return `${ROOT}.${assertToken("space", "space", space)}.approve.${t(seat)}.${t(answerer)}`;
}

/** What a seat's connector subscribes to: every answer to its own asks, from anyone. */
export function approveInbox(space: string, seat: Principal): string {
  return `${ROOT}.${assertToken("space", "space", space)}.approve.${assertToken("principal", "owner", seat.owner)}.${assertToken("principal", "actor name", seat.actor)}.*.*`;
}

/** What `answerer` may publish: an answer to any seat's ask, as itself (the permission pattern). */
export function approveAs(space: string, answerer: Principal): string {
  return `${ROOT}.${assertToken("space", "space", space)}.approve.*.*.${assertToken("principal", "owner", answerer.owner)}.${assertToken("principal", "actor name", answerer.actor)}`;
}

/** The seat and the answerer of an approve subject, from its tokens; undefined for any other subject. */
export function parseApproveSubject(subject: string): { space: string; seat: Principal; from: Principal } | undefined {
  const t = subject.split(".");
  if (t.length !== 7 || t[0] !== ROOT || t[2] !== "approve") return undefined;
  const ok = (s: string | undefined) => s !== undefined && /^[A-Za-z0-9_]{1,64}$/.test(s);
  if (!t.slice(3).every(ok)) return undefined;
  return { space: t[1]!, seat: { owner: t[3]!, actor: t[4]! }, from: { owner: t[5]!, actor: t[6]! } };
}

/** An ask id: `ap-` and 10 base32 characters (lower case). */
export const ApprovalId = z.string().regex(/^ap-[a-z2-7]{10}$/, "an approval id is ap- and 10 characters of a-z and 2-7 (as `cotal approvals` lists it)");
export type ApprovalId = z.infer<typeof ApprovalId>;

export const ApprovalDecision = z.enum(["allow", "deny"]);
export type ApprovalDecision = z.infer<typeof ApprovalDecision>;

/** Longest reason an answer carries, characters. */
export const MAX_APPROVAL_REASON = 500;

/** The body of an answer (request on the approve subject). */
export const ApprovalAnswer = z.strictObject({
  id: ApprovalId,
  decision: ApprovalDecision,
  reason: z.string().max(MAX_APPROVAL_REASON).optional(),
});
export type ApprovalAnswer = z.infer<typeof ApprovalAnswer>;

/** Why a seat refused an answer. */
export const ApprovalRefusalCode = z.enum(["not-allowed", "unknown-ask", "already-answered", "expired", "malformed"]);
export type ApprovalRefusalCode = z.infer<typeof ApprovalRefusalCode>;

/** The seat's reply to an answer. */
export const ApprovalReply = z.union([
  z.strictObject({ ok: z.literal(true) }),
  z.strictObject({ ok: z.literal(false), code: ApprovalRefusalCode, message: z.string().max(1_000) }),
]);
export type ApprovalReply = z.infer<typeof ApprovalReply>;

/** AG-UI `CUSTOM` event names of the approval frames (docs/events.md). */
export const APPROVAL_EVENTS = {
  asked: "cotal.approval.asked",
  answered: "cotal.approval.answered",
  expired: "cotal.approval.expired",
  refused: "cotal.approval.refused",
} as const;

/** Longest rendering of a tool's input an ask carries, characters. */
export const MAX_ASK_INPUT = 4_000;

/** What an ask shows a person: the tool, and its input as the agent CLI would show it. */
export const ApprovalAsked = z.object({
  id: ApprovalId,
  /** The seat that asks, `<owner>.<actor>`. */
  seat: PrincipalId,
  tool: z.string().min(1).max(200),
  /** The input as the CLI shows it (a Bash call: its command and description); other tools: their JSON, cut to MAX_ASK_INPUT. */
  input: z.record(z.string(), z.string().max(MAX_ASK_INPUT)),
  askedAt: z.number().int().nonnegative(),
  expiresAt: z.number().int().nonnegative(),
  /** What happens at expiresAt: a managed seat's ask is denied, a hand-started session's own prompt stands. */
  onExpiry: z.enum(["denied", "prompt"]),
});
export type ApprovalAsked = z.infer<typeof ApprovalAsked>;

export const ApprovalAnswered = z.object({
  id: ApprovalId,
  decision: ApprovalDecision,
  /** The answerer, as the broker pinned it in the subject. */
  by: PrincipalId,
  at: z.number().int().nonnegative(),
  reason: z.string().max(MAX_APPROVAL_REASON).optional(),
});
export type ApprovalAnswered = z.infer<typeof ApprovalAnswered>;

export const ApprovalExpired = z.object({
  id: ApprovalId,
  outcome: z.enum(["denied", "prompt"]),
  at: z.number().int().nonnegative(),
});
export type ApprovalExpired = z.infer<typeof ApprovalExpired>;

export const ApprovalRefused = z.object({
  id: z.string().max(100),
  by: PrincipalId,
  why: ApprovalRefusalCode,
  at: z.number().int().nonnegative(),
});
export type ApprovalRefused = z.infer<typeof ApprovalRefused>;

/**
 * Whether `who` may answer `seat`'s asks (docs/security.md, "The approve right"): the operator, the
 * seat's owner (who spawned it, or the person of a hand-started session's folder), or a principal
 * whose identity record's `approve` names the seat's actor or `*`.
 */
export function mayApprove(
  who: Principal,
  seat: Principal,
  o: { operator: Principal; owner?: string | undefined; approve?: readonly string[] | undefined },
): boolean {
  const id = principalId(who);
  if (id === principalId(o.operator)) return true;
  if (o.owner !== undefined && id === o.owner) return true;
  return (o.approve ?? []).some((a) => a === "*" || a === seat.actor || a === principalId(seat));
}

/** The approve right as minted: actor names (or `<owner>.<actor>`), or `*` for every seat. */
export const ApproveRight = z
  .array(z.union([z.literal("*"), z.string().regex(/^[A-Za-z0-9_]{1,64}(\.[A-Za-z0-9_]{1,64})?$/, "name a seat's actor, <owner>.<actor> or *")]))
  .max(64);
export type ApproveRight = z.infer<typeof ApproveRight>;
