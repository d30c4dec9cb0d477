import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { SeatRefusedError } from "./errors.js";
import { processStartTime } from "../runtime/index.js";
import type { SeatExit, SeatProcess } from "./process-host.js";
import type { SeatTerminal } from "./seat-terminal.js";

const run = promisify(execFile);
const POLL_MS = 500;

/**
 * The `tmux` terminal host: each seat is a window of one session per space on the manager's own tmux
 * server (its socket in the manager's state dir, so nothing mixes with the user's tmux). The
 * manager reads the screen, types into it, and `cotal attach` opens it.
 */
export class TmuxServer {
  constructor(
    /** The tmux socket path. */
    readonly socket: string,
    /** The session name (one per space). */
    readonly session: string,
  ) {}

  /** Fail early, with a fix, when tmux is not installed. */
  static async check(): Promise<void> {
    try {
      await run("tmux", ["-V"]);
    } catch {
      throw new SeatRefusedError(
        "terminal-unavailable",
        "tmux is not installed on the manager's host; nothing was started.",
        "Install tmux (`apt-get install tmux`), or spawn with --terminal pty.",
      );
    }
  }

  async tmux(...args: string[]): Promise<string> {
    const { stdout } = await run("tmux", ["-S", this.socket, ...args], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
    return stdout;
  }

  /** `session:window` of a seat. */
  target(name: string): string {
    return `${this.session}:${name}`;
  }

  /** The command a person runs to look at (and type into) a seat. */
  attachCommand(name: string): string[] {
    return ["tmux", "-S", this.socket, "attach-session", "-t", this.target(name)];
  }

  /**
   * Start `script` (an executable file: the seat's environment and command, so no secret is on
   * a command line) in a new window named `name`, 200×50, kept after exit so its last screen can
   * be read.
   */
  async start(name: string, script: string, cwd: string): Promise<SeatProcess> {
    const exists = await this.tmux("has-session", "-t", this.session).then(
      () => true,
      () => false,
    );
    if (!exists) {
      // The session opens on an idle keeper window, and every window is kept after exit from the
      // start: a seat that dies at once still leaves its last screen to read (and name).
      await this.tmux("new-session", "-d", "-s", this.session, "-n", "_keeper", "-x", "200", "-y", "50", "sh -c 'while :; do sleep 3600; done'");
      await this.tmux("set-option", "-g", "-w", "remain-on-exit", "on");
    }
    await this.tmux("new-window", "-d", "-t", `${this.session}:`, "-n", name, "-c", cwd, script);
    const pid = Number((await this.tmux("display-message", "-p", "-t", this.target(name), "#{pane_pid}")).trim());
    const startTime = processStartTime(pid);
    return this.watch(name, pid, startTime);
  }

  /** The pid of the seat `name`'s window on this tmux server; undefined when the server has no such window. */
  async panePid(name: string): Promise<number | undefined> {
    const out = await this.tmux("display-message", "-p", "-t", this.target(name), "#{pane_pid}").catch(() => "");
    const pid = Number(out.trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  }

  /** Adopt a window a previous manager started, if its process (pid and start time) still runs. */
  adopt(name: string, pid: number, startTime: string): SeatProcess | undefined {
    if (processStartTime(pid) !== startTime) return undefined;
    return this.watch(name, pid, startTime);
  }

  private watch(name: string, pid: number, startTime: string | undefined): SeatProcess {
    const exited = new Promise<SeatExit>((resolve) => {
      const t = setInterval(() => {
        if (processStartTime(pid) === startTime && startTime !== undefined) return;
        clearInterval(t);
        void this.tmux("display-message", "-p", "-t", this.target(name), "#{pane_dead_status}").then(
          (s) => resolve({ code: s.trim() === "" ? null : Number(s.trim()), signal: null }),
          () => resolve({ code: null, signal: null }),
        );
      }, POLL_MS);
      t.unref();
    });
    return {
      pid,
      startTime,
      exited,
      stop: async (graceMs = 10_000) => {
        try {
          process.kill(pid, "SIGTERM");
        } catch {
          /* gone */
        }
        const killer = setTimeout(() => {
          try {
            process.kill(pid, "SIGKILL");
          } catch {
            /* gone */
          }
        }, graceMs);
        try {
          return await exited;
        } finally {
          clearTimeout(killer);
          await this.close(name);
        }
      },
    };
  }

  /** The visible screen of a seat (plus `history` lines of scrollback). */
  async screen(name: string, history = 0): Promise<string> {
    return this.tmux("capture-pane", "-p", "-J", ...(history ? ["-S", `-${history}`] : []), "-t", this.target(name)).catch(() => "");
  }

  /** Type `text` literally, then Enter. */
  async type(name: string, text: string, submitDelayMs = 0): Promise<void> {
    await this.tmux("send-keys", "-t", this.target(name), "-l", text);
    if (submitDelayMs > 0) await sleep(submitDelayMs);
    await this.submit(name);
  }

  /** Press Enter in a seat's window. */
  async submit(name: string): Promise<void> {
    await this.tmux("send-keys", "-t", this.target(name), "Enter");
  }

  /** Whether a person has the seat's session open (then the manager types nothing into it). */
  async attached(): Promise<boolean> {
    const out = await this.tmux("display-message", "-p", "-t", this.session, "#{session_attached}").catch(() => "0");
    return Number(out.trim()) > 0;
  }

  /** Remove a seat's window (after its process is gone). */
  async close(name: string): Promise<void> {
    await this.tmux("kill-window", "-t", this.target(name)).catch(() => undefined);
  }

  /** Stop the manager's tmux server once no seat window is left in it (only the keeper). */
  async closeIfIdle(): Promise<void> {
    const names = await this.tmux("list-windows", "-t", this.session, "-F", "#{window_name}").then(
      (o) => o.split("\n").filter(Boolean),
      () => [],
    );
    if (names.every((n) => n === "_keeper")) await this.tmux("kill-server").catch(() => undefined);
  }

  /** The seat `name`'s window as a SeatTerminal. */
  terminal(name: string): SeatTerminal {
    return {
      screen: (history = 0) => this.screen(name, history),
      type: (text, submitDelayMs) => this.type(name, text, submitDelayMs),
      submit: () => this.submit(name),
      attached: () => this.attached(),
      close: () => this.close(name),
    };
  }
}

/** Write a seat's start script: its environment and command, 0700, read by nobody else. */
export function writeStartScript(file: string, env: Record<string, string>, command: string, args: string[]): void {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const lines = [
    "#!/bin/sh",
    "# Written by the Cotal manager: the seat's environment and command (never on a command line).",
    "unset $(env | sed -n 's/^\\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p')",
  ];
  for (const [k, v] of Object.entries(env)) if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) lines.push(`export ${k}=${q(v)}`);
  lines.push(`exec ${[command, ...args].map(q).join(" ")}`);
  writeFileSync(file, `${lines.join("\n")}\n`, { mode: 0o700 });
}
