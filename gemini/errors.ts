import { launchErrorOf } from "../runtime/index.js";

/** A Gemini CLI launch cannot be built as asked (a relative path, a launch option or rule Cotal does not pass, a JSON schema or carry Gemini's CLI cannot take…). */
export const geminiLaunchError = launchErrorOf("gemini");
