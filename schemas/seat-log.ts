import { z } from "zod";
import { PrincipalId } from "./principal.js";
import { CostBasis, ModelSource, RunErrorKind, RunStatus, RunUsage } from "./runs.js";
import { LifecycleUid } from "./tokens.js";

const base = {
  seat: PrincipalId,
  uid: LifecycleUid.describe("the seat incarnation"),
  epoch: z.number().int().nonnegative().describe("process epoch: restarts of the process animating the seat"),
  ts: z.number().int().describe("Unix ms"),
  manager: z.string().optional().describe("the manager instance that wrote it"),
};

/** The runtimes a manager can animate a seat with (docs/manager.md). */
export const SeatRuntime = z.enum(["process", "tmux", "pty"]);
export type SeatRuntime = z.infer<typeof SeatRuntime>;

/** The agents a manager can launch. */
export const SeatAgent = z.enum(["echo", "claude"]);
export type SeatAgent = z.infer<typeof SeatAgent>;

/** The manager's event-sourced seat history (SEATS_<space>, subject `…seat.<o>.<a>`). */
export const SeatEvent = z
  .discriminatedUnion("type", [
    z.object({
      type: z.literal("requested"),
      ...base,
      agent: SeatAgent.default("claude"),
      persona: z.string().optional(),
      role: z.string().optional(),
      by: PrincipalId.optional(),
      requestId: z.string().optional().describe("the spawn request's id: the same id returns the first result"),
      runtime: SeatRuntime.optional(),
      cwd: z.string().optional().describe("the seat's working directory on the manager's host"),
      model: z.string().optional(),
      channels: z.array(z.string()).optional(),
      restarts: z.number().int().nonnegative().optional().describe("its restart policy: restarts allowed within windowMs"),
      windowMs: z.number().int().positive().optional(),
      carried: z
        .object({ session: z.string(), digest: z.string() })
        .optional()
        .describe("claude seats: the carried session it forks (`--resume <session> --fork-session`) and the sha256 of the transcript the fork reads"),
    }),
    z.object({
      type: z.literal("launched"),
      ...base,
      pid: z.number().int().optional(),
      startTime: z.string().optional(),
      runtime: z.string(),
      permissionMode: z.string().optional().describe("the Claude permission mode it runs in (dontAsk unless its agent file asked otherwise)"),
    }),
    z.object({ type: z.literal("joined"), ...base }),
    z.object({ type: z.literal("exited"), ...base, code: z.number().int().nullable(), signal: z.string().nullable(), output: z.string().optional() }),
    z.object({ type: z.literal("restarted"), ...base, reason: z.string() }),
    z.object({ type: z.literal("fenced"), ...base, reason: z.string() }),
    z.object({ type: z.literal("retired"), ...base, reason: z.string() }),
    // A one-shot run (docs/runs.md) on its own subject `…seat.cotal_run.<runId>`: its cost is what budgets add up.
    z.object({
      type: z.literal("run"),
      ...base,
      status: RunStatus,
      costUsd: z.number().nonnegative().describe("the Claude CLI's client-side estimate, or the median of recent runs when it reported none (costBasis)"),
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
  ])
  .describe("One event of a seat's history.");
export type SeatEvent = z.infer<typeof SeatEvent>;
export type SeatEventInput = z.input<typeof SeatEvent>;
