import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { resolve } from "node:path";
import { Option, type Command } from "commander";
import { z } from "zod";
import { connectMesh, readSecret, requestCredential, writeSecret } from "../../broker/index.js";
import { bindScope, DEFAULT_WEB_HOST, DEFAULT_WEB_PORT, MeshView, newDashboardToken, serveDashboard, TOKEN_PATTERN, type Dashboard } from "../../web/index.js";
import { LOG_FILE_ENV } from "../mesh-host/bounded-log.js";
import { childEnv } from "../mesh-host/child-env.js";
import { meshOptions, resolveTarget, type MeshTarget } from "../mesh-client/mesh-target.js";
import { credentialScope } from "../identity/credential-scope.js";
import { CommandFailedError, UsageError } from "../terminal/errors.js";
import { cliLog, serviceLogLevel } from "../terminal/logging.js";
import { note, printLines, warn } from "../terminal/output.js";
import { isRunning, readRecord, recordOf, removeRecord, stopProcess, writeRecord } from "../mesh-host/pid-file.js";
import { selfCommand } from "../mesh-host/service-process.js";
import { parseInput, port } from "../terminal/validate.js";
import { choosePerson, openWrites, type OpenWrites, type PersonChoice } from "../web/web-writes.js";

/** The bind rule (web/bind.ts) as a flag check: a refused --host is bad input (exit 2). */
const webHost = z.string().superRefine((h, ctx) => {
  const r = bindScope(h);
  if ("problem" in r) ctx.addIssue({ code: "custom", message: r.problem });
});

export const WebFlags = z.object({
  port: port.default(DEFAULT_WEB_PORT),
  host: webHost.default(DEFAULT_WEB_HOST),
  detach: z.boolean().optional(),
  stop: z.boolean().optional(),
  url: z.boolean().optional(),
  tokenFile: z.string().min(1).optional(),
  readOnly: z.boolean().optional(),
  asCreds: z.string().min(1, "--as-creds needs a credential file").optional(),
});
export type WebFlags = z.infer<typeof WebFlags>;

/** The admin credential `cotal web` keeps next to the mesh (minted once, on the mesh host). */
const WEB_ADMIN = "web";
/** The dashboard's token on the mesh host (0600, in the 0700 creds folder). */
const WEB_TOKEN_FILE = "web.token";

/** `cotal web`: the dashboard, writing as the person unless --read-only. */
export function registerWeb(program: Command): void {
  const cmd = program
    .command("web")
    .summary("serve a live dashboard of the mesh on loopback (roster, feed, agents, managers), writing as the person here")
    .description(
      "Serve a dashboard of the space at http://127.0.0.1:7799/: the roster (status, condition, activity, attention, host, " +
        "model, waiting DMs and the age of the oldest, red when it grows while the seat is idle), the channel feed with " +
        "delivery-class badges, each agent's timeline from its event plane with its seat log, and the managers. Pages " +
        "update live (server-sent events); what went stale is marked stale. It writes as the person at the mesh host " +
        "(their credential, never its reader's or the operator's): posts and replies, DMs, their inbox, answers to seats' " +
        "permission asks, and with the steer right spawning, stopping and restarting seats and a seat's terminal, read-only; " +
        "--read-only serves the dashboard alone. On the mesh host, with " +
        "no --creds, it reads with an admin credential it mints once into .cotal/creds/web.creds (the broker keeps it " +
        "read-only); DM bodies are shown only with an admin credential. --host takes an IP address or localhost; a " +
        "wildcard (0.0.0.0, ::) only when named so.",
    )
    .option("--port <port>", "port to listen on", String(DEFAULT_WEB_PORT))
    .option("--host <address>", "address to listen on (an IP address or localhost)", DEFAULT_WEB_HOST)
    .option("-d, --detach", "run in the background (log .cotal/logs/web.log) and return")
    .option("--stop", "stop the dashboard started here with --detach")
    .option("--url", "print the link (with its token) of the dashboard started here with --detach")
    .option("--read-only", "serve the dashboard only: no composer, inbox, approvals or steering (every write answers 405)")
    .option("--as-creds <file>", "write as the person whose credential this is (default: the person at the mesh host, .cotal/person.json)")
    .addOption(
      new Option("--token-file <file>", "read the dashboard's token from this 0600 file (default: .cotal/creds/web.token on the mesh host)").hideHelp(),
    );
  meshOptions(cmd).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(WebFlags, raw, { port: "--port", host: "--host", asCreds: "--as-creds" });
    if (f.stop) return stopDetached();
    const target = resolveTarget(raw);
    if (f.url) return printDetachedLink(target);
    const reader = await adminByDefault(target, raw.creds === undefined);
    const profile = reader.creds ? credentialScope(reader.creds)?.profile : undefined;
    if (profile === "operator") {
      throw new UsageError("cotal web reads with a read-only credential, not the mesh host's operator credential (which may write).", {
        remedy:
          "Leave out --creds (and COTAL_CREDS) on the mesh host, so it mints its own admin credential, or pass one from `cotal mint NAME --profile admin`.",
      });
    }
    const scope = bindScope(f.host);
    if ("scope" in scope && scope.scope !== "loopback") {
      warn(
        `the dashboard listens on ${f.host}: anyone who can reach this machine can read it (every channel and agent${profile === "admin" ? ", and DM bodies" : ""}).`,
      );
    }
    const token = dashboardToken(target, f.tokenFile);
    const person = f.readOnly ? undefined : choosePerson(target, f.asCreds);
    if (f.detach) return detach(target, reader, f, token, person);
    await serveForeground(reader, profile, f, token.value, !!f.tokenFile, person);
  });
}

