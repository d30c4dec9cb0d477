// The Kilo Code adapter behind the runtime seam (runtime/adapter.ts, docs/runtimes.md): its
// identity; the rest, capabilities included, is the OpenCode family's (runtime/opencode-family/),
// which Kilo Code, an OpenCode fork, belongs to.
import { opencodeFamilyRuntime, RESTART_MANAGER, type RuntimeAdapter } from "../runtime/index.js";
import { KILO } from "./family.js";

export const kiloRuntime = {
  name: "kilo",
  label: "Kilo Code",
  command: "kilo",
  binEnv: "COTAL_KILO_BIN",
  installHint: `Install @kilocode/cli where the manager runs (or set COTAL_KILO_BIN), ${RESTART_MANAGER}.`,
  // Kilo's session store is not a file Node reads: its plugin writes the records itself (runtime/opencode-family/journal.ts).
  connector: { meta: "kilo" },
  ...opencodeFamilyRuntime(KILO),
} as const satisfies RuntimeAdapter;
