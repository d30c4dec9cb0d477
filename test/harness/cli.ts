// Run the BUILT `cotal` bundle (dist/cotal.mjs) as a user would: a child process with its own
// working directory and environment, stdout/stderr captured, exit code returned.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { BUNDLES, ensureBuilt } from "./build.js";
import { until } from "../../testbed/until.js";

export { projectRoot } from "./build.js";
/** The bundle `npm run build` writes. */
export const cotalBundle = BUNDLES.cli;

/** Build the bundles unless they are newer than every source (see build.ts). */
export async function buildCli(): Promise<void> {
  ensureBuilt();
}

/** An environment without the user's COTAL_* settings, so only what a test passes applies. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("COTAL_")) env[k] = v;
  return { ...env, ...extra };
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as one JSON document (throws with the output when it is not JSON). */
  json<T = unknown>(): T;
}

export interface CliOptions {
  cwd: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /** Written to the command's standard input, which is then closed (default: no stdin). */
  input?: string | Buffer;
}

/** Run `cotal <args>` to completion. */
export function runCotal(args: string[], opts: CliOptions): Promise<CliResult> {
  return run(process.execPath, [cotalBundle, ...args], { cwd: opts.cwd, env: opts.env ?? cleanEnv(), timeoutMs: opts.timeoutMs ?? 30_000, input: opts.input });
}

function run(
  cmd: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number; input?: string | Buffer | undefined },
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: [opts.input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    if (opts.input !== undefined) child.stdin!.end(opts.input);
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`\`${args.join(" ")}\` did not finish within ${opts.timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs);
    child.once("error", reject);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        stdout,
        stderr,
        json<T>() {
          try {
            return JSON.parse(stdout) as T;
          } catch {
            throw new Error(`\`cotal ${args.join(" ")}\` did not print JSON (exit ${code}).\nstdout: ${stdout}\nstderr: ${stderr}`);
          }
        },
      });
    });
  });
}

/** A long-running `cotal` child (listen, foreground up) whose stdout is read line by line. */
export class CotalProcess {
  readonly lines: string[] = [];
  stderr = "";
  private partial = "";
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      const parts = (this.partial + chunk).split("\n");
      this.partial = parts.pop() ?? "";
      this.lines.push(...parts);
    });
    child.stderr!.setEncoding("utf8").on("data", (c: string) => (this.stderr += c));
    this.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  }

  static spawn(args: string[], opts: CliOptions): CotalProcess {
    const child = spawn(process.execPath, [cotalBundle, ...args], { cwd: opts.cwd, env: opts.env ?? cleanEnv(), stdio: ["ignore", "pipe", "pipe"] });
    return new CotalProcess(child);
  }

  /** stdout lines parsed as JSON (lines that are not JSON are skipped). */
  jsonLines<T = Record<string, unknown>>(): T[] {
    return this.lines.flatMap((l) => {
      try {
        return [JSON.parse(l) as T];
      } catch {
        return [];
      }
    });
  }

  /** Wait until a stdout JSON line satisfies `pred`; returns it. */
  async waitForJson<T = Record<string, unknown>>(pred: (v: T) => boolean, timeoutMs: number, what: string): Promise<T> {
    let found: T | undefined;
    await until(
      () => {
        found = this.jsonLines<T>().find(pred);
        return found !== undefined || this.child.exitCode !== null;
      },
      timeoutMs,
      `${what}\nstdout so far:\n${this.lines.join("\n")}\nstderr:\n${this.stderr}`,
    );
    if (found === undefined) throw new Error(`cotal exited (${this.child.exitCode}) before ${what}\nstderr:\n${this.stderr}`);
    return found;
  }

  /** Send a signal and wait for the process to exit. */
  async stop(signal: NodeJS.Signals = "SIGINT", timeoutMs = 10_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.child.kill("SIGKILL");
        reject(new Error(`cotal did not exit within ${timeoutMs} ms of ${signal}\nstderr:\n${this.stderr}`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

export { freePort, freePortRun } from "../../testbed/ports.js";

export { pidAlive } from "../../testbed/pid-alive.js";

/**
 * A fresh project folder a test file drives the built CLI in: the CLI is built before the file's
 * tests, and after them whatever mesh it started is brought down and the folder removed.
 */
export function cliFolder(prefix: string, timeoutMs = 90_000): { dir: string; cotal: (...args: string[]) => Promise<CliResult> } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const env = cleanEnv();
  const cotal = (...args: string[]) => runCotal(args, { cwd: dir, env, timeoutMs });
  beforeAll(async () => {
    await buildCli();
  }, 120_000);
  afterAll(async () => {
    await cotal("down").catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, cotal };
}

/** Expect the CLI call to have exited 0 (its output in the failure), and hand it back. */
export function exitedOk(r: CliResult): CliResult {
  expect(r.code, `exit code; stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}