/**
 * On the mesh host, with no --creds, the dashboard reads as an admin (everything, DMs included,
 * publishing nothing), not with the operator's own credential: minted once into `.cotal/creds/web.creds`.
 */
async function adminByDefault(target: MeshTarget, defaulted: boolean): Promise<MeshTarget> {
  if (!defaulted || !target.root || !target.creds || credentialScope(target.creds)?.profile !== "operator") return target;
  const file = resolve(target.root.dir, "creds", `${WEB_ADMIN}.creds`);
  if (!existsSync(file) || credentialScope(file)?.profile !== "admin") {
    const nc = await connectMesh({ server: target.server, creds: target.creds, name: "cotal-web-mint" });
    try {
      const { creds } = await requestCredential(nc, target.space, {
        name: WEB_ADMIN,
        profile: "admin",
        allowSubscribe: [],
        allowPublish: [],
        provision: false,
      });
      mkdirSync(resolve(target.root.dir, "creds"), { recursive: true, mode: 0o700 });
      writeSecret(file, creds);
    } finally {
      await nc.close().catch(() => undefined);
    }
  }
  return { ...target, creds: file };
}

/** The dashboard's token: in a 0600 file beside the mesh's credentials (stable across restarts), else made for this run only. */
function dashboardToken(target: MeshTarget, file: string | undefined): { value: string; file?: string } {
  const path = file ?? (target.root ? resolve(target.root.dir, "creds", WEB_TOKEN_FILE) : undefined);
  if (!path) return { value: newDashboardToken() };
  if (existsSync(path)) {
    const value = readSecret(path).toString("utf8").trim();
    if (!TOKEN_PATTERN.test(value))
      throw new CommandFailedError(`${path} does not hold a dashboard token.`, { remedy: "Delete it; `cotal web` makes a new one." });
    return { value, file: path };
  }
  if (file) throw new UsageError(`--token-file ${file} does not exist.`);
  const value = newDashboardToken();
  writeSecret(path, value);
  return { value, file: path };
}

/** `cotal web --url`: the detached dashboard's link, from its record and the token file. */
function printDetachedLink(target: MeshTarget): void {
  if (!target.root) throw new UsageError("No mesh folder here: `cotal web --url` prints the link of the dashboard started in this project with --detach.");
  const rec = readRecord(target.root.pidFile("web"));
  if (!rec || !isRunning(rec)) throw new CommandFailedError("No detached dashboard runs here.", { remedy: "Start one with `cotal web --detach`." });
  const arg = (name: string) => rec.command[rec.command.indexOf(name) + 1];
  const host = arg("--host") ?? DEFAULT_WEB_HOST;
  const shown = host.includes(":") ? `[${host}]` : host;
  printLines(`http://${shown}:${arg("--port") ?? DEFAULT_WEB_PORT}/?token=${dashboardToken(target, undefined).value}`);
}

async function open(
  reader: MeshTarget,
  profile: string | undefined,
  f: WebFlags,
  token: string,
  person: PersonChoice | undefined,
): Promise<{ view: MeshView; dash: Dashboard; writes: OpenWrites }> {
  const log = cliLog("web");
  const view = await MeshView.open({ server: reader.server, space: reader.space, creds: reader.creds, profile, log });
  let writes: OpenWrites | undefined;
  try {
    writes = await openWrites(reader, person, log, () => view.state().managers.map((m) => m.instance));
    return { view, writes, dash: await serveDashboard(view, { host: f.host, port: f.port, log, token, writes: writes.mode }) };
  } catch (err) {
    await writes?.close();
    await view.close();
    if ((err as NodeJS.ErrnoException).code === "EADDRINUSE") {
      throw new CommandFailedError(`Port ${f.port} on ${f.host} is taken.`, {
        remedy: "Pass another --port, or stop what listens there (`cotal web --stop` for a detached dashboard).",
        cause: err,
      });
    }
    if ((err as NodeJS.ErrnoException).code === "EADDRNOTAVAIL") {
      throw new UsageError(`Invalid input: --host: ${f.host} is not an address of this machine.`, {
        remedy: "Use 127.0.0.1 (the default) or an address this machine has.",
        cause: err,
      });
    }
    throw err;
  }
}

