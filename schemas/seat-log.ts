import { SeatPosture } from "./spawn.js";
import { z } from "zod";
import { PrincipalId, principalId, type Principal } from "./principal.js";
import { CostBasis, ModelSource, RunErrorKind, RunStatus, RunUsage } from "./runs.js";
import { readingOldTerminalKey, TerminalHost } from "./terminal-host.js";
import { LifecycleUid, RuntimeName } from "./tokens.js";

const base = {
  seat: PrincipalId,
  uid: LifecycleUid.describe("the seat incarnation"),
  epoch: z.number().int().nonnegative().describe("process epoch: restarts of the process animating the seat"),
  ts: z.number().int().describe("Unix ms"),
  manager: z.string().optional().describe("the manager instance that wrote it"),
};

/**
 * The most one run may record as its cost (USD). Runs cost cents to dollars; a bound keeps one
 * record from blocking a day's budget on its own, and a reader from adding up non-numbers.
 */
export const MAX_RUN_COST_USD = 1_000;

/** How far in the future a run record's time may lie (clock skew between hosts), in ms. */
export const RUN_CLOCK_SKEW_MS = 5 * 60_000;

/** The operator's principal (the mesh host's CLI credential): it may write any manager's records. */
export const OPERATOR_PRINCIPAL = { owner: "local", actor: "cotal_cli" } as const satisfies Principal;

/**
 * The agents a manager can launch: the echo agent (`echo`), or a runtime of the registry by its name.
 * Which names exist is the registry's to say (runtimes/index.ts), not the contract's: a manager
 * refuses a name its registry does not hold, before anything starts.
 */
export const SeatAgent = RuntimeName.describe("echo (built in, no model) or a runtime of the registry (docs/runtimes.md)");
export type SeatAgent = z.infer<typeof SeatAgent>;

/** One record of the seat log as it is written. */
const SeatEventRecord = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("requested"),
    ...base,
    agent: SeatAgent.optional(),
    persona: z.string().optional(),
    role: z.string().optional(),
    by: PrincipalId.optional(),
    requestId: z.string().optional().describe("the spawn request's id: the same id returns the first result"),
    terminal: TerminalHost.optional().describe("the terminal host it runs in (`runtime` in a record an older manager wrote)"),
    cwd: z.string().optional().describe("the seat's working directory on the manager's host"),
    model: z.string().optional(),
    channels: z.array(z.string()).optional(),
    restarts: z.number().int().nonnegative().optional().describe("its restart policy: restarts allowed within windowMs"),
    windowMs: z.number().int().positive().optional(),
    carried: z
      .object({ session: z.string(), digest: z.string() })
      .optional()
      .describe("seats of a runtime that can carry: the carried session it forks and the sha256 of the transcript the fork reads"),
    spawnedBy: PrincipalId.optional().describe(
      "a helper (docs/manager.md, Helpers): the agent that spawned it, taken from the request's subject (the broker pins it), never from its card",
    ),
    spawnerUid: LifecycleUid.optional().describe(
      "the spawner's seat incarnation, when the spawner is a seat of the same manager: its retirement retires this one",
    ),
    allowSpawn: z.array(z.string()).optional().describe("its credential may spawn helpers of these personas (the operator's spawn only)"),
    spawnLimit: z.number().int().positive().optional(),
    personaDigest: z.string().optional().describe("sha256 of its agent file as it was admitted: a helper starts again only from those bytes"),
    posture: SeatPosture.optional().describe("supervised: what its allow-list does not name is asked of a person over the mesh (absent: unattended)"),
  }),
  z.object({
    type: z.literal("launched"),
    ...base,
    pid: z.number().int().optional(),
    startTime: z.string().optional(),
    terminal: z.string().describe("the terminal host it runs in: process, tmux or pty (`runtime` in a record an older manager wrote)"),
    permissionMode: z
      .string()
      .optional()
      .describe("the permission mode its CLI runs in, where the runtime has them (dontAsk unless its agent file asked otherwise)"),
  }),
  z.object({ type: z.literal("joined"), ...base }),
  z.object({
    type: z.literal("exited"),
    ...base,
    code: z.number().int().nullable(),
    signal: z.string().nullable(),
    output: z.string().optional(),
    retiring: z
      .string()
      .optional()
      .describe(
        "set when this exit retires the seat (a stop, a failed start, a crash loop): the reason its `retired` record carries. A manager that restarts before writing that record retires the seat with it; one without it goes through the restart policy",
      ),
  }),
  z.object({ type: z.literal("restarted"), ...base, reason: z.string() }),
  // A helper handed over by its spawner (or the operator): it no longer retires with that spawner.
  z.object({
    type: z.literal("handed-over"),
    ...base,
    from: PrincipalId.describe("the spawner it was handed over by"),
    to: PrincipalId.optional().describe("the agent that answers for it now; absent: the operator"),
    toUid: LifecycleUid.optional().describe("that agent's seat incarnation, when it is a seat of the same manager"),
  }),
  z.object({ type: z.literal("fenced"), ...base, reason: z.string() }),
  z.object({ type: z.literal("retired"), ...base, reason: z.string() }),
  // A one-shot run (docs/runs.md) on its own subject `…seat.cotal_run.<runId>`: its cost is what budgets add up.
  z.object({
    type: z.literal("run"),
    ...base,
    status: RunStatus,
    costUsd: z
      .number()
      .min(0)
      .max(MAX_RUN_COST_USD)
      .describe(
        "the agent CLI's client-side estimate, or the median of recent runs when it reported none (costBasis); at most 1,000 USD (MAX_RUN_COST_USD): a record claiming more is not counted",
      ),
    costBasis: CostBasis.optional(),
    persona: z.string().optional(),
    model: z.string().optional(),
    modelSource: ModelSource.optional(),
    task: z.string().optional().describe("the chain marker the per-task cap counts by"),
    by: PrincipalId.optional(),
    usage: RunUsage.optional(),
    sessionId: z.string().optional(),
    latencyMs: z.number().int().nonnegative().optional(),
    errorKind: RunErrorKind.optional(),
  }),
]);

