import { SeatPosture } from "./spawn.js";
import { z } from "zod";
import { PrincipalId } from "./principal.js";
import { CARRY_COMMANDS, CarryClaim, SessionId } from "./carry.js";
import { BudgetArgs, BudgetReply, RunArgs, RunReply } from "./runs.js";
import { SeatAgent } from "./seat-log.js";
import { AllowSpawn, ChannelRights, OpeningPrompt, PersonaInfo, SpawnLimit } from "./spawn.js";
import { readingOldTerminalKey, TerminalHost } from "./terminal-host.js";
import { ChannelName, LifecycleUid, PrincipalToken, RoleName } from "./tokens.js";

/** A manager instance id (kept in its state dir): letters, digits, `_` and `-`. */
export const ManagerInstance = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, "instance must be 1-64 letters, digits, '_' or '-'")
  .describe("a manager instance id");

/** Where a seat stands as its manager reports it: the log's state, plus `uncertain` (launched, not joined within the readiness window). */
export const SeatStateName = z.enum(["requested", "launched", "joined", "exited", "fenced", "retired", "uncertain"]);

/** One seat as `ps` reports it (an older manager's names its terminal host `runtime`: read as `terminal`). */
export const SeatView = readingOldTerminalKey(
  z.object({
    seat: PrincipalId,
    name: PrincipalToken,
    uid: LifecycleUid,
    epoch: z.number().int().nonnegative(),
    state: SeatStateName,
    agent: SeatAgent,
    instance: ManagerInstance,
    role: RoleName.optional(),
    persona: PrincipalToken.optional().describe("the agent file it was spawned from (restarting it from `cotal web` spawns that persona again)"),
    terminal: TerminalHost.optional().describe("the terminal host it runs in (`runtime` in an older manager's reply)"),
    permissionMode: z
      .string()
      .optional()
      .describe("the permission mode its CLI runs in, where the runtime has them (dontAsk unless the agent file asked for another)"),
    presence: z
      .object({
        status: z.string(),
        condition: z.string().optional(),
        message: z.string().optional(),
        activeAt: z.number().int().optional().describe("its last real progress (a prompt, a tool call, a finished turn), Unix ms"),
      })
      .optional()
      .describe("the running incarnation's presence: its status and, while set, its condition (e.g. auth: its model calls fail) in the seat's words"),
    lastWakeAt: z.number().int().optional().describe("when the manager last typed a wake prompt into its terminal, Unix ms"),
    pid: z.number().int().optional(),
    exit: z.object({ code: z.number().int().nullable(), signal: z.string().nullable(), output: z.string().optional() }).optional(),
    reason: z.string().optional().describe("why it was fenced or retired"),
    carried: z
      .object({ session: z.string(), digest: z.string() })
      .optional()
      .describe("seats of a runtime that can carry: the carried session it forked and the sha256 of the transcript the fork read"),
    spawnedBy: PrincipalId.optional().describe("the agent that spawned it and answers for it (docs/manager.md, Helpers); its retirement retires this seat"),
    handedOverBy: PrincipalId.optional().describe("the spawner that handed it over (to spawnedBy, or, with no spawnedBy, to the operator)"),
    requestedAt: z.number().int(),
    since: z.number().int().describe("when it entered this state, Unix ms"),
    restarts: z.number().int().nonnegative().describe("restarts in the current policy window"),
  }),
);
export type SeatView = z.infer<typeof SeatView>;

const StopArgs = z.object({ name: PrincipalToken });
const StopReply = z.object({
  seat: PrincipalId,
  uid: LifecycleUid,
  stopped: z.boolean().describe("a process was running and was stopped"),
  revoked: z.number().int().nonnegative(),
});

/** A runtime a manager can start, and which configuration its seats and runs use: names and paths, never a value. */
/** How a runtime with several ways to authenticate does so (`--<runtime>-auth`): names and places, never a value. */
export const RuntimeAuthDetail = z.object({
  mode: z.string(),
  chosen: z.enum(["auto", "explicit"]).describe("auto: detected from the manager's environment; explicit: named with --<runtime>-auth"),
  vars: z.array(z.string()).describe("the environment variables the mode reads that are set (names only)"),
  baseUrl: z.string().optional().describe("the model endpoint's origin, when set (without any user or password in it)"),
  login: z.string().optional().describe("the login file seats copy, when the mode uses one"),
});
export type RuntimeAuthDetail = z.infer<typeof RuntimeAuthDetail>;

