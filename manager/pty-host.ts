import { spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { SeatRefusedError } from "./errors.js";
import { processStartTime } from "../runtime/index.js";
import { stopGroup, type SeatExit, type SeatProcess } from "./process-host.js";
import type { SeatTerminal } from "./seat-terminal.js";

/** Bytes of a seat's output the manager keeps (what `attach` replays and the screen check reads). */
const SCROLLBACK_BYTES = 256 * 1024;
/** The detach key of `cotal attach` for pty seats: Ctrl-] (as telnet and docker use). */
export const PTY_DETACH_KEY = 0x1d;

/**
 * The `pty` terminal host: the seat runs on a pseudo-terminal the manager holds itself, through
 * util-linux `script` (no native module): 200×50, output kept in a bounded scrollback, input typed
 * by the manager or relayed from `cotal attach` over a 0600 unix socket in the seat's folder. A
 * pty seat lives as long as its manager (it cannot be adopted after a manager restart; tmux can).
 */
export class PtySeat implements SeatTerminal {
  private scrollback = Buffer.alloc(0);
  private readonly clients = new Set<Socket>();
  private server?: Server;
  readonly process: SeatProcess;

  private constructor(
    private readonly child: ChildProcess,
    readonly socketPath: string,
  ) {
    child.stdout!.on("data", (chunk: Buffer) => {
      this.scrollback = Buffer.concat([this.scrollback, chunk]);
      if (this.scrollback.length > SCROLLBACK_BYTES) this.scrollback = this.scrollback.subarray(this.scrollback.length - SCROLLBACK_BYTES);
      for (const c of this.clients) c.write(chunk);
    });
    child.stderr!.resume();
    const pid = child.pid ?? -1;
    const exited = new Promise<SeatExit>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
    void exited.then(() => this.shutdown());
    this.process = {
      pid,
      startTime: pid > 0 ? processStartTime(pid) : undefined,
      exited,
      stop: async (graceMs = 10_000) => {
        if (child.exitCode !== null || child.signalCode !== null) return exited;
        return stopGroup(pid, exited, graceMs);
      },
    };
  }

  /** Start `script` (an executable: the seat's environment and command) on a new pty in `cwd`. */
  static async start(script: string, cwd: string, socketPath: string): Promise<PtySeat> {
    const quoted = `'${script.replace(/'/g, `'\\''`)}'`;
    const child = spawn("script", ["-qfec", `stty cols 200 rows 50; exec ${quoted}`, "/dev/null"], { cwd, detached: true, stdio: ["pipe", "pipe", "pipe"] });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", reject);
    });
    const seat = new PtySeat(child, socketPath);
    await seat.listen();
    return seat;
  }

  private async listen(): Promise<void> {
    rmSync(this.socketPath, { force: true });
    const server = createServer((sock) => {
      this.clients.add(sock);
      sock.write(this.scrollback);
      sock.on("data", (d: Buffer) => this.child.stdin!.write(d));
      sock.on("close", () => this.clients.delete(sock));
      sock.on("error", () => this.clients.delete(sock));
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      // 0600: only the manager's user may attach (umask for the bind).
      const old = process.umask(0o177);
      try {
        server.listen(this.socketPath, () => resolve());
      } finally {
        process.umask(old);
      }
    });
    this.server = server;
  }

  /** The seat's recent output as text, escape sequences removed (for the screen check). */
  async screen(): Promise<string> {
    return stripAnsi(this.scrollback.subarray(Math.max(0, this.scrollback.length - 16 * 1024)).toString("utf8"));
  }

  /** Type `text`, then Enter (a separate write: a TUI reads a pasted Enter as a newline). */
  async type(text: string, submitDelayMs = 50): Promise<void> {
    this.child.stdin!.write(text);
    await sleep(submitDelayMs);
    await this.submit();
  }

  /** Press Enter. */
  async submit(): Promise<void> {
    this.child.stdin!.write("\r");
  }

  /** Whether someone has the seat's terminal open (`cotal attach`). */
  async attached(): Promise<boolean> {
    return this.clients.size > 0;
  }

  async close(): Promise<void> {
    this.shutdown();
  }

  private shutdown(): void {
    for (const c of this.clients) c.end();
    this.server?.close();
    rmSync(this.socketPath, { force: true });
  }
}

/** Fail early, with a fix, when util-linux `script` (the pty terminal host's pty) is missing. */
export async function checkScript(): Promise<void> {
  const ok = await new Promise<boolean>((resolve) => {
    const c = spawn("script", ["--version"], { stdio: "ignore" });
    c.once("error", () => resolve(false));
    c.once("exit", (code) => resolve(code === 0));
  });
  if (!ok)
    throw new SeatRefusedError(
      "terminal-unavailable",
      "The pty terminal host needs util-linux `script`, which is not installed on the manager's host; nothing was started.",
      "Install util-linux (`apt-get install bsdutils`), or use --terminal tmux.",
    );
}

/* eslint-disable no-control-regex -- terminal control sequences are what this removes */
/** Terminal output without its control sequences: CSI/OSC escapes and other C0 controls but newlines. */
export function stripAnsi(s: string): string {
  return s
    .replace(/\x1b\][^\x07\x1b]*(\x07|\x1b\\)/g, "")
    .replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, " ")
    .replace(/\x1b[@-Z\\-_]/g, "")
    .replace(/[\x00-\x08\x0b-\x1f\x7f]/g, "");
}
/* eslint-enable no-control-regex */
