/**
 * Runs the real `claude` CLI (from node_modules/.bin) offline against a model double: an
 * isolated HOME and working directory per run, a minimal environment (no host Claude Code
 * markers, telemetry and updates off), `-p` mode by default, a timeout that kills the whole
 * process group.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { claudeEnv } from "../../testbed/claude-env.js";

// The environment builder is shared with the benches (bench/claude-wake.ts), so it lives in testbed/.
export { claudeEnv, DUMMY_API_KEY, OFFLINE_ENV } from "../../testbed/claude-env.js";

/** Root of the Cotal project (the folder holding package.json). */
export const projectRoot = fileURLToPath(new URL("../../", import.meta.url));

/** Absolute path of the real CLI: `node_modules/.bin/claude` under the project root. */
export function claudeBin(): string {
  const bin = path.join(projectRoot, "node_modules", ".bin", "claude");
  if (!existsSync(bin)) throw new Error(`claude CLI not found at ${bin}: run npm install`);
  return bin;
}

export interface ClaudeRunOptions {
  /** Model double URL, set as `ANTHROPIC_BASE_URL`. */
  baseUrl: string;
  /** Prompt, written to stdin (then closed), so variadic flags such as `--allowedTools` cannot swallow it. */
  prompt?: string;
  /** Arguments after the defaults (`-p --output-format <fmt>` in print mode). */
  args?: string[];
  /** `-p` mode (default true). With false no default arguments are added. */
  print?: boolean;
  /** `--output-format` in print mode (default `json`; `null` leaves it out). */
  outputFormat?: "json" | "text" | "stream-json" | null;
  /** HOME for the run; default a fresh `home/` inside the run's temp dir. */
  home?: string;
  /** Working directory; default a fresh `work/` inside the run's temp dir. */
  cwd?: string;
  /** Extra environment, applied last (so it may override the defaults). */
  env?: Record<string, string>;
  /** Kill the process group after this long (default 60 s). */
  timeoutMs?: number;
}

export interface ClaudeRunResult {
  /** Exit code, or null when killed by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Parsed stdout with `--output-format json`; undefined if it was not JSON. */
  json?: ClaudeJsonResult;
  /** True if the run hit `timeoutMs` and was killed. */
  timedOut: boolean;
  durationMs: number;
  home: string;
  cwd: string;
  /** The run's temp dir (holds the default `home/` and `work/`); see {@link cleanupRun}. */
  root: string;
  /** The CLI's pid, which was also its process group id. */
  pid: number | undefined;
}

/** The `-p --output-format json` result object (fields we read; others pass through). */
export interface ClaudeJsonResult {
  type: string;
  subtype: string;
  is_error: boolean;
  result?: string;
  session_id: string;
  num_turns: number;
  total_cost_usd?: number;
  permission_denials?: unknown[];
  terminal_reason?: string;
  [k: string]: unknown;
}

/** A started CLI that was not awaited. */
export interface ClaudeProcess {
  child: ChildProcess;
  home: string;
  cwd: string;
  root: string;
  /** Settles when the process exits (or is killed on timeout); never rejects. */
  done: Promise<ClaudeRunResult>;
  /** Kill the CLI's whole process group (claude, its MCP servers and hooks). */
  kill(signal?: NodeJS.Signals): void;
}

