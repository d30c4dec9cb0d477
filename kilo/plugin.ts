// Cotal's Kilo Code plugin (runtime/opencode-family/plugin.ts), bundled alone as
// plugin/bin/kilo-plugin.mjs: Kilo loads it from its config as OpenCode does and calls each export.
// Its journals go to Kilo's data folder (`$XDG_DATA_HOME/kilo/cotal`).
import { cotalPluginFor } from "../runtime/index.js";

export const CotalPlugin = cotalPluginFor("kilo");
