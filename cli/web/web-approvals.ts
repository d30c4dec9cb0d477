import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { answerApproval, openApprovals } from "../../broker/index.js";
import { ApprovalDecision, ApprovalId, MAX_APPROVAL_REASON, principalId, PrincipalId, type Principal } from "../../schemas/index.js";
import { writeRoute, type ReadRoute, type WriteRoute } from "../../web/index.js";
import { inputLine } from "../terminal/approval-text.js";
import { ApprovalRefusedError, CommandFailedError } from "../terminal/errors.js";

/** POST /api/approve: one open ask, as the Approvals view lists it, and the decision. */
export const ApproveBody = z.strictObject({
  seat: PrincipalId,
  id: ApprovalId,
  decision: ApprovalDecision,
  reason: z.string().min(1).max(MAX_APPROVAL_REASON).optional(),
});

/** The Approvals view's data: the open asks, read as the person (as `cotal approvals` lists them). */
export function approvalReads(nc: NatsConnection, space: string, me: Principal): Record<string, ReadRoute> {
  return {
    "/api/approvals": async () => ({
      asks: (await openApprovals(nc, space, { me })).map((a) => ({
        id: a.id,
        seat: a.seat,
        tool: a.tool,
        args: inputLine(a, 400),
        at: a.askedAt,
        expiresAt: a.expiresAt,
        onExpiry: a.onExpiry,
      })),
    }),
  };
}

/**
 * Answer an ask as the person (`cotal approve`/`deny`): the seat checks the approve right and
 * replies; a refusal (`not-allowed`, …) comes back as the CLI words it.
 */
export function approvalRoutes(nc: NatsConnection, space: string, me: Principal): Record<string, WriteRoute> {
  return {
    "/api/approve": writeRoute(ApproveBody, async (b) => {
      const ask = (await openApprovals(nc, space, { me })).find((a) => a.id === b.id && a.seat === b.seat);
      if (!ask)
        throw new CommandFailedError(`No open permission ask of ${b.seat} has the id ${b.id}: it was answered, it expired, or it was never asked.`, {
          remedy: "The Approvals view lists the open asks.",
        });
      const reply = await answerApproval(nc, space, me, ask, b.decision, b.reason);
      if (!reply.ok) throw new ApprovalRefusedError(reply.code, reply.message, principalId(me), ask.seat);
      return {
        id: ask.id,
        seat: ask.seat,
        decision: b.decision,
        text: `${b.decision === "allow" ? "allowed" : "denied"} ${ask.id}: ${ask.seat} ${ask.tool} ${inputLine(ask)}`,
      };
    }),
  };
}
