import { launchErrorOf } from "../schemas/index.js";

/** A Kilo Code launch cannot be built as asked (a relative path, a launch option or rule Cotal does not pass, a JSON schema `kilo run` cannot hold to…). */
export const kiloLaunchError = launchErrorOf("kilo");
