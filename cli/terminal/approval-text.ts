// How people read a permission ask and what became of it: one line each, for `cotal approvals`
// and `cotal console` (peer text made one safe line).
import type { ApprovalEvent, OpenApproval } from "../../broker/index.js";
import { oneLine } from "./output.js";

/** The ask's input in one line: a Bash call's command (and description), else its fields. */
export function inputLine(a: Pick<OpenApproval, "input">, max = 120): string {
  const { command, description, ...rest } = a.input;
  const parts = command !== undefined ? [command, ...(description ? [`(${description})`] : [])] : Object.entries(rest).map(([k, v]) => `${k}=${v}`);
  const line = oneLine(parts.join(" "));
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** An approval event as a console line (after the seat's name), with when it happened. */
export function approvalLine(e: ApprovalEvent): { at: number; text: string } {
  switch (e.kind) {
    case "asked":
      return {
        at: e.ask.askedAt,
        text: `? asks to run ${oneLine(e.ask.tool)}: ${inputLine(e.ask)} — cotal approve ${e.ask.id} | cotal deny ${e.ask.id}`,
      };
    case "answered":
      return { at: e.at, text: `${e.decision === "allow" ? "✓" : "✗"} ${e.id} ${e.decision === "allow" ? "allowed" : "denied"} by ${oneLine(e.by)}` };
    case "expired":
      return { at: e.at, text: `… ${e.id} unanswered: ${e.outcome === "denied" ? "denied" : "its own prompt stands"}` };
  }
}
