// A terminal for the built CLI: a detached tmux session on a private tmux server, read as a person
// would see it (capture-pane). Shared by the tests of `cotal console`'s terminal UI.
import { execFileSync } from "node:child_process";
import { cotalBundle } from "./cli.js";
import { until } from "../../testbed/until.js";

/** `cotal console`'s terminal UI (or any cotal command) in a detached tmux session on a private tmux server. */
export class TmuxConsole {
  constructor(private readonly socket: string) {}
  /** `cotal <args>` in `dir` (also its HOME), on a 200×40 terminal. */
  static start(socket: string, dir: string, args: string[]): TmuxConsole {
    const env = ["env", "-i", `PATH=${process.env.PATH}`, "TERM=xterm-256color", "LANG=C.UTF-8", `HOME=${dir}`];
    const t = new TmuxConsole(socket);
    t.tmux(
      "new-session",
      "-d",
      "-s",
      "console",
      "-x",
      "200",
      "-y",
      "40",
      "-c",
      dir,
      [...env, process.execPath, cotalBundle, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" "),
    );
    return t;
  }
  tmux(...args: string[]): string {
    return execFileSync("tmux", ["-S", this.socket, ...args], { encoding: "utf8" });
  }
  screen(): string {
    try {
      return this.tmux("capture-pane", "-p", "-t", "console");
    } catch {
      return "";
    }
  }
  async waitFor(re: RegExp, what: string): Promise<string> {
    let last = "";
    await until(() => re.test((last = this.screen())), 15_000, `${what}\n--- screen ---\n${last}`);
    return last;
  }
  alive(): boolean {
    try {
      this.tmux("has-session", "-t", "console");
      return true;
    } catch {
      return false;
    }
  }
  kill(): void {
    try {
      this.tmux("kill-server");
    } catch {
      // gone
    }
  }
}
