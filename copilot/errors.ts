import { launchErrorOf } from "../runtime/index.js";

/** A GitHub Copilot CLI launch cannot be built as asked (a relative path, a launch option or allow rule Cotal does not pass, a JSON schema or carry it cannot take…). */
export const copilotLaunchError = launchErrorOf("copilot");
