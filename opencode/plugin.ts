// Cotal's OpenCode plugin (runtime/opencode-family/plugin.ts), bundled alone as
// plugin/bin/opencode-plugin.mjs: OpenCode loads it from its config and calls each export. Its
// journals go to OpenCode's data folder (`$XDG_DATA_HOME/opencode/cotal`).
import { cotalPluginFor } from "../runtime/index.js";

export const CotalPlugin = cotalPluginFor("opencode");
