// Getting a supported nats-server when the machine has none: `cotal up` and the test harness run
// the installer Cotal ships (scripts/install-nats-server.sh), which fetches Debian 13's package
// by name with a private apt list (the machine's apt sources are untouched) and unpacks only the
// binary into the user's own folder. One code path for both, so what a test proves is what a
// user gets.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { CotalError } from "../schemas/index.js";
import { findNatsServer, NatsServerNotFoundError, NatsServerTooOldError, natsServerVersion, privateBinDir } from "./nats-binary.js";

/** How long the installer may take (an apt list download on a slow mirror), ms. */
const FETCH_TIMEOUT_MS = 300_000;

/** The installer could not get a nats-server here; the remedy is the one command to run. */
export class NatsServerFetchError extends CotalError {
  constructor(
    /** Why a server had to be fetched (none found, or only older ones). */
    why: NatsServerNotFoundError | NatsServerTooOldError,
    /** What the installer said went wrong (its last line). */
    readonly reason: string,
    /** The installer script that was run. */
    readonly script: string,
  ) {
    super("nats-server-fetch-failed", `${firstSentence(why)} Fetching one failed: ${reason.replace(/\.$/, "")}.`, {
      remedy:
        `Run \`bash ${shellQuote(script)}\` on this machine once apt-get can reach Debian's packages; ` +
        "where there is no apt-get, install nats-server 2.10 or newer another way (macOS: `brew install nats-server`) and set NATS_SERVER_BIN to it.",
      cause: why,
    });
  }
}

export interface EnsureNatsServerOptions {
  /** The installer script (scripts/install-nats-server.sh in Cotal's package). */
  script: string;
  env?: NodeJS.ProcessEnv;
  /** Told, in a sentence each, that a server is being fetched and where it went. */
  say: (line: string) => void;
}

/**
 * A supported nats-server: the one findNatsServer() finds, else one fetched into privateBinDir()
 * by the installer. A NATS_SERVER_BIN that names an unusable binary is refused, never replaced.
 * Throws NatsServerFetchError when fetching fails (no apt-get, no mirror reachable).
 */
export function ensureNatsServer(opts: EnsureNatsServerOptions): string {
  const env = opts.env ?? process.env;
  try {
    return findNatsServer(env);
  } catch (err) {
    if (!(err instanceof NatsServerNotFoundError || err instanceof NatsServerTooOldError) || env.NATS_SERVER_BIN) throw err;
    return fetchNatsServer(err, opts, env);
  }
}

function fetchNatsServer(why: NatsServerNotFoundError | NatsServerTooOldError, opts: EnsureNatsServerOptions, env: NodeJS.ProcessEnv): string {
  if (!existsSync(opts.script)) throw why;
  const dest = privateBinDir(env);
  const found = why instanceof NatsServerTooOldError ? `found only ${why.found.map((f) => `${f.path} ${f.version}`).join(", ")}` : "found none";
  opts.say(
    `nats-server 2.10 or newer is needed (${found}): fetching Debian's package nats-server into ${dest} (bash ${opts.script}; the machine's apt sources are not changed)`,
  );
  const r = runNatsInstaller(opts.script, dest, env);
  if ("reason" in r) throw new NatsServerFetchError(why, r.reason, opts.script);
  opts.say(`fetched nats-server ${natsServerVersion(r.path)?.text ?? ""} to ${r.path}`.replace("  ", " "));
  return r.path;
}

/**
 * Run the installer into `dest` (its environment picks the Debian suite and the least minor:
 * COTAL_NATS_SUITE, COTAL_NATS_MIN_MINOR). The binary's path, or the installer's reason (its last line).
 */
export function runNatsInstaller(script: string, dest: string, env: NodeJS.ProcessEnv): { path: string } | { reason: string } {
  const r = spawnSync("bash", [script, dest], { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: FETCH_TIMEOUT_MS });
  const said = (r.stderr ?? "").trim().split("\n");
  const path = (r.stdout ?? "").trim().split("\n").pop() ?? "";
  if (r.status === 0 && path) return { path };
  if (r.error) return { reason: r.error.message };
  return {
    reason:
      said
        .filter(Boolean)
        .pop()
        ?.replace(/^install-nats-server: /, "") ?? `the installer exited with code ${r.status}`,
  };
}

function firstSentence(err: Error): string {
  const m = /^.*?\.(\s|$)/s.exec(err.message);
  return (m ? m[0] : err.message).trim();
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
