import { CotalError } from "../schemas/index.js";

/** A Kilo Code launch cannot be built as asked (a relative path, a launch option or rule Cotal does not pass, a JSON schema `kilo run` cannot hold to…). */
export class KiloLaunchError extends CotalError {
  constructor(message: string, options: { remedy?: string; cause?: unknown } = {}) {
    super("bad-kilo-launch", message, options);
  }
}
