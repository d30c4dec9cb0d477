// What the connector needs to know of the agent CLI that started it, by the runtime its launch
// names (docs/runtimes.md): what its card's `connector` meta says, and how a line of that CLI's
// session file reads as the transcript records the event plane maps (Claude's shape). A runtime
// whose session file is not in that shape registers its reader here, from its adapter folder.
import { codexTranscriptRecords } from "../codex/index.js";
import { copilotTranscriptRecords } from "../copilot/index.js";
import { geminiTranscriptRecords } from "../gemini/index.js";

/** One parsed session-file line → the transcript records (Claude's shape) it stands for. */
export type TranscriptReader = (line: unknown) => unknown[];

export interface SeatRuntime {
  /** The card's reserved `connector` meta (SPEC §7): the agent CLI, as the reference systems name it. */
  connectorMeta: string;
  /** How its session file reads for the event plane. */
  transcript: TranscriptReader;
  /** Its PermissionRequest hook takes a decision back: asks go to the mesh (docs/runtimes.md). */
  approvals: boolean;
}

/** Claude's transcript is the plane's own shape: each line is one record. */
const asIs: TranscriptReader = (line) => [line];

const CLAUDE: SeatRuntime = { connectorMeta: "claude-code", transcript: asIs, approvals: true };

const SEAT_RUNTIMES: Readonly<Record<string, SeatRuntime>> = {
  claude: CLAUDE,
  // Codex fires PermissionRequest with Claude's payload, but its answer is not taken as a decision here: its own dialog stands.
  codex: { connectorMeta: "codex", transcript: codexTranscriptRecords, approvals: false },
  gemini: { connectorMeta: "gemini-cli", transcript: geminiTranscriptRecords, approvals: false },
  copilot: { connectorMeta: "copilot-cli", transcript: copilotTranscriptRecords, approvals: false },
};

/**
 * The seat runtime a launch names. A launch that names none is a Claude session (a hand-started
 * connector from a plugin that predates COTAL_RUNTIME), as the connector always assumed; a name
 * with no entry here reads its session file as Claude's and says its own name.
 */
export function seatRuntimeOf(runtime: string | undefined): SeatRuntime {
  if (runtime === undefined) return CLAUDE;
  return SEAT_RUNTIMES[runtime] ?? { connectorMeta: runtime, transcript: asIs, approvals: false };
}
