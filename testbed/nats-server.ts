// A real nats-server child process for tests: ports chosen by the server, its own temp store,
// small JetStream limits, a bounded log buffer, and restart on the same ports and store.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from "node:fs/promises";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { existsSync } from "node:fs";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { fileURLToPath } from "node:url";
import { ensureNatsServer, isAtLeast, natsServerVersion, NEWEST_TESTED_NATS_SERVER, privateBinDir, runNatsInstaller } from "../broker/index.js";
import { until } from "./until.js";

// Finding the binary is the product's own logic (cotal up uses it too).
export { findNatsServer, NatsServerNotFoundError, NatsServerTooOldError, natsServerVersion } from "../broker/index.js";

/** The installer Cotal ships, beside this folder (testbed/ in a checkout, dist/ in the benches' bundles). */
const INSTALLER = fileURLToPath(new URL("../scripts/install-nats-server.sh", import.meta.url));

/**
 * A supported nats-server, fetched the way `cotal up` fetches one when the machine has none
 * (scripts/install-nats-server.sh into ~/.local/share/cotal/bin, or COTAL_NATS_DIR), saying so on stderr.
 */
export function testNatsServer(env: NodeJS.ProcessEnv = process.env): string {
  return ensureNatsServer({
    script: INSTALLER,
    env,
    say: (line) =>
      process.stderr.write(`testbed: ${line}
`),
  });
}

/** The Debian suite whose nats-server is the newest the suite runs on (NEWEST_TESTED_NATS_SERVER). */
const NEWEST_SUITE = "sid";
const NEWEST = `${NEWEST_TESTED_NATS_SERVER.major}.${NEWEST_TESTED_NATS_SERVER.minor}`;

/**
 * Where the `nats-newest` project's server is: COTAL_NATS_NEWEST_BIN, else beside the folder
 * `cotal up` fetches into (`~/.local/share/cotal/bin-sid/nats-server`), where `cotal up` never looks.
 */
export function newestNatsServerPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.COTAL_NATS_NEWEST_BIN || join(`${privateBinDir(env)}-${NEWEST_SUITE}`, "nats-server");
}

/** The newest supported nats-server is neither here nor fetchable; the message says what to run. */
export class NewestNatsServerError extends Error {
  override readonly name = "NewestNatsServerError";
}

/**
 * The newest supported nats-server (NEWEST_TESTED_NATS_SERVER or newer) for the `nats-newest`
 * project, fetched once with the installer Cotal ships (Debian sid's package, a private apt list)
 * when it is missing or older. A COTAL_NATS_NEWEST_BIN that names an older or missing binary is
 * refused, never replaced.
 */
export function newestNatsServer(env: NodeJS.ProcessEnv = process.env, say: (line: string) => void = () => {}): string {
  const path = newestNatsServerPath(env);
  const v = existsSync(path) ? natsServerVersion(path) : undefined;
  if (v && isAtLeast(v, NEWEST_TESTED_NATS_SERVER)) return path;
  const found = v ? `${path} is ${v.text}` : `${path} does not exist`;
  if (env.COTAL_NATS_NEWEST_BIN)
    throw new NewestNatsServerError(
      `COTAL_NATS_NEWEST_BIN: ${found}, not nats-server ${NEWEST} or newer. Point it at one, or unset it to fetch Debian ${NEWEST_SUITE}'s.`,
    );
  say(
    `${found}: fetching Debian ${NEWEST_SUITE}'s nats-server (${NEWEST} or newer) into ${dirname(path)} (bash ${INSTALLER}; the machine's apt sources are not changed)`,
  );
  const r = runNatsInstaller(INSTALLER, dirname(path), {
    ...env,
    COTAL_NATS_SUITE: NEWEST_SUITE,
    COTAL_NATS_MIN_MINOR: String(NEWEST_TESTED_NATS_SERVER.minor),
  });
  if ("reason" in r)
    throw new NewestNatsServerError(
      `nats-server ${NEWEST} could not be fetched: ${r.reason.replace(/\.$/, "")}. ` +
        `Run \`COTAL_NATS_SUITE=${NEWEST_SUITE} COTAL_NATS_MIN_MINOR=${NEWEST_TESTED_NATS_SERVER.minor} bash ${INSTALLER} ${dirname(path)}\` once apt-get reaches Debian's packages, ` +
        `or set COTAL_NATS_NEWEST_BIN to a nats-server ${NEWEST} or newer.`,
    );
  say(`fetched nats-server ${natsServerVersion(r.path)?.text ?? ""} to ${r.path}`.replace("  ", " "));
  return r.path;
}

