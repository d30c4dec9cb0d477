import { launchErrorOf } from "../runtime/index.js";

/** An OpenCode launch cannot be built as asked (a relative path, a launch option or rule Cotal does not pass, a JSON schema OpenCode's run cannot hold to…). */
export const opencodeLaunchError = launchErrorOf("opencode");
