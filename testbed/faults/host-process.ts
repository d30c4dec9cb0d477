// A long-running process on one host of the lab (a nats-server, the manager): started inside the
// host's namespace, its output kept in a file, and the process-level faults: pause (SIGSTOP),
// resume (SIGCONT), kill -9, restart with the same command.
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import type { Lab } from "./hosts.js";

export interface HostProcessSpec {
  /** What it is, for reports (`n1 nats-server`, `leaf1 manager`). */
  label: string;
  host: string;
  argv: readonly string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Where stdout and stderr go (appended across restarts). */
  logFile: string;
  /**
   * Start it again this long after it exits on its own (a crash, a kill -9), as systemd's
   * `Restart=always` does for the shipped units (deploy/systemd); default never.
   */
  restartMs?: number;
}

export class HostProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private log: WriteStream;
  private paused = false;
  /** Set while this object stops it: an exit then is not a crash to restart from. */
  private stopping = false;
  private restartTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly lab: Lab,
    readonly spec: HostProcessSpec,
  ) {
    this.log = createWriteStream(spec.logFile, { flags: "a" });
  }

  get label(): string {
    return this.spec.label;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Start it (`ip netns exec` execs the command, so the pid is the command's own). */
  start(): void {
    if (this.running) return;
    const [cmd, ...args] = [...this.lab.execPrefix(this.spec.host), ...this.spec.argv];
    const child = spawn(cmd!, args, { env: this.spec.env ?? process.env, cwd: this.spec.cwd, stdio: ["ignore", "pipe", "pipe"] });
    this.log.write(`--- ${new Date().toISOString()} start ${this.spec.label} ---\n`);
    child.stdout!.pipe(this.log, { end: false });
    child.stderr!.pipe(this.log, { end: false });
    this.exited = new Promise((resolve) => child.once("exit", () => resolve()));
    child.once("exit", () => {
      if (this.stopping || this.spec.restartMs === undefined) return;
      this.restartTimer = setTimeout(() => this.start(), this.spec.restartMs);
    });
    this.child = child;
    this.paused = false;
    this.stopping = false;
  }

  pause(): void {
    if (!this.running || this.paused) return;
    this.child!.kill("SIGSTOP");
    this.paused = true;
  }

  resume(): void {
    if (!this.running || !this.paused) return;
    this.child!.kill("SIGCONT");
    this.paused = false;
  }

  /** kill -9, and wait until it is gone. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.child!.kill("SIGKILL");
    await this.exited;
  }

  /** SIGTERM (after a SIGCONT, should it be paused), SIGKILL after `graceMs`; not restarted. */
  async stop(graceMs = 5_000): Promise<void> {
    clearTimeout(this.restartTimer);
    this.stopping = true;
    if (!this.running) return;
    this.resume();
    this.child!.kill("SIGTERM");
    const timer = setTimeout(() => this.child?.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  async restart(): Promise<void> {
    await this.kill();
    this.start();
  }

  /** Stop it and close its log. */
  async close(): Promise<void> {
    await this.stop();
    await new Promise<void>((resolve) => this.log.end(resolve));
  }
}