async function serveForeground(
  reader: MeshTarget,
  profile: string | undefined,
  f: WebFlags,
  token: string,
  detachedChild: boolean,
  person: PersonChoice | undefined,
): Promise<void> {
  const { view, dash, writes } = await open(reader, profile, f, token, person);
  const w = writes.mode;
  printLines(
    // A detached child writes this into its log: the link with the token is printed by the parent only.
    `dashboard: ${detachedChild ? dash.url : dash.link}`,
    `reading:   ${reader.space} as ${profile ?? "an open mesh client"}${profile === "admin" ? " (DM bodies shown)" : " (no DM bodies)"}`,
    `writing:   ${w.kind === "on" ? `as ${w.as}${w.steer ? " (may steer seats)" : ""}` : w.kind === "off" ? `off (${w.why})` : "off (--read-only)"}`,
  );
  note("Serving; Ctrl-C to stop.");
  await new Promise<void>((done) => {
    for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(sig, () => done());
  });
  await dash.close();
  await writes.close();
  await view.close();
}

/** Start `cotal web` again in the background (with the credential chosen here), and wait until it serves. */
async function detach(
  target: MeshTarget,
  reader: MeshTarget,
  f: WebFlags,
  token: { value: string; file?: string },
  person: PersonChoice | undefined,
): Promise<void> {
  const root = target.root;
  if (!root)
    throw new UsageError("cotal web --detach keeps its log and pid in the mesh's .cotal/ folder: run it in the mesh's project folder.", {
      remedy: "Or run it in the foreground, without --detach.",
    });
  const recordFile = root.pidFile("web");
  const running = readRecord(recordFile);
  if (running && isRunning(running))
    throw new CommandFailedError(`A detached dashboard already runs here (pid ${running.pid}).`, { remedy: "`cotal web --stop` stops it." });
  mkdirSync(root.logsDir, { recursive: true, mode: 0o700 });
  mkdirSync(root.runDir, { recursive: true, mode: 0o700 });
  // Paths only on the command line: no secret.
  const args = [
    "web",
    "--port",
    String(f.port),
    "--host",
    f.host,
    "--server",
    reader.server,
    "--space",
    reader.space,
    ...(reader.creds ? ["--creds", reader.creds] : []),
    ...(token.file ? ["--token-file", token.file] : []),
    ...(f.readOnly ? ["--read-only"] : person && "creds" in person && person.creds ? ["--as-creds", person.creds] : []),
  ];
  const argv = [...selfCommand(), ...args];
  const logFile = resolve(root.logsDir, "web.log");
  const out = openSync(logFile, "a");
  let exited: string | undefined;
  try {
    const child = spawn(argv[0]!, argv.slice(1), {
      detached: true,
      stdio: ["ignore", out, out],
      cwd: root.project,
      env: childEnv({ COTAL_LOG_LEVEL: serviceLogLevel(), [LOG_FILE_ENV]: logFile }),
    });
    child.once("exit", (code, sig) => (exited = sig ? `was killed by ${sig}` : `exited with code ${code}`));
    child.unref();
    if (child.pid === undefined) throw new CommandFailedError(`The dashboard could not be started; see ${logFile}.`);
    writeRecord(recordFile, recordOf(child.pid, argv));
    const shown = f.host.includes(":") ? `[${f.host}]` : f.host;
    const url = `http://${shown}:${f.port}/`;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (exited) break;
      if (await answers(url, token.value)) {
        printLines(`dashboard: ${url}?token=${token.value}`, `pid:       ${child.pid} (log ${logFile}; \`cotal web --stop\` stops it)`);
        return;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    removeRecord(recordFile);
    if (!exited) child.kill("SIGTERM");
    throw new CommandFailedError(`The dashboard ${exited ?? "did not answer within 30 s"}; see ${logFile}.`);
  } finally {
    closeSync(out);
  }
}

async function answers(url: string, token: string): Promise<boolean> {
  try {
    return (await fetch(`${url}api/state`, { signal: AbortSignal.timeout(1_000), headers: { Authorization: `Bearer ${token}` } })).ok;
  } catch {
    return false;
  }
}

async function stopDetached(): Promise<void> {
  const target = resolveTarget({});
  if (!target.root) throw new UsageError("No mesh folder here: `cotal web --stop` stops the dashboard started in this project with --detach.");
  const recordFile = target.root.pidFile("web");
  const rec = readRecord(recordFile);
  if (!rec) {
    printLines("web: not running (no record)");
    return;
  }
  const how = await stopProcess(rec, 5_000);
  removeRecord(recordFile);
  printLines(`web: ${how === "not-running" ? "was not running" : `stopped (pid ${rec.pid})`}`);
}