/** Ports a test server must never take: the shared broker on this machine uses them. */
export const RESERVED_PORTS: ReadonlySet<number> = new Set([4222, 6222, 8222]);

/** nats-server did not come up (exited, or never became ready); `logs` holds its last output. */
export class NatsServerStartError extends Error {
  override readonly name = "NatsServerStartError";
  constructor(
    message: string,
    /** The server's bounded log buffer at the time of failure. */
    readonly logs: string,
    options?: ErrorOptions,
  ) {
    const tail = logs.split("\n").slice(-25).join("\n");
    super(tail ? `${message}\n--- last nats-server output ---\n${tail}` : message, options);
  }
}

/** JetStream limits written into the generated config. Sizes use nats-server units ("256MB"). */
export interface JetStreamLimits {
  /** Default "256MB". */
  maxMemoryStore?: string;
  /** Default "2GB". */
  maxFileStore?: string;
  /**
   * `sync_interval` (nats-server 2.10+): "always" fsyncs before each acknowledgement; a duration
   * ("2m", the server's default) flushes that often. Not written when unset.
   */
  syncInterval?: string;
  /** Store directory to use instead of the private temp one (a power-loss test's FUSE mount); cleanup() leaves it. */
  storeDir?: string;
}

export interface NatsServerOptions {
  /** Enable JetStream with a private temp store and small limits (default true). */
  jetstream?: boolean | JetStreamLimits;
  /**
   * Extra config text appended to the generated config file (auth, operator mode, cluster
   * blocks...). Do not repeat top-level keys the harness writes (`listen`, `http`,
   * `ports_file_dir`, `jetstream`, `server_name`): a later key replaces the harness's one.
   */
  config?: string;
  /** Extra command-line arguments, placed after `-c <config>`. */
  args?: string[];
  /** Run the server with debug and trace logging (`-DV`) and mirror its output to stderr. */
  debug?: boolean;
  /** Open the HTTP monitoring port (server-chosen), exposed as `monitorUrl`. Default false. */
  monitoring?: boolean;
  /** `server_name` in the config; required by clustered JetStream. */
  serverName?: string;
  /**
   * Custom readiness check, run after the client port accepts TCP connections. Replaces the
   * default JetStream probe (which connects without credentials, and is skipped when
   * `config` looks like it configures auth).
   */
  ready?: (server: NatsServer) => Promise<void>;
  /** How long start/restart may take before failing, in ms (default 15 000). */
  startTimeoutMs?: number;
  /** Bounds of the log buffer (default 200 lines / 64 KiB). */
  logLimit?: { lines?: number; bytes?: number };
}

/** Keeps the last `maxLines` lines and at most `maxBytes` characters of a stream's output. */
export class LogRing {
  #lines: string[] = [];
  #chars = 0;
  #partial = "";
  #dropped = 0;
  constructor(
    readonly maxLines = 200,
    readonly maxBytes = 64 * 1024,
  ) {}

