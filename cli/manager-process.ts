import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { homedir, hostname } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  AuthenticationRefusedError,
  callControl,
  connectMesh,
  controlCaller,
  credsCaller,
  credsClaims,
  permissionsFor,
  requestCredential,
  requestRevoke,
  writeSecret,
} from "../broker/index.js";
import { claudeShellEnv, ClaudeAuthChoice, resolveClaudeAuth } from "../claude/index.js";
import { renewalDueAt, RUNTIMES } from "../manager/index.js";
import { localPrincipal, MANAGER_COMMANDS, ManagerInstance, PrincipalToken, type ClaudeAuthStatus } from "../schemas/index.js";
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
  /** How its Claude seats and runs authenticate (absent: it cannot start Claude). */
  claudeAuth?: ClaudeAuthStatus;
}

/** `cotal up`'s Claude auth choice when none is given: COTAL_CLAUDE_AUTH, else auto. */
export function defaultClaudeAuth(env: NodeJS.ProcessEnv = process.env): ClaudeAuthChoice {
  return ClaudeAuthChoice.parse(env.COTAL_CLAUDE_AUTH ?? "auto");
}

/**
 * Keep the mesh host's manager running beside the mesh service (`cotal up`): adopt the recorded
 * one when it answers, else (re)start `cotal manager` detached, on the operator's credential, with
 * its state in `.cotal/manager`. It stops its seats when stopped (`cotal down`).
 *
 * Claude auth (docs/claude-binding.md, Auth): the manager's Claude seats and runs authenticate as
 * `claude` in this shell would. The choice goes on its command line (`--claude-auth`, no secret);
 * the Claude part of this shell's environment (claudeShellEnv: the chosen mode's switch or secret,
 * the provider, network and Claude settings) goes into its environment, never onto a command line.
 * A running manager keeps the auth it was started with; a note says when this shell's differs.
 */
