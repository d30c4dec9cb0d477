// The hook relay: what `dist/hook.mjs <event>` and `cotal hook <event>` run. It reads Claude's
// hook payload from stdin, relays the fields the connector needs over its hook socket, prints
// the connector's reply, and only then confirms the reply was written (so the connector may ack
// the mail it carries). Any failure prints `{}` and exits 0 within the hook's budget: a hook
// never blocks the session. Keep this file light (node built-ins, zod/mini): it starts per call.
// With `denyFloor` (`hook.mjs PreToolUse --deny-floor`) a PreToolUse hook first refuses a shell
// command the deny floor matches (floor-refusal.ts), and a payload it cannot read: that one
// answer is never `{}`.
import { existsSync, readFileSync } from "node:fs";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import * as z from "zod/mini";
import { withFlatContext } from "../runtime/index.js";
import { floorRefusal, unreadableRefusal } from "./floor-refusal.js";
import { hookSpec } from "./hooks.js";
import { frameLine, LineSplitter } from "./ndjson.js";
import { controlDir, seatPaths, pairingFile, PRINCIPAL_TOKEN_RE, SPACE_RE, unsafeDirReason } from "./paths.js";
import { HookLaunchView, HookResponse, isHookEvent, parseLine, PROTOCOL_VERSION, trimPayload, type HookEvent } from "./protocol.js";

/** Where the hook writes its reply. `write` resolves once the text was handed to the reader (flushed). */
export interface HookIO {
  write(text: string): Promise<void>;
}

export interface RunHookOptions {
  io?: HookIO;
  /** Override the per-event budget, ms. */
  budgetMs?: number;
  /** Called with a one-line reason when the hook falls back to an empty reply (diagnostics). */
  onFallback?: (reason: string) => void;
  /** Enforce the deny floor on a PreToolUse hook's shell command (`--deny-floor`), before relaying. */
  denyFloor?: boolean;
  /** Also put the answer's context at its top level (`--flat-context`: a CLI that reads it there, runtime/hook-answer.ts). */
  flatContext?: boolean;
}

/** How a hook found its connector. */
export interface HookTarget {
  /** The control directory: checked (ours, 0700, not a symlink) before every connect, since it may not exist yet. */
  dir: string;
  socket: string;
  /** The token, or where to read it once the connector wrote it. */
  token: string | { file: string };
  /** Wait (within budget) for the socket to appear: the connector may still be starting. */
  wait: boolean;
}

const stdoutIO: HookIO = {
  write: (text) =>
    new Promise((resolve, reject) => {
      process.stdout.write(text, (err) => (err ? reject(err) : resolve()));
    }),
};

/** This process's pid and its ancestors' (nearest first), from /proc; just pid and ppid elsewhere. */
export function ancestry(max = 8): number[] {
  const pids = [process.pid];
  let pid = process.ppid;
  while (pid > 1 && pids.length < max) {
    pids.push(pid);
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      // "pid (comm) state ppid …": comm may hold spaces or parentheses, so parse after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (!Number.isInteger(ppid) || ppid <= 1) break;
      pid = ppid;
    } catch {
      break;
    }
  }
  return pids;
}

const PairingRecord = z.object({ socket: z.string(), tokenFile: z.string() });

/**
 * Find the connector: launch material (COTAL_LAUNCH_MATERIAL), else a hand-started identity
 * (COTAL_SPACE, or the space of a cotal:// COTAL_SERVER, and COTAL_NAME), else the pairing file
 * the connector wrote for the Claude process that runs this hook.
 */