  push(chunk: string): void {
    const parts = (this.#partial + chunk).split("\n");
    this.#partial = parts.pop() ?? "";
    if (this.#partial.length > this.maxBytes) this.#partial = this.#partial.slice(-this.maxBytes);
    for (const line of parts) this.#add(line);
  }

  /** Add a whole line (used for harness notes such as "restarting"). */
  note(line: string): void {
    this.#add(line);
  }

  /** Lines evicted so far. */
  get dropped(): number {
    return this.#dropped;
  }

  text(): string {
    const all = this.#partial ? [...this.#lines, this.#partial] : this.#lines;
    return all.join("\n");
  }

  #add(line: string): void {
    const l = line.length > this.maxBytes ? line.slice(-this.maxBytes) : line;
    this.#lines.push(l);
    this.#chars += l.length + 1;
    while (this.#lines.length > this.maxLines || this.#chars + this.#partial.length > this.maxBytes) {
      const gone = this.#lines.shift();
      if (gone === undefined) break;
      this.#chars -= gone.length + 1;
      this.#dropped += 1;
    }
  }
}

interface PortsFile {
  nats?: string[];
  monitoring?: string[];
  cluster?: string[];
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

// Safety net: a worker that exits without cleanup must not leave servers behind.
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  live.add(child);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const c of live) {
        try {
          c.kill("SIGKILL");
        } catch {
          // already gone
        }
      }
    });
  }
}

