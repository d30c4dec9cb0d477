// What the connector needs to know of the agent CLI that started it, by the runtime its launch
// names (docs/runtimes.md): what its card's `connector` meta says, and how a line of that CLI's
// session file reads as the transcript records the event plane maps (Claude's shape). A runtime
// whose session file is not in that shape registers its reader here, from its adapter folder.
import { codexTranscriptRecords } from "../codex/index.js";
import { copilotTranscriptRecords } from "../copilot/index.js";
import { geminiTranscriptRecords } from "../gemini/index.js";
import type { PermissionDecision } from "./model-text.js";

/** One parsed session-file line → the transcript records (Claude's shape) it stands for. */
export type TranscriptReader = (line: unknown) => unknown[];

export interface SeatRuntime {
  /** The card's reserved `connector` meta (SPEC §7): the agent CLI, as the reference systems name it. */
  connectorMeta: string;
  /** How its session file reads for the event plane. */
  transcript: TranscriptReader;
  /** Whose permission asks go to the mesh (docs/runtimes.md), and the hook reply that hands a decision back; none: its own dialog stands. */
  approvals?: SeatApprovals | undefined;
}

export interface SeatApprovals {
  /**
   * Whose asks: every session's (the CLI shows its dialog beside the hook, so the person at the
   * terminal may answer first: Claude), or managed seats' only (the dialog waits for the hook, so a
   * hand-started session's person would wait out the bound first: Codex).
   */
  sessions: "all" | "managed";
  /** The PermissionRequest hook's reply carrying a decision, in the CLI's shape. */
  reply: (decision: PermissionDecision) => Record<string, unknown>;
}

/**
 * Claude Code's PermissionRequest decision, which Codex (0.171.0, its PermissionRequestDecisionWire)
 * reads the same: `behavior` allow or deny, with `message` for the model on a deny.
 */
const claudeShapedReply = (decision: PermissionDecision): Record<string, unknown> => ({ hookSpecificOutput: { hookEventName: "PermissionRequest", decision } });

/** Claude's transcript is the plane's own shape: each line is one record. */
const asIs: TranscriptReader = (line) => [line];

const CLAUDE: SeatRuntime = { connectorMeta: "claude-code", transcript: asIs, approvals: { sessions: "all", reply: claudeShapedReply } };

const SEAT_RUNTIMES: Readonly<Record<string, SeatRuntime>> = {
  claude: CLAUDE,
  // Codex fires PermissionRequest with Claude's payload before its dialog, and takes Claude's decision shape back.
  codex: { connectorMeta: "codex", transcript: codexTranscriptRecords, approvals: { sessions: "managed", reply: claudeShapedReply } },
  gemini: { connectorMeta: "gemini-cli", transcript: geminiTranscriptRecords },
  copilot: { connectorMeta: "copilot-cli", transcript: copilotTranscriptRecords },
};

/**
 * The seat runtime a launch names. A launch that names none is a Claude session (a hand-started
 * connector from a plugin that predates COTAL_RUNTIME), as the connector always assumed; a name
 * with no entry here reads its session file as Claude's and says its own name.
 */
export function seatRuntimeOf(runtime: string | undefined): SeatRuntime {
  if (runtime === undefined) return CLAUDE;
  return SEAT_RUNTIMES[runtime] ?? { connectorMeta: runtime, transcript: asIs };
}
