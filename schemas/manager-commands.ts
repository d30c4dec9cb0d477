import { z } from "zod";
import { PrincipalId } from "./principal.js";
import { CARRY_COMMANDS, CarryClaim, SessionId } from "./carry.js";
import { BudgetArgs, BudgetReply, RunArgs, RunReply } from "./runs.js";
import { SeatAgent, SeatRuntime } from "./seat-log.js";
import { ChannelName, LifecycleUid, PrincipalToken, RoleName } from "./tokens.js";

/** A manager instance id (kept in its state dir): letters, digits, `_` and `-`. */
export const ManagerInstance = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, "instance must be 1-64 letters, digits, '_' or '-'")
  .describe("a manager instance id");

/** Where a seat stands as its manager reports it: the log's state, plus `uncertain` (launched, not joined within the readiness window). */
export const SeatStateName = z.enum(["requested", "launched", "joined", "exited", "fenced", "retired", "uncertain"]);

/** One seat as `ps` reports it. */
export const SeatView = z.object({
  seat: PrincipalId,
  name: PrincipalToken,
  uid: LifecycleUid,
  epoch: z.number().int().nonnegative(),
  state: SeatStateName,
  agent: SeatAgent,
  instance: ManagerInstance,
  role: RoleName.optional(),
  runtime: SeatRuntime.optional(),
  permissionMode: z.string().optional().describe("Claude seats: the permission mode (dontAsk unless the agent file asked for another)"),
  attach: z.array(z.string()).optional().describe("tmux seats: the command that opens its terminal, on the manager's host"),
  lastWakeAt: z.number().int().optional().describe("when the manager last typed a wake prompt into its terminal, Unix ms"),
  pid: z.number().int().optional(),
  exit: z.object({ code: z.number().int().nullable(), signal: z.string().nullable(), output: z.string().optional() }).optional(),
  reason: z.string().optional().describe("why it was fenced or retired"),
  carried: z
    .object({ session: z.string(), digest: z.string() })
    .optional()
    .describe("claude seats: the carried session it forked and the sha256 of the transcript the fork read"),
  requestedAt: z.number().int(),
  since: z.number().int().describe("when it entered this state, Unix ms"),
  restarts: z.number().int().nonnegative().describe("restarts in the current policy window"),
});
export type SeatView = z.infer<typeof SeatView>;

const StopArgs = z.object({ name: PrincipalToken });
const StopReply = z.object({
  seat: PrincipalId,
  uid: LifecycleUid,
  stopped: z.boolean().describe("a process was running and was stopped"),
  revoked: z.number().int().nonnegative(),
});

const ManagerStatus = z.object({
  instance: ManagerInstance,
  host: z.string(),
  pid: z.number().int(),
  seats: z.number().int().nonnegative().describe("seats holding a name (not retired)"),
  maxSeats: z.number().int().positive(),
  startedAt: z.number().int(),
});

/**
 * The manager's commands (`endpoint = manager`), served both as a queue group (target `one`:
 * any manager) and under each instance id (`--on <instance>`).
 */
export const MANAGER_COMMANDS = {
  spawn: {
    endpoint: "manager",
    summary: "admit, mint, write launch material and start a seat; replies at once with the identity",
    args: z.object({
      agent: SeatAgent.default("claude"),
      persona: PrincipalToken.optional().describe(
        "claude seats: an agent file `.cotal/agents/<persona>.md` under the seat's cwd on the manager's host (name, role, channels, model, allowedTools, persona text)",
      ),
      name: PrincipalToken.optional().describe("default: the agent's name; taken names get _2, _3…"),
      role: RoleName.optional(),
      channels: z.array(ChannelName).max(64).default([]),
      runtime: SeatRuntime.optional().describe("default: tmux for claude, process for echo"),
      cwd: z.string().min(1).max(4096).optional().describe("absolute working directory on the manager's host (default: the manager's state dir's seat folder)"),
      model: z.string().min(1).max(200).optional(),
      prompt: z.string().min(1).max(100_000).optional().describe("claude seats: typed into the session once it is ready"),
      restarts: z
        .number()
        .int()
        .min(0)
        .max(100)
        .optional()
        .describe("restarts allowed within windowMs before a crash loop retires the seat (default: the manager's, 3)"),
      windowMs: z.number().int().min(1_000).max(86_400_000).optional().describe("the restart policy's window (default: the manager's, 60 s)"),
      requestId: z.string().min(1).max(128).optional().describe("the same id returns the first result"),
      noEvents: z.boolean().optional().describe("claude seats: publish nothing on the seat's event plane (launch material noEvents)"),
      resume: SessionId.optional().describe("claude seats: fork this carried session (`--resume <id> --fork-session`); needs its claim"),
      claim: CarryClaim.optional().describe("the one-time claim carry-commit, carry-begin or carry-resolve issued for the session"),
    }),
    reply: z.object({ seat: PrincipalId, name: PrincipalToken, uid: LifecycleUid, instance: ManagerInstance, state: SeatStateName }),
  },
  stop: {
    endpoint: "manager",
    summary: "stop a seat's process, retire the incarnation, revoke its credential and free the name",
    args: StopArgs,
    reply: StopReply,
  },
  despawn: {
    endpoint: "manager",
    summary: "the same as stop (its other name): stop if running, retire, revoke, free the name",
    args: StopArgs,
    reply: StopReply,
  },
  ps: {
    endpoint: "manager",
    summary: "this manager's seats, projected from the seat log plus presence",
    args: z.object({ all: z.boolean().default(false).describe("include retired seats") }),
    reply: z.object({ instance: ManagerInstance, seats: z.array(SeatView) }),
  },
  status: {
    endpoint: "manager",
    summary: "this manager's instance, host and seat count",
    args: z.object({}),
    reply: ManagerStatus,
  },
  run: {
    endpoint: "manager",
    summary: "one-shot headless Claude runs (docs/runs.md): budget gates first, then each run's typed result, recorded with its cost in the seat log",
    args: RunArgs,
    reply: RunReply,
  },
  budget: {
    endpoint: "manager",
    summary: "the budget gauges: today's (UTC) run costs against the daily cap, and per task marker against the task cap",
    args: BudgetArgs,
    reply: BudgetReply,
  },
  ...CARRY_COMMANDS,
} as const;