const AUTH_CONFIG = /^\s*(operator|authorization|accounts|resolver|no_auth_user)\s*[:={ ]/m;
const STOP_GRACE_MS = 5_000;

export class NatsServer {
  readonly #bin: string;
  readonly #root: string;
  readonly #opts: NatsServerOptions;
  readonly #log: LogRing;
  #child: ChildProcess | undefined;
  #exit: Promise<Exit> | undefined;
  #exited: Exit | undefined;
  #pid: number | undefined;
  #startedAt = 0;
  #port: number | undefined;
  #httpPort: number | undefined;
  #clusterPort: number | undefined;
  #cleaned = false;

  private constructor(bin: string, root: string, opts: NatsServerOptions) {
    this.#bin = bin;
    this.#root = root;
    this.#opts = opts;
    this.#log = new LogRing(opts.logLimit?.lines, opts.logLimit?.bytes);
  }

  /** Spawn a nats-server and wait until it is ready. Throws NatsServerNotFoundError or NatsServerStartError. */
  static async start(opts: NatsServerOptions = {}): Promise<NatsServer> {
    const bin = testNatsServer();
    const root = await mkdtemp(join(tmpdir(), "cotal-nats-"));
    const server = new NatsServer(bin, root, opts);
    try {
      await mkdir(server.storeDir, { recursive: true });
      await server.#launch();
    } catch (err) {
      await server.cleanup();
      throw err;
    }
    return server;
  }

  /** Client URL, `nats://127.0.0.1:<port>`. Stable across restart(). */
  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** Client port chosen by the server at first start. */
  get port(): number {
    if (this.#port === undefined) throw new Error("nats-server has not started");
    return this.#port;
  }

  /** Monitoring base URL (`http://127.0.0.1:<port>`), when `monitoring` was requested. */
  get monitorUrl(): string | undefined {
    return this.#httpPort === undefined ? undefined : `http://127.0.0.1:${this.#httpPort}`;
  }

  /** Cluster (route) port, when the config has a cluster block. */
  get clusterPort(): number | undefined {
    return this.#clusterPort;
  }

  /** The server's `server_name`, if one was given. */
  get serverName(): string | undefined {
    return this.#opts.serverName;
  }

  /** JetStream store directory; kept across restart(), removed by cleanup() unless `jetstream.storeDir` named it. */
  get storeDir(): string {
    const js = this.#opts.jetstream;
    return (typeof js === "object" ? js.storeDir : undefined) ?? join(this.#root, "store");
  }

  /** Path of the generated config file. */
  get configFile(): string {
    return join(this.#root, "nats-server.conf");
  }

  /** PID of the current (or, once stopped, the last) server process. */
  get pid(): number | undefined {
    return this.#pid;
  }

  /** When the current (or last) server process was spawned (ms since the epoch). */
  get startedAt(): number {
    return this.#startedAt;
  }

  /** True while the server process has not exited. */
  get running(): boolean {
    return this.#child !== undefined && this.#exited === undefined;
  }

  /** The last lines of the server's stdout+stderr (bounded; see `logLimit`). */
  logs(): string {
    return this.#log.text();
  }

  /** SIGTERM, wait for exit; SIGKILL if it has not exited after a few seconds. */
  async stop(): Promise<void> {
    const child = this.#child;
    if (!child || this.#exited || !this.#exit) return;
    child.kill("SIGTERM");
    if (!(await settlesWithin(this.#exit, STOP_GRACE_MS))) {
      this.#log.note(`[harness] nats-server pid ${child.pid} ignored SIGTERM for ${STOP_GRACE_MS} ms; sending SIGKILL`);
      child.kill("SIGKILL");
      await this.#exit;
    }
  }

  /** SIGKILL (a crash, for fault tests) and wait for the process to be gone. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child || this.#exited || !this.#exit) return;
    child.kill("SIGKILL");
    await this.#exit;
  }

  /** Start again (stopping first if running) on the same ports and the same store dir. */
  async restart(): Promise<void> {
    if (this.#cleaned) throw new Error("nats-server was cleaned up; it cannot restart");
    await this.stop();
    this.#log.note(`[harness] restarting nats-server on port ${this.#port}`);
    await this.#launch();
  }

  /** Stop the server and remove its temp dirs (store, config). Safe to call twice. */
  async cleanup(): Promise<void> {
    await this.stop();
    if (this.#cleaned) return;
    this.#cleaned = true;
    await rm(this.#root, { recursive: true, force: true });
  }

  #renderConfig(): string {
    const o = this.#opts;
    const lines = ["# generated by testbed/nats-server.ts", `listen: "127.0.0.1:${this.#port ?? -1}"`, `ports_file_dir: ${JSON.stringify(this.#root)}`];
    if (o.monitoring) lines.push(`http: "127.0.0.1:${this.#httpPort ?? -1}"`);
    if (o.serverName) lines.push(`server_name: ${JSON.stringify(o.serverName)}`);
    const js = o.jetstream ?? true;
    if (js) {
      const limits = js === true ? {} : js;
      lines.push(
        "jetstream {",
        `  store_dir: ${JSON.stringify(this.storeDir)}`,
        `  max_memory_store: ${limits.maxMemoryStore ?? "512MB"}`,
        `  max_file_store: ${limits.maxFileStore ?? "8GB"}`,
        ...(limits.syncInterval ? [`  sync_interval: ${JSON.stringify(limits.syncInterval)}`] : []),
        "}",
      );
    }
    if (o.config) lines.push(o.config);
    return lines.join("\n") + "\n";
  }

  async #launch(): Promise<void> {
    const timeoutMs = this.#opts.startTimeoutMs ?? 15_000;
    await this.#removePortsFiles();
    await writeFile(this.configFile, this.#renderConfig());
    const args = ["-c", this.configFile, ...(this.#opts.debug ? ["-DV"] : []), ...(this.#opts.args ?? [])];
    const child = spawn(this.#bin, args, { stdio: ["ignore", "pipe", "pipe"], env: process.env });
    this.#child = child;
    this.#exited = undefined;
    this.#pid = child.pid;
    this.#startedAt = Date.now();
    track(child);
    this.#exit = new Promise<Exit>((resolve) => {
      const done = (e: Exit): void => {
        live.delete(child);
        if (this.#child === child) this.#exited = e;
        resolve(e);
      };
      child.once("exit", (code, signal) => done({ code, signal }));
      child.once("error", (err) => {
        this.#log.note(`[harness] spawn ${this.#bin} failed: ${err.message}`);
        done({ code: null, signal: null });
      });
    });
    for (const stream of [child.stdout, child.stderr]) {
      stream?.setEncoding("utf8");
      stream?.on("data", (chunk: string) => {
        this.#log.push(chunk);
        if (this.#opts.debug) process.stderr.write(chunk);
      });
    }

    try {
      const ports = await this.#waitForPortsFile(timeoutMs);
      this.#learnPorts(ports);
      await until(() => this.#exited !== undefined || tcpReady(this.port), timeoutMs, `nats-server accepting on ${this.url}`);
      this.#failIfExited("before it accepted connections");
      if (this.#opts.ready) {
        await this.#opts.ready(this);
      } else if ((this.#opts.jetstream ?? true) && !AUTH_CONFIG.test(this.#opts.config ?? "")) {
        await until(
          async () => this.#exited !== undefined || (await jetStreamAnswers(this.url)),
          timeoutMs,
          `JetStream to answer $JS.API.INFO on ${this.url}`,
          50,
        );
      }
      this.#failIfExited("before it was ready");
    } catch (err) {
      await this.kill();
      if (err instanceof NatsServerStartError) throw err;
      throw new NatsServerStartError(`nats-server did not become ready: ${(err as Error).message}`, this.logs(), {
        cause: err,
      });
    }
  }

  #failIfExited(when: string): void {
    const e = this.#exited;
    if (e) {
      throw new NatsServerStartError(`nats-server (pid ${this.#pid}) exited ${e.signal ? `on ${e.signal}` : `with code ${e.code}`} ${when}`, this.logs());
    }
  }

  async #waitForPortsFile(timeoutMs: number): Promise<PortsFile> {
    const suffix = `_${this.#pid}.ports`;
    let ports: PortsFile | undefined;
    await until(
      async () => {
        if (this.#exited) return true;
        const name = (await readdir(this.#root)).find((f) => f.endsWith(suffix));
        if (!name) return false;
        const parsed = JSON.parse(await readFile(join(this.#root, name), "utf8")) as PortsFile;
        if (!parsed.nats?.length) return false;
        ports = parsed;
        return true;
      },
      timeoutMs,
      `nats-server to write its ports file (*${suffix}) in ${this.#root}`,
    );
    this.#failIfExited("before it wrote its ports file");
    if (!ports) throw new NatsServerStartError("nats-server ports file was empty", this.logs());
    return ports;
  }

  #learnPorts(ports: PortsFile): void {
    const port = portOf(ports.nats?.[0]);
    const http = portOf(ports.monitoring?.[0]);
    const cluster = portOf(ports.cluster?.[0]);
    for (const p of [port, http, cluster]) {
      if (p !== undefined && RESERVED_PORTS.has(p)) {
        throw new NatsServerStartError(
          `nats-server took reserved port ${p} (reserved: ${[...RESERVED_PORTS].join(", ")}); test servers must use server-chosen ports`,
          this.logs(),
        );
      }
    }
    if (port === undefined) throw new NatsServerStartError("nats-server ports file has no client URL", this.logs());
    if (this.#port !== undefined && this.#port !== port) {
      throw new NatsServerStartError(`nats-server restarted on port ${port}, expected ${this.#port}`, this.logs());
    }
    this.#port = port;
    this.#httpPort = http;
    this.#clusterPort = cluster;
  }

  async #removePortsFiles(): Promise<void> {
    for (const f of await readdir(this.#root)) {
      if (f.endsWith(".ports")) await rm(join(this.#root, f), { force: true });
    }
  }
}

function portOf(url: string | undefined): number | undefined {
  if (!url) return undefined;
  const port = Number(new URL(url).port);
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

function tcpReady(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ host: "127.0.0.1", port });
    sock.once("connect", () => {
      sock.destroy();
      resolve(true);
    });
    sock.once("error", () => {
      sock.destroy();
      resolve(false);
    });
  });
}

/** One short connection: does the server answer `$JS.API.INFO` for the default account? */
export async function jetStreamAnswers(url: string): Promise<boolean> {
  const nc = await connect({ servers: url, reconnect: false, timeout: 2_000 });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 2_000 });
    await jsm.getAccountInfo();
    return true;
  } finally {
    await nc.close();
  }
}

/** True if `p` settles within `ms`; the timer is cleared either way. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