export function locateConnector(env: NodeJS.ProcessEnv, pids: number[]): HookTarget | undefined {
  const material = env.COTAL_LAUNCH_MATERIAL?.trim();
  if (material) {
    const view = HookLaunchView.safeParse(parseLine(readFileSync(material, "utf8")));
    if (!view.success) return undefined;
    const { space, name, owner, controlToken } = view.data;
    const dir = controlDir(env, view.data.controlDir);
    if (!usableOrPending(dir)) return undefined;
    return { dir, socket: seatPaths(dir, { space, owner: owner ?? "local", actor: name }).socket, token: controlToken, wait: true };
  }
  const dir = controlDir(env);
  const rawName = env.COTAL_NAME?.trim();
  if (rawName) {
    let space = env.COTAL_SPACE?.trim();
    const server = env.COTAL_SERVER?.trim();
    if (!space && server?.startsWith("cotal://")) {
      try {
        space = decodeURIComponent(new URL(server).pathname.replace(/^\//, ""));
      } catch {
        space = undefined;
      }
    }
    const dotted = rawName.split(".");
    const [owner, actor] = dotted.length === 2 ? [dotted[0]!, dotted[1]!] : ["local", rawName];
    if (!space || !SPACE_RE.test(space) || !PRINCIPAL_TOKEN_RE.test(owner) || !PRINCIPAL_TOKEN_RE.test(actor)) return undefined;
    if (!usableOrPending(dir)) return undefined;
    const paths = seatPaths(dir, { space, owner, actor });
    return { dir, socket: paths.socket, token: { file: paths.tokenFile }, wait: true };
  }
  if (unsafeDirReason(dir)) return undefined;
  for (const pid of pids.slice(1)) {
    let raw: string;
    try {
      raw = readFileSync(pairingFile(dir, pid), "utf8");
    } catch {
      continue;
    }
    const rec = PairingRecord.safeParse(parseLine(raw));
    if (rec.success) return { dir, socket: rec.data.socket, token: { file: rec.data.tokenFile }, wait: false };
  }
  return undefined;
}

/**
 * Whether a SessionStart hook that found no connector should wait for one to pair: the session was
 * started hand-started through a minted credential (`COTAL_CREDS`, its name taken from the
 * credential), so its connector is found only through the pairing file, which the connector
 * writes once it has joined, usually after this hook started. `COTAL_SERVER` alone (set for the
 * CLI) starts no connector that pairs, so it never makes a session wait.
 */
export function awaitsPairing(env: NodeJS.ProcessEnv): boolean {
  return !env.COTAL_LAUNCH_MATERIAL?.trim() && !env.COTAL_NAME?.trim() && !!env.COTAL_CREDS?.trim();
}

/** Look for the connector until it is found or the deadline passes (the pairing file appears once it joined). */
async function locateWithin(env: NodeJS.ProcessEnv, pids: number[], deadline: number): Promise<HookTarget | undefined> {
  for (;;) {
    const found = locateConnector(env, pids);
    if (found || Date.now() + 25 >= deadline) return found;
    await sleep(25);
  }
}

/**
 * A control directory the hook may use: a safe one, or one that does not exist yet (on a fresh
 * host the connector, started at about the same moment, creates it; the hook waits for it).
 */
function usableOrPending(dir: string): boolean {
  return !unsafeDirReason(dir) || !existsSync(dir);
}

async function readAll(stdin: string | AsyncIterable<string | Buffer>, deadline: number): Promise<string> {
  if (typeof stdin === "string") return stdin;
  const chunks: Buffer[] = [];
  const reading = (async () => {
    for await (const c of stdin) chunks.push(typeof c === "string" ? Buffer.from(c) : c);
  })();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    reading,
    new Promise((_, rej) => (timer = setTimeout(() => rej(new Error("stdin not closed in time")), Math.max(0, deadline - Date.now())))),
  ]).finally(() => clearTimeout(timer));
  return Buffer.concat(chunks).toString("utf8");
}

function connectOnce(socket: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const c = net.connect(socket);
    c.once("connect", () => {
      c.off("error", reject);
      resolve(c);
    });
    c.once("error", reject);
  });
}

async function connectWithin(target: HookTarget, deadline: number): Promise<net.Socket> {
  for (;;) {
    try {
      // Never send the token to a socket in a directory someone else could have planted.
      const unsafe = existsSync(target.dir) ? unsafeDirReason(target.dir) : undefined;
      if (unsafe) throw new Error(`unsafe control directory ${target.dir}: ${unsafe}`);
      return await connectOnce(target.socket);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const retryable = code === "ENOENT" || code === "ECONNREFUSED";
      if (!target.wait || !retryable || Date.now() + 25 >= deadline) throw err;
      await sleep(25);
    }
  }
}

async function readToken(token: HookTarget["token"], deadline: number): Promise<string> {
  if (typeof token === "string") return token;
  for (;;) {
    try {
      const t = readFileSync(token.file, "utf8").trim();
      if (t) return t;
    } catch (err) {
      if (Date.now() + 25 >= deadline) throw err;
    }
    await sleep(25);
  }
}

