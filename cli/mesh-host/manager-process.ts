import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { homedir, hostname } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectMesh, controlCaller, credsCaller } from "../../broker/index.js";
import { RUNTIMES, runtimeNamed } from "../../runtimes/index.js";
import { MANAGER_COMMANDS, ManagerInstance, PrincipalToken, type RuntimeConfigStatus } from "../../schemas/index.js";
import type { MeshTarget } from "../mesh-client/mesh-target.js";
import { keepHostCredential, renewHostCredential, rightsCurrent, type HostIdentity, type StaticTarget } from "../identity/host-credential.js";
import type { MeshRoot } from "./mesh-root.js";
import { findProcesses, isRunning, readRecordFile, removeRecord, stopProcess, writeRecord, type ProcessRecord } from "./pid-file.js";
import { startDetached } from "./service-process.js";
import { authArgs, type AuthChoices } from "./runtime-auth.js";

const callManager = controlCaller(MANAGER_COMMANDS);

/** Where a manager keeps its instance id and seat folders: beside the mesh on its host, else under ~/.cotal. */
export function managerStateDir(target: Pick<MeshTarget, "root" | "space">, flag?: string): string {
  if (flag) return resolve(flag);
  return target.root ? join(target.root.dir, "manager") : join(homedir(), ".cotal", "manager", target.space);
}

/** The instance id kept in the state dir (created once: `<host>-<4 hex>`), or the one asked for. */
export function managerInstance(stateDir: string, asked?: string): string {
  const file = join(stateDir, "instance");
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  if (asked) {
    writeFileSync(file, `${asked}\n`, { mode: 0o600 });
    return asked;
  }
  if (existsSync(file)) return ManagerInstance.parse(readFileSync(file, "utf8").trim());
  // Letters, digits and '_' only: the id is also the name of the manager's own credential.
  const host =
    hostname()
      .replace(/[^A-Za-z0-9_]/g, "_")
      .slice(0, 40) || "host";
  const id = `${host}_${randomBytes(2).toString("hex")}`;
  writeFileSync(file, `${id}\n`, { mode: 0o600 });
  return id;
}

/** What `cotal up` did about the mesh host's manager. */
export interface ManagerUp {
  state: "running" | "started" | "restarted";
  pid: number;
  instance: string;
  log: string;
  /** The runtimes it can start and how each is configured (its `status`; absent: it did not answer it). */
  runtimes?: RuntimeConfigStatus[];
}

/**
 * Keep the mesh host's manager running beside the mesh service (`cotal up`): adopt the recorded
 * one when it answers, else (re)start `cotal manager` detached, on the operator's credential, with
 * its state in `.cotal/manager`. It stops its seats when stopped (`cotal down`).
 *
 * Runtime auth (docs/claude-binding.md, Auth): the manager's seats and runs authenticate as each
 * CLI in this shell would. A runtime's choice goes on its command line (`--<runtime>-auth`, no
 * secret); each runtime's part of this shell's environment (its adapter's `shellEnv`: for Claude the
 * chosen mode's switch or secret, the provider, network and Claude settings) goes into its
 * environment, never onto a command line. A running manager keeps the auth it was started with; a
 * note says when this shell's differs.
 */
export async function ensureManager(
  root: MeshRoot,
  t: { server: string; space: string; creds?: string | undefined },
  notes: string[],
  auth: AuthChoices,
): Promise<ManagerUp> {
  const stateDir = join(root.dir, "manager");
  const instance = managerInstance(stateDir);
  const file = root.pidFile("manager");
  const read = readRecordFile(file);
  const rec = read.kind === "ok" && isRunning(read.record) ? read.record : findManagers(root)[0];
  let status: { runtimes?: RuntimeConfigStatus[] | undefined } | undefined;
  const answers = async (nc: NatsConnection) => {
    try {
      status = await callManager(nc, t.space, "status", credsCaller(t.creds), {}, { target: instance, timeoutMs: 1_000 });
      return true;
    } catch {
      return false;
    }
  };
  const authOf = () => (status?.runtimes ? { runtimes: status.runtimes } : {});
  let state: ManagerUp["state"] = "started";
  if (rec) {
    const nc = await connectMesh({ server: t.server, creds: t.creds, name: "cotal-up" });
    const alive = await answersWithin(nc, answers).finally(() => nc.close().catch(() => undefined));
    if (alive) {
      writeRecord(file, rec);
      if (t.creds && PrincipalToken.safeParse(instance).success)
        await renewHostCredential(t as StaticTarget, join(stateDir, "manager.creds"), hostManager(instance), notes);
      for (const r of status?.runtimes ?? []) {
        const adapter = runtimeNamed(r.name);
        const running = r.auth?.mode;
        const mode = adapter && auth[r.name] ? adapter.auth({ parentEnv: process.env, authMode: auth[r.name] }).detail?.mode : undefined;
        if (adapter && running && mode && running !== mode)
          notes.push(
            `the running manager's ${adapter.label} seats authenticate with ${running}, this shell's with ${mode}; it keeps ${running} (\`cotal down\` then \`cotal up\` from this shell to change it)`,
          );
      }
      return { state: "running", pid: rec.pid, instance, log: root.log("manager"), ...authOf() };
    }
    notes.push(`the manager pid ${rec.pid} was running but did not answer; restarted it`);
    await stopProcess(rec, 10_000);
    state = "restarted";
  }
  removeRecord(file);
  const creds = t.creds ? await managerCredential(t as { server: string; space: string; creds: string }, stateDir, instance, notes) : undefined;
  const args = [
    "manager",
    "--server",
    t.server,
    "--space",
    t.space,
    "--state-dir",
    stateDir,
    "--instance",
    instance,
    "--stop-seats",
    ...authArgs(auth),
    ...(creds ? ["--creds", creds] : []),
  ];
  const runtimesEnv = Object.assign({}, ...RUNTIMES.map((r) => r.shellEnv?.(process.env, auth[r.name]) ?? {})) as Record<string, string>;
  const started = await startDetached(root, "manager", "the manager", args, t, 20_000, answers, runtimesEnv);
  writeRecord(file, started);
  return { state, pid: started.pid, instance, log: root.log("manager"), ...authOf() };
}

