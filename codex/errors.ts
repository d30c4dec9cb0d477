import { CotalError } from "../schemas/index.js";

/** A Codex launch cannot be built as asked (a relative path, a launch option Cotal does not pass, a persona file that cannot be written…). */
export class CodexLaunchError extends CotalError {
  constructor(message: string, options: { remedy?: string; cause?: unknown } = {}) {
    super("bad-codex-launch", message, options);
  }
}
