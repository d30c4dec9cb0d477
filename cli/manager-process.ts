import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { homedir, hostname } from "node:os";
import { join, resolve } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { AuthenticationRefusedError, callControl, connectMesh, controlCaller, credsCaller, requestCredential, writeSecret } from "../broker/index.js";
import { MANAGER_COMMANDS, ManagerInstance, PrincipalToken } from "../schemas/index.js";
import type { MeshTarget } from "./context.js";
import type { MeshRoot } from "./mesh-root.js";
import { findProcesses, isRunning, readRecordFile, removeRecord, stopProcess, writeRecord, type ProcessRecord } from "./pid-file.js";
import { startDetached } from "./service-process.js";

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
}

/**
 * Keep the mesh host's manager running beside the mesh service (`cotal up`): adopt the recorded
 * one when it answers, else (re)start `cotal manager` detached, on the operator's credential, with
 * its state in `.cotal/manager`. It stops its seats when stopped (`cotal down`).
 */
export async function ensureManager(root: MeshRoot, t: { server: string; space: string; creds?: string | undefined }, notes: string[]): Promise<ManagerUp> {
  const stateDir = join(root.dir, "manager");
  const instance = managerInstance(stateDir);
  const file = root.pidFile("manager");
  const read = readRecordFile(file);
  const rec = read.kind === "ok" && isRunning(read.record) ? read.record : findManagers(root)[0];
  const answers = async (nc: NatsConnection) => {
    try {
      await callManager(nc, t.space, "status", credsCaller(t.creds), {}, { target: instance, timeoutMs: 1_000 });
      return true;
    } catch {
      return false;
    }
  };
  let state: ManagerUp["state"] = "started";
  if (rec) {
    const nc = await connectMesh({ server: t.server, creds: t.creds, name: "cotal-up" });
    const alive = await answers(nc).finally(() => nc.close().catch(() => undefined));
    if (alive) {
      writeRecord(file, rec);
      return { state: "running", pid: rec.pid, instance, log: root.log("manager") };
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
    ...(creds ? ["--creds", creds] : []),
  ];
  const started = await startDetached(root, "manager", "the manager", args, t, 20_000, answers);
  writeRecord(file, started);
  return { state, pid: started.pid, instance, log: root.log("manager") };
}

/**
 * The mesh host's manager runs on a credential of its own, profile `manager`, named like its
 * instance (minted once, 0600 in its state dir): the broker then scopes it as it scopes a manager on
 * another host (agent credentials for its seats, and only its own transfer bucket), instead of the
 * operator's credential. An instance id that cannot be a name (an older one with '-') keeps the
 * operator's credential, and a note says so.
 */
async function managerCredential(t: { server: string; space: string; creds: string }, stateDir: string, instance: string, notes: string[]): Promise<string> {
  if (!PrincipalToken.safeParse(instance).success) {
    notes.push(`the manager's instance id ${instance} cannot name a credential; it runs on the operator's (delete .cotal/manager/instance to get a new id)`);
    return t.creds;
  }
  const file = join(stateDir, "manager.creds");
  if (existsSync(file)) {
    if ((await managerCredentialKnown(t, file)) !== false) return file;
    notes.push("the host manager's credential is not one this mesh knows (minted before its store was replaced, or revoked): minted it again");
  }
  const nc = await connectMesh({ server: t.server, creds: t.creds, name: "cotal-up" });
  try {
    const { creds } = await requestCredential(nc, t.space, { name: instance, profile: "manager" });
    writeSecret(file, creds);
  } finally {
    await nc.close().catch(() => undefined);
  }
  return file;
}

/**
 * Whether the mesh still knows `file` as a manager's credential: false when the broker refuses it
 * or the mesh service holds no manager record of its name (a store started anew, as when a
 * folder's single node becomes a cluster, keeps the account keys, so the credential connects, but
 * not the records: every seat's mint would be refused). Undefined when it cannot tell (an older
 * mesh service without `whoami`): the file is kept.
 */
async function managerCredentialKnown(t: { server: string; space: string }, file: string): Promise<boolean | undefined> {
  let nc: NatsConnection;
  try {
    nc = await connectMesh({ server: t.server, creds: file, name: "cotal-up" });
  } catch (err) {
    return err instanceof AuthenticationRefusedError ? false : undefined;
  }
  try {
    const me = await callControl(nc, t.space, "whoami", credsCaller(file), {}, { timeoutMs: 5_000 });
    return me.profile === "manager";
  } catch {
    return undefined;
  } finally {
    await nc.close().catch(() => undefined);
  }
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