export const RuntimeConfigStatus = z.object({
  name: z.string(),
  ready: z.boolean().describe("its credentials are present (a pre-flight: not a call to the model)"),
  config: z.string().describe("which configuration it uses (config file, provider, model, key variable names, login file)"),
  problem: z.string().optional(),
  remedy: z.string().optional(),
  auth: RuntimeAuthDetail.optional().describe("for a runtime with a choice of ways to authenticate: which one, how chosen, what it reads"),
});
export type RuntimeConfigStatus = z.infer<typeof RuntimeConfigStatus>;

const ManagerStatus = z.object({
  instance: ManagerInstance,
  host: z.string(),
  pid: z.number().int(),
  seats: z.number().int().nonnegative().describe("seats holding a name (not retired)"),
  maxSeats: z.number().int().positive(),
  startedAt: z.number().int(),
  runtimes: z
    .array(RuntimeConfigStatus)
    .optional()
    .describe("every runtime it can start (docs/runtimes.md) and the configuration its seats and runs use (absent: it predates the field)"),
});

/**
 * The manager's commands (`endpoint = manager`), served both as a queue group (target `one`:
 * any manager) and under each instance id (`--on <instance>`).
 */
export const MANAGER_COMMANDS = {
  spawn: {
    endpoint: "manager",
    summary: "admit, mint, write launch material and start a seat; replies at once with the identity",
    // An older CLI names the terminal host `runtime`: read as `terminal`.
    args: readingOldTerminalKey(
      z.object({
        agent: SeatAgent.optional(),
        persona: PrincipalToken.optional().describe(
          "agent CLI seats: an agent file `.cotal/agents/<persona>.md` under the seat's cwd on the manager's host (name, role, channels, model, allowedTools, persona text)",
        ),
        name: PrincipalToken.optional().describe("default: the agent's name; taken names get _2, _3…"),
        role: RoleName.optional(),
        channels: z.array(ChannelName).max(64).default([]),
        terminal: TerminalHost.optional().describe(
          "the terminal host: default tmux for an agent CLI, process for echo (`runtime`, its old name, is read too; both, differing, are refused)",
        ),
        cwd: z
          .string()
          .min(1)
          .max(4096)
          .optional()
          .describe("absolute working directory on the manager's host (default: the manager's state dir's seat folder)"),
        model: z.string().min(1).max(200).optional(),
        prompt: OpeningPrompt.optional(),
        restarts: z
          .number()
          .int()
          .min(0)
          .max(100)
          .optional()
          .describe("restarts allowed within windowMs before a crash loop retires the seat (default: the manager's, 3)"),
        windowMs: z.number().int().min(1_000).max(86_400_000).optional().describe("the restart policy's window (default: the manager's, 60 s)"),
        requestId: z.string().min(1).max(128).optional().describe("the same id returns the first result"),
        noEvents: z.boolean().optional().describe("agent CLI seats: publish nothing on the seat's event plane (launch material noEvents)"),
        posture: SeatPosture.optional().describe(
          "unattended (default: what the allow-list does not name is refused) or supervised (it is asked of a person over the mesh; runtimes whose permission hook returns a decision only)",
        ),
        resume: SessionId.optional().describe("seats of a runtime that can carry: fork this carried session; needs its claim"),
        claim: CarryClaim.optional().describe("the one-time claim carry-commit, carry-begin or carry-resolve issued for the session"),
        allowSpawn: AllowSpawn.optional().describe("the operator only: the seat's credential may spawn helpers of these personas (docs/manager.md, Helpers)"),
        spawnLimit: SpawnLimit.optional().describe("the operator only: helpers the seat may hold at once"),
        channelRights: ChannelRights.optional(),
      }),
    ),
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
  personas: {
    endpoint: "manager",
    summary: "the personas the caller may spawn helpers of, as this manager's folder holds them (cotal_personas)",
    args: z.object({}),
    reply: z.object({
      instance: ManagerInstance,
      personas: z.array(PersonaInfo),
      limit: z.number().int().nonnegative().describe("helpers the caller may hold at once"),
      held: z.number().int().nonnegative().describe("helpers it holds now (on every manager)"),
    }),
  },
  handover: {
    endpoint: "manager",
    summary: "hand a helper over, so it outlives its spawner: to another spawner (`to`), or to the operator (its spawner or the operator only)",
    args: z.object({
      name: PrincipalToken,
      to: PrincipalId.optional().describe(
        "the agent that answers for it from now on (it must be allowed to spawn its persona, within its limit); absent: the operator",
      ),
    }),
    reply: z.object({ seat: PrincipalId, uid: LifecycleUid, from: PrincipalId, to: PrincipalId.optional() }),
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
    summary: "one-shot headless runs of any runtime (docs/runs.md): budget gates first, then each run's typed result, recorded with its cost in the seat log",
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
