import { launchErrorOf } from "../runtime/index.js";

/** A Codex launch cannot be built as asked (a relative path, a launch option Cotal does not pass, a persona file that cannot be written…). */
export const codexLaunchError = launchErrorOf("codex");