/** Start the CLI without waiting for it. */
export async function spawnClaude(opts: ClaudeRunOptions): Promise<ClaudeProcess> {
  const root = await mkdtemp(path.join(os.tmpdir(), "cotal-claude-"));
  const home = opts.home ?? path.join(root, "home");
  const cwd = opts.cwd ?? path.join(root, "work");
  await mkdir(home, { recursive: true });
  await mkdir(cwd, { recursive: true });

  const print = opts.print ?? true;
  const format = opts.outputFormat === undefined ? "json" : opts.outputFormat;
  const args = print ? ["-p", ...(format ? ["--output-format", format] : [])] : [];
  if (print && format === "stream-json") args.push("--verbose");
  args.push(...(opts.args ?? []));

  const started = Date.now();
  // Own process group, so a kill reaches the MCP servers and hooks the CLI started.
  const child = spawn(claudeBin(), args, {
    cwd,
    env: claudeEnv({ baseUrl: opts.baseUrl, home, env: opts.env }),
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (s: string) => (stdout += s));
  child.stderr?.setEncoding("utf8").on("data", (s: string) => (stderr += s));
  child.stdin?.on("error", () => {}); // the CLI may exit before reading stdin
  if (opts.prompt !== undefined) child.stdin?.end(opts.prompt);

  const kill = (signal: NodeJS.Signals = "SIGTERM"): void => {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      child.kill(signal);
    }
  };

  let timedOut = false;
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const timer = setTimeout(() => {
    timedOut = true;
    kill("SIGTERM");
    setTimeout(() => kill("SIGKILL"), 2_000).unref();
  }, timeoutMs);

  const done = new Promise<ClaudeRunResult>((resolve) => {
    const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
      clearTimeout(timer);
      // The CLI is gone; make sure nothing it started outlives it.
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // group already empty
        }
      }
      const result: ClaudeRunResult = { code, signal, stdout, stderr, timedOut, durationMs: Date.now() - started, home, cwd, root, pid: child.pid };
      if (print && format === "json") {
        try {
          result.json = JSON.parse(stdout) as ClaudeJsonResult;
        } catch {
          // not JSON: leave json undefined, the caller sees stdout/stderr
        }
      }
      resolve(result);
    };
    child.once("error", (err) => {
      stderr += `\n[spawn error] ${String(err)}`;
      finish(null, null);
    });
    child.once("close", finish);
  });

  return { child, home, cwd, root, done, kill };
}

/** Run the CLI to completion (or timeout). */
export async function runClaude(opts: ClaudeRunOptions): Promise<ClaudeRunResult> {
  const proc = await spawnClaude(opts);
  return proc.done;
}

// ---- Config files ------------------------------------------------------------------------

/** A command hook entry for a settings file. */
export interface CommandHook {
  type: "command";
  command: string;
  timeout?: number;
}

/** Settings `hooks` section: event name → matcher groups. */
export type HooksConfig = Record<string, Array<{ matcher?: string; hooks: Array<CommandHook | Record<string, unknown>> }>>;

/** Write a `--settings` JSON file into `dir`; returns its path. */
export async function writeSettingsFile(dir: string, settings: { hooks?: HooksConfig; [k: string]: unknown }, name = "settings.json"): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, name);
  await writeFile(file, JSON.stringify(settings, null, 2));
  return file;
}

/** One MCP server entry of an `--mcp-config` file. */
export type McpServerConfig =
  { type?: "stdio"; command: string; args?: string[]; env?: Record<string, string> } | { type: "http" | "sse"; url: string; headers?: Record<string, string> };

/** Write an `--mcp-config` JSON file (`{ mcpServers }`) into `dir`; returns its path. */
export async function writeMcpConfig(dir: string, servers: Record<string, McpServerConfig>, name = "mcp.json"): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, name);
  await writeFile(file, JSON.stringify({ mcpServers: servers }, null, 2));
  return file;
}

/** A shell command running `script` with the current node binary, arguments quoted. */
export function nodeCommand(script: string, ...args: string[]): string {
  return [process.execPath, script, ...args].map(shellQuote).join(" ");
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Where the CLI writes the transcripts of sessions run in `cwd`. */
export function transcriptDir(home: string, cwd: string): string {
  return path.join(home, ".claude", "projects", cwd.replace(/[^a-zA-Z0-9]/g, "-"));
}

/** Remove a run's temp dir (the default HOME and cwd; ones the caller passed are left alone). */
export async function cleanupRun(run: { root: string }): Promise<void> {
  await rm(run.root, { recursive: true, force: true });
}
