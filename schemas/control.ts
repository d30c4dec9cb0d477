import { z } from "zod";
import { PrincipalId } from "./principal.js";

/** Whether a failed call did anything: the caller decides on retry from this. */
export const Outcome = z.enum(["executed", "not-executed", "unknown"]);
export type Outcome = z.infer<typeof Outcome>;

/** A request on the control rail (`cotal.<space>.ep.<endpoint>.<target>.<command>.<o>.<a>`). */
export const ControlRequest = z
  .object({
    id: z.string().min(1).max(128),
    deadline: z.number().int().describe("Unix ms after which the callee must not start the work"),
    caller: PrincipalId.describe("must agree with the subject's caller tokens"),
    args: z.record(z.string(), z.unknown()).default({}),
  })
  .describe("A control call.");
export type ControlRequest = z.infer<typeof ControlRequest>;

export const ControlError = z.object({
  code: z.string().min(1),
  message: z.string(),
  outcome: Outcome,
});
export type ControlError = z.infer<typeof ControlError>;

export const ControlReply = z
  .discriminatedUnion("ok", [
    z.object({ id: z.string(), ok: z.literal(true), data: z.unknown().optional() }),
    z.object({ id: z.string(), ok: z.literal(false), error: ControlError }),
  ])
  .describe("The reply to a control call.");
export type ControlReply = z.infer<typeof ControlReply>;