export async function ensureManager(
  root: MeshRoot,
  t: { server: string; space: string; creds?: string | undefined },
  notes: string[],
  claudeAuth: ClaudeAuthChoice = defaultClaudeAuth(),
): Promise<ManagerUp> {
  const stateDir = join(root.dir, "manager");
  const instance = managerInstance(stateDir);
  const file = root.pidFile("manager");
  const read = readRecordFile(file);
  const rec = read.kind === "ok" && isRunning(read.record) ? read.record : findManagers(root)[0];
  let status: { claudeAuth?: ClaudeAuthStatus | undefined } | undefined;
  const answers = async (nc: NatsConnection) => {
    try {
      status = await callManager(nc, t.space, "status", credsCaller(t.creds), {}, { target: instance, timeoutMs: 1_000 });
      return true;
    } catch {
      return false;
    }
  };
  const mode = resolveClaudeAuth(claudeAuth, process.env);
  const authOf = () => (status?.claudeAuth ? { claudeAuth: status.claudeAuth } : {});
  let state: ManagerUp["state"] = "started";
  if (rec) {
    const nc = await connectMesh({ server: t.server, creds: t.creds, name: "cotal-up" });
    const alive = await answersWithin(nc, answers).finally(() => nc.close().catch(() => undefined));
    if (alive) {
      writeRecord(file, rec);
      if (t.creds && PrincipalToken.safeParse(instance).success)
        await renewManagerCredential(t as StaticTarget, join(stateDir, "manager.creds"), instance, notes);
      const running = status?.claudeAuth?.mode;
      if (running && running !== mode)
        notes.push(
          `the running manager's Claude seats authenticate with ${running}, this shell's with ${mode}; it keeps ${running} (\`cotal down\` then \`cotal up\` from this shell to change it)`,
        );
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
    "--claude-auth",
    claudeAuth,
    ...(creds ? ["--creds", creds] : []),
  ];
  const runtimesEnv = Object.assign({}, ...RUNTIMES.map((r) => r.shellEnv?.(process.env) ?? {})) as Record<string, string>;
  const started = await startDetached(root, "manager", "the manager", args, t, 20_000, answers, { ...runtimesEnv, ...claudeShellEnv(process.env, mode) });
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
  let stale = false;
  if (existsSync(file)) {
    const known = await managerCredentialKnown(t, file);
    stale = known !== false && !managerRightsCurrent(readFileSync(file), t.space, instance);
    if (known !== false && !stale) {
      await renewManagerCredential(t, file, instance, notes);
      return file;
    }
    notes.push(
      stale
        ? "the host manager's credential carried the rights of an older Cotal (a manager's rights were narrowed since): revoked it and minted it again"
        : "the host manager's credential is not one this mesh knows (minted before its store was replaced, revoked, or expired): minted it again",
    );
  }
  await mintManagerCredential(t, file, instance, { revokeOlder: stale, lifetimeMs: existsSync(file) ? lifetimeOf(file) : undefined });
  return file;
}

type StaticTarget = { server: string; space: string; creds: string };

/**
 * Mint the host manager's credential as the operator and write it atomically, 0600, over `file`
 * (a running manager reads it at its next reconnect). `revokeOlder`: every earlier credential of
 * the name is revoked first. `lifetimeMs`: the new one expires (undefined: never, the operator's default).
 */
async function mintManagerCredential(
  t: StaticTarget,
  file: string,
  instance: string,
  o: { revokeOlder?: boolean; lifetimeMs?: number | undefined },
): Promise<void> {
  const nc = await connectMesh({ server: t.server, creds: t.creds, name: "cotal-up" });
  try {
    // An older credential must not stay valid beside the new one: its wider rights are the point.
    if (o.revokeOlder) await requestRevoke(nc, t.space, instance);
    const { creds } = await requestCredential(nc, t.space, { name: instance, profile: "manager", ...(o.lifetimeMs ? { expiresInMs: o.lifetimeMs } : {}) });
    writeSecret(file, creds);
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/** How long a credential file was signed to live (ms), or undefined when it never expires. */
function lifetimeOf(file: string): number | undefined {
  const c = credsClaims(readFileSync(file));
  return c?.exp !== undefined && c.iat !== undefined ? (c.exp - c.iat) * 1000 : undefined;
}

/**
 * The host manager's credential, when it expires, is minted again by `cotal up` once less than a
 * third of its life is left (renewalDueAt, as a manager renews its seats'), with the same lifetime:
 * the running manager takes the new file at its next reconnect, at the latest when the server closes
 * its expired connection (docs/security.md, Credential lifetime and renewal). The older credential
 * is not revoked: it expires by itself. The operator mints it without an expiry, so by default this never comes.
 */
async function renewManagerCredential(t: StaticTarget, file: string, instance: string, notes: string[]): Promise<void> {
  if (!existsSync(file)) return;
  const due = renewalDueAt(file);
  const lifetimeMs = lifetimeOf(file);
  if (due === undefined || lifetimeMs === undefined || Date.now() < due) return;
  const expires = new Date(credsClaims(readFileSync(file))!.exp! * 1000).toISOString();
  await mintManagerCredential(t, file, instance, { lifetimeMs });
  notes.push(
    `the host manager's credential had less than a third of its life left (it expires at ${expires}): minted it again with the same lifetime; the running manager takes it at its next reconnect`,
  );
}

/**
 * Whether a manager credential carries exactly the rights this version mints for it: a credential
 * minted by an older Cotal keeps the rights it was signed with (e.g. serving every instance's
 * subjects) until it is minted again.
 */
export function managerRightsCurrent(creds: Uint8Array, space: string, instance: string): boolean {
  const claims = credsClaims(creds);
  if (!claims) return false;
  const want = permissionsFor({ space, who: localPrincipal(instance), profile: "manager" });
  const same = (a: readonly string[], b: readonly string[] = []) => a.length === b.length && [...a].sort().join("\n") === [...b].sort().join("\n");
  return same(claims.pubAllow, want.pub?.allow) && same(claims.subAllow, want.sub?.allow);
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