/** Reads newline-delimited frames from a socket (an oversize frame ends the connection). */
function lineReader(c: net.Socket): (deadline: number) => Promise<string> {
  const frames = new LineSplitter();
  const lines: string[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  c.setEncoding("utf8");
  c.on("data", (s: string) => {
    const got = frames.push(s);
    if (got === "overflow") c.destroy();
    else lines.push(...got);
    wake?.();
  });
  const end = () => {
    ended = true;
    wake?.();
  };
  c.on("end", end);
  c.on("close", end);
  c.on("error", end);
  return async (deadline) => {
    for (;;) {
      const l = lines.shift();
      if (l !== undefined) return l;
      if (ended) throw new Error("connector closed the connection");
      const left = deadline - Date.now();
      if (left <= 0) throw new Error("connector did not answer in time");
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((r) => {
        wake = r;
        timer = setTimeout(r, left);
      });
      clearTimeout(timer);
      wake = undefined;
    }
  };
}

/**
 * Run one hook: relay `event` (or the payload's own hook_event_name) to the connector and print
 * its reply. Always resolves to exit code 0; on any failure it prints `{}`.
 */
export async function runHook(
  event: string | undefined,
  stdin: string | AsyncIterable<string | Buffer>,
  env: NodeJS.ProcessEnv = process.env,
  opts: RunHookOptions = {},
): Promise<number> {
  const io = opts.io ?? stdoutIO;
  const started = Date.now();
  let written = false;
  let socket: net.Socket | undefined;
  // Until the floor has seen the command, a failure refuses the call instead of letting it through.
  let floorPending = opts.denyFloor === true && event === "PreToolUse";
  const fallback = async (reason: string) => {
    opts.onFallback?.(reason);
    if (written) return;
    written = true;
    try {
      await io.write(floorPending ? `${JSON.stringify(unreadableRefusal(reason))}\n` : "{}\n");
    } catch {
      // nowhere to write: nothing more to do
    }
  };
  try {
    const envBudget = Number(env.COTAL_HOOK_BUDGET_MS);
    const spec = event && isHookEvent(event) ? hookSpec(event) : undefined;
    const budget = opts.budgetMs ?? (envBudget > 0 ? envBudget : (spec?.budgetMs ?? 1_500));
    const deadline = started + budget;
    const raw = parseLine(await readAll(stdin, deadline));
    if (!raw || typeof raw !== "object" || Array.isArray(raw)) return (await fallback("hook payload is not a JSON object"), 0);
    if (floorPending) {
      const refused = floorRefusal(raw as Record<string, unknown>);
      if (refused) {
        written = true;
        await io.write(`${JSON.stringify(refused)}\n`);
        return 0;
      }
      floorPending = false;
    }
    const payload = trimPayload(raw as Record<string, unknown>);
    const name = event ?? (payload.hook_event_name as string | undefined);
    if (!name || !isHookEvent(name)) return (await fallback(`not a hook event the connector handles: ${String(name)}`), 0);
    payload.hook_event_name = name satisfies HookEvent;
    const pids = ancestry();
    const located = name === "SessionStart" && awaitsPairing(env) ? await locateWithin(env, pids, deadline) : locateConnector(env, pids);
    if (!located) return (await fallback("no connector configured for this session"), 0);
    // Only SessionStart races the connector's start-up; later hooks do not wait for a socket that
    // is missing (a connector that failed to start must not slow every prompt down).
    const target = { ...located, wait: located.wait && name === "SessionStart" };
    socket = await connectWithin(target, deadline);
    const token = await readToken(target.token, deadline);
    const next = lineReader(socket);
    socket.write(frameLine({ v: PROTOCOL_VERSION, token, event: name, payload, pids }));
    const res = HookResponse.safeParse(parseLine(await next(deadline)));
    if (!res.success) return (await fallback("malformed reply from the connector"), 0);
    if (!res.data.ok) return (await fallback(`connector refused: ${res.data.error}`), 0);
    written = true;
    await io.write(JSON.stringify(opts.flatContext ? withFlatContext(res.data.reply) : res.data.reply) + "\n");
    if (res.data.receipt) {
      const s = socket;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 500);
        s.once("close", () => {
          clearTimeout(timer);
          resolve();
        });
        s.end(frameLine({ v: PROTOCOL_VERSION, written: true, receipt: res.data.ok ? res.data.receipt : "" }));
      });
    }
    return 0;
  } catch (err) {
    await fallback((err as Error)?.message ?? String(err));
    return 0;
  } finally {
    socket?.destroy();
  }
}
