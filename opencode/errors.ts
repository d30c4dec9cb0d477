import { CotalError } from "../schemas/index.js";

/** An OpenCode launch cannot be built as asked (a relative path, a launch option or rule Cotal does not pass, a JSON schema OpenCode's run cannot hold to…). */
export class OpencodeLaunchError extends CotalError {
  constructor(message: string, options: { remedy?: string; cause?: unknown } = {}) {
    super("bad-opencode-launch", message, options);
  }
}