/**
 * The manager's event-sourced seat history (SEATS_<space>, subject `…seat.<o>.<a>`). The log is
 * kept: a `requested` or `launched` an older manager wrote names its terminal host `runtime`, and
 * is read as `terminal`.
 */
export const SeatEvent = readingOldTerminalKey(SeatEventRecord, (o) => o.type === "requested" || o.type === "launched")
  // A run dated in the future would count in a day that has not begun (and sort as the newest run).
  .refine((e) => e.type !== "run" || e.ts <= Date.now() + RUN_CLOCK_SKEW_MS, {
    message: `a run record may not be dated more than ${RUN_CLOCK_SKEW_MS / 60_000} minutes in the future`,
    path: ["ts"],
  })
  .describe("One event of a seat's history.");
export type SeatEvent = z.infer<typeof SeatEvent>;
export type SeatEventInput = z.input<typeof SeatEventRecord>;

/**
 * Why a seat-log record may not be counted, or undefined when its subject proves it: the seat its
 * body names is the subject's, and its writer (the subject's last two tokens, which the broker
 * pins to the publisher's own principal) is the manager the body names (`manager` = the writer's
 * actor), or the operator, who may write for any manager. Readers skip anything else.
 */
export function seatRecordProblem(subject: { seat: Principal; from: Principal }, event: SeatEvent): string | undefined {
  if (principalId(subject.seat) !== event.seat) return `its seat ${event.seat} is not its subject's ${principalId(subject.seat)}`;
  const writer = subject.from;
  if (writer.owner === OPERATOR_PRINCIPAL.owner && writer.actor === OPERATOR_PRINCIPAL.actor) return undefined;
  if (event.manager !== writer.actor || writer.owner !== "local")
    return `it names manager ${event.manager ?? "(none)"} but was written by ${principalId(writer)}`;
  return undefined;
}
