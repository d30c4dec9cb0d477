import { launchErrorOf } from "../runtime/index.js";

/** A pi launch cannot be built as asked (a relative path, a launch option or allow rule Cotal does not pass, a JSON schema or carry pi cannot take…). */
export const piLaunchError = launchErrorOf("pi");
