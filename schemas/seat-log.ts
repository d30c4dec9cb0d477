import { z } from "zod";
import { PrincipalId } from "./principal.js";
import { LifecycleUid } from "./tokens.js";

const base = {
  seat: PrincipalId,
  uid: LifecycleUid.describe("the seat incarnation"),
  epoch: z.number().int().nonnegative().describe("process epoch: restarts of the process animating the seat"),
  ts: z.number().int().describe("Unix ms"),
  manager: z.string().optional().describe("the manager instance that wrote it"),
};

/** The manager's event-sourced seat history (SEATS_<space>, subject `…seat.<o>.<a>`). */
export const SeatEvent = z
  .discriminatedUnion("type", [
    z.object({ type: z.literal("requested"), ...base, persona: z.string().optional(), by: PrincipalId.optional() }),
    z.object({ type: z.literal("launched"), ...base, pid: z.number().int().optional(), runtime: z.string() }),
    z.object({ type: z.literal("joined"), ...base }),
    z.object({ type: z.literal("exited"), ...base, code: z.number().int().nullable(), signal: z.string().nullable(), output: z.string().optional() }),
    z.object({ type: z.literal("fenced"), ...base, reason: z.string() }),
    z.object({ type: z.literal("retired"), ...base, reason: z.string() }),
  ])
  .describe("One event of a seat's history.");
export type SeatEvent = z.infer<typeof SeatEvent>;
