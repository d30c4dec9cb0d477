import { spawnSync } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import { CotalError } from "../schemas/index.js";

/** The oldest nats-server Cotal runs on (docs/security.md "Supported servers"). */
export const MIN_NATS_SERVER = { major: 2, minor: 10 } as const;

/**
 * The newest nats-server minor the suite runs on (Debian sid's, the `nats-newest` vitest project).
 * Newer ones are not refused: `cotal doctor` warns that they are untested.
 */
export const NEWEST_TESTED_NATS_SERVER = { major: 2, minor: 15 } as const;

/** `2.10 through 2.15`: the supported range, as docs and messages say it. */
export const SUPPORTED_NATS_SERVERS = `${MIN_NATS_SERVER.major}.${MIN_NATS_SERVER.minor} through ${NEWEST_TESTED_NATS_SERVER.major}.${NEWEST_TESTED_NATS_SERVER.minor}`;

/**
 * Where `scripts/install-nats-server.sh` (and `cotal up`, which runs it when needed) puts the
 * binary: `COTAL_NATS_DIR`, else `~/.local/share/cotal/bin`. Searched after PATH.
 */
export function privateBinDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.COTAL_NATS_DIR || join(env.HOME || homedir(), ".local", "share", "cotal", "bin");
}

/** Folders searched after PATH: distribution packages install nats-server into an sbin; our installer into privateBinDir(). */
export function extraBinDirs(env: NodeJS.ProcessEnv = process.env): readonly string[] {
  return ["/usr/sbin", "/usr/local/sbin", privateBinDir(env)];
}

/** How to get a supported server, on the platforms people use. One text, shared by both errors. */
export const NATS_SERVER_INSTALL_HINT =
  "Get nats-server 2.10 or newer: Debian 13 / Ubuntu 24.04: `apt-get install nats-server`; " +
  "Debian 12 (which ships 2.9.10): `cotal up` fetches it by itself, or run `bash scripts/install-nats-server.sh` from a Cotal clone or node_modules/cotal (fetches Debian 13's package without changing your apt sources, docs/setup.md); " +
  "macOS: `brew install nats-server`; containers: the official `nats:2.10` image; " +
  "or a release binary. Then put it on PATH or set NATS_SERVER_BIN to its path.";

/** No nats-server binary was found; the message says how to install one or point at it. */
export class NatsServerNotFoundError extends CotalError {
  constructor(
    detail: string,
    /** Paths that were tried, in order. */
    readonly searched: readonly string[],
  ) {
    super("nats-server-missing", `${detail}.`, { remedy: NATS_SERVER_INSTALL_HINT });
  }
}

/** Only nats-server binaries older than MIN_NATS_SERVER were found; they are refused, never used. */
export class NatsServerTooOldError extends CotalError {
  constructor(
    /** Each refused binary and the version it reported. */
    readonly found: readonly { path: string; version: string }[],
  ) {
    const list = found.map((f) => `${f.path} (${f.version})`).join(", ");
    super(
      "nats-server-too-old",
      `nats-server ${MIN_NATS_SERVER.major}.${MIN_NATS_SERVER.minor} or newer is required; found only ${list}. ` +
        "Older servers can be crashed by one message from any credential (a wildcard reply subject through an import) " +
        "and acknowledge JetStream writes before they reach disk (no `sync_interval: always`), so acknowledged mail is lost on a power cut.",
      { remedy: NATS_SERVER_INSTALL_HINT },
    );
  }
}

/** A parsed `nats-server --version`. */
export interface NatsServerVersion {
  major: number;
  minor: number;
  patch: number;
  /** As the binary printed it, e.g. `v2.10.27`. */
  text: string;
}

/** Parse `nats-server: v2.10.27` (any prefix); undefined when no version is in the text. */
export function parseNatsServerVersion(out: string): NatsServerVersion | undefined {
  const m = /v(\d+)\.(\d+)\.(\d+)\S*/.exec(out);
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), text: m[0] };
}

/** Whether `v` is at least major.minor. */
export function isAtLeast(v: Pick<NatsServerVersion, "major" | "minor">, floor: { major: number; minor: number }): boolean {
  return v.major > floor.major || (v.major === floor.major && v.minor >= floor.minor);
}

/** Whether a version is at least MIN_NATS_SERVER. */
export function isSupportedNatsServer(v: NatsServerVersion): boolean {
  return isAtLeast(v, MIN_NATS_SERVER);
}

/** Whether a version is newer than NEWEST_TESTED_NATS_SERVER (it runs, untested). */
export function isNewerThanTested(v: Pick<NatsServerVersion, "major" | "minor">): boolean {
  return !isAtLeast(NEWEST_TESTED_NATS_SERVER, v);
}

// One `--version` call per binary per process: the finder runs for every server a test starts.
const versions = new Map<string, NatsServerVersion | undefined>();

/** Ask a binary its version (cached per path). */
export function natsServerVersion(path: string): NatsServerVersion | undefined {
  if (versions.has(path)) return versions.get(path);
  const r = spawnSync(path, ["--version"], { encoding: "utf8", timeout: 10_000 });
  const v = parseNatsServerVersion(`${r.stdout ?? ""}${r.stderr ?? ""}`);
  versions.set(path, v);
  return v;
}

/**
 * Find a supported nats-server: NATS_SERVER_BIN (must exist and be ≥ 2.10), else the first
 * binary ≥ 2.10 on PATH, then /usr/sbin, /usr/local/sbin and privateBinDir(). Older
 * binaries found on the way are skipped; when only older ones exist, NatsServerTooOldError
 * names them.
 */
export function findNatsServer(env: NodeJS.ProcessEnv = process.env, extraDirs: readonly string[] = extraBinDirs(env)): string {
  const fromEnv = env.NATS_SERVER_BIN;
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new NatsServerNotFoundError(`NATS_SERVER_BIN=${fromEnv} is not an executable file`, [fromEnv]);
    const v = natsServerVersion(fromEnv);
    if (v && isSupportedNatsServer(v)) return fromEnv;
    throw new NatsServerTooOldError([{ path: `NATS_SERVER_BIN=${fromEnv}`, version: v?.text ?? "no version reported" }]);
  }
  const dirs = [...new Set([...(env.PATH ?? "").split(delimiter).filter(Boolean), ...extraDirs])];
  const searched = dirs.map((d) => join(d, "nats-server"));
  const tooOld: { path: string; version: string }[] = [];
  for (const path of new Set(searched)) {
    if (!isExecutable(path)) continue;
    const v = natsServerVersion(path);
    if (v && isSupportedNatsServer(v)) return path;
    tooOld.push({ path, version: v?.text ?? "no version reported" });
  }
  if (tooOld.length) throw new NatsServerTooOldError(tooOld);
  throw new NatsServerNotFoundError(`nats-server was not found in PATH or in ${extraDirs.join(", ")}`, searched);
}

function isExecutable(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