/**
 * Asks a recorded manager up to ADOPT_ASKS times before taking it for hung: restarting one stops
 * every seat it runs (it is started with --stop-seats), so a manager that is only slow, on a
 * loaded machine, must not be restarted for one status call that took over a second.
 */
const ADOPT_ASKS = 5;
/** Between asks: a manager reconnecting (the server just restarted) has no subscriptions for a moment. */
const ADOPT_PAUSE_MS = 200;
async function answersWithin(nc: NatsConnection, answers: (nc: NatsConnection) => Promise<boolean>): Promise<boolean> {
  for (let i = 0; i < ADOPT_ASKS; i++) {
    if (i > 0) await sleep(ADOPT_PAUSE_MS);
    if (await answers(nc)) return true;
  }
  return false;
}

/**
 * The mesh host's manager runs on a credential of its own, profile `manager`, named like its
 * instance (minted once, 0600 in its state dir): the broker then scopes it as it scopes a manager on
 * another host (agent credentials for its seats, and only its own transfer bucket), instead of the
 * operator's credential. An instance id that cannot be a name (an older one with '-') keeps the
 * operator's credential, and a note says so.
 */
async function managerCredential(t: StaticTarget, stateDir: string, instance: string, notes: string[]): Promise<string> {
  if (!PrincipalToken.safeParse(instance).success) {
    notes.push(`the manager's instance id ${instance} cannot name a credential; it runs on the operator's (delete .cotal/manager/instance to get a new id)`);
    return t.creds;
  }
  const file = join(stateDir, "manager.creds");
  await keepHostCredential(t, file, hostManager(instance), notes);
  return file;
}

/** The host manager as a kept credential. */
function hostManager(instance: string): HostIdentity {
  return { name: instance, profile: "manager", label: "the host manager's credential" };
}

/**
 * Whether a manager credential carries exactly the rights this version mints for it: a credential
 * minted by an older Cotal keeps the rights it was signed with (e.g. serving every instance's
 * subjects) until it is minted again.
 */
export function managerRightsCurrent(creds: Uint8Array, space: string, instance: string): boolean {
  return rightsCurrent(creds, space, hostManager(instance));
}

/** Stop the mesh host's manager (it stops its seats first); `cotal down`. */
export async function stopManager(root: MeshRoot): Promise<{ pid?: number; result: "stopped" | "killed" | "not-running" | "not-recorded" }> {
  const file = root.pidFile("manager");
  const read = readRecordFile(file);
  const rec = read.kind === "ok" ? read.record : undefined;
  const found = findManagers(root).filter((p) => !(rec && p.pid === rec.pid && p.startTime === rec.startTime));
  let report: Awaited<ReturnType<typeof stopManager>> = rec ? { pid: rec.pid, result: await stopProcess(rec, 30_000) } : { result: "not-recorded" };
  for (const p of found) {
    const result = await stopProcess(p, 30_000);
    if (report.result === "not-recorded" || report.result === "not-running") report = { pid: p.pid, result };
  }
  removeRecord(file);
  return report;
}

/** Managers of this project running now, by their command line (`cotal manager … --state-dir <.cotal/manager>`). */
export function findManagers(root: MeshRoot): ProcessRecord[] {
  let stateDir: string;
  try {
    stateDir = realpathSync(join(root.dir, "manager"));
  } catch {
    return [];
  }
  return findProcesses((argv) => {
    const i = argv.indexOf("--state-dir");
    if (!argv.includes("manager") || i < 0) return false;
    try {
      return realpathSync(argv[i + 1] ?? "") === stateDir;
    } catch {
      return false;
    }
  });
}
