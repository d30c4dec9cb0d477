// The OpenCode adapter behind the runtime seam (runtime/adapter.ts, docs/runtimes.md): its
// identity; the rest, capabilities included, is the OpenCode family's (runtime/opencode-family/).
import { opencodeFamilyRuntime, RESTART_MANAGER, type RuntimeAdapter } from "../runtime/index.js";
import { OPENCODE } from "./family.js";

export const opencodeRuntime = {
  name: "opencode",
  label: "OpenCode",
  command: "opencode",
  binEnv: "COTAL_OPENCODE_BIN",
  installHint: `Install opencode-ai where the manager runs (or set COTAL_OPENCODE_BIN), ${RESTART_MANAGER}.`,
  // OpenCode's session store is not a file Node reads: its plugin writes the records itself (runtime/opencode-family/journal.ts).
  connector: { meta: "opencode" },
  ...opencodeFamilyRuntime(OPENCODE),
} as const satisfies RuntimeAdapter;
