import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { requestRevoke } from "../broker/index.js";
import type { Principal, SeatAgent } from "../schemas/index.js";
import { newControlToken, writeLaunchMaterial } from "./launch-material-file.js";
import { startSeatProcess, type SeatProcess } from "./process-host.js";
import { mintSeatCredential } from "./seat-credential.js";

/** What the launcher needs from the manager that runs it. */
export interface LauncherOptions {
  space: string;
  /** The server URL seats connect to. */
  server: string;
  /** Seat folders go under `<stateDir>/seats/<name>`. */
  stateDir: string;
  /** Static meshes: mint a credential per incarnation (the manager holds the operator's or a `manager` credential). */
  mints: boolean;
  /** Who the manager calls the mesh service as (its credential's principal; default the operator's tool). */
  caller?: Principal;
  /** How long a seat's credential lives before the manager mints it again (default 30 days; seat-credential.ts). */
  seatCredsLifetimeMs?: number;
  /** The command line that runs `agent` with COTAL_LAUNCH_MATERIAL (the CLI's hidden `cotal agent <agent>`). */
  agentCommand: (agent: SeatAgent) => string[];
  /** How long a seat's permission ask waits for a person before it is denied, ms (launch material; default the connector's 5 minutes). */
  approvalTimeoutMs?: number;
  /** The environment a seat starts with (the CLI's allow-list), plus what is added here. */
  seatEnv: (extra: Record<string, string>) => NodeJS.ProcessEnv;
}

/** One seat incarnation's files: launch material, credential, log. */
export interface SeatFiles {
  dir: string;
  material: string;
  creds?: string;
  log: string;
}

/** The folder a seat's files live in. */
export function seatDir(stateDir: string, name: string): string {
  return join(stateDir, "seats", name);
}

/**
 * Prepare an incarnation: mint its credential (static meshes) and write its launch material,
 * both 0600 in the seat's own 0700 folder.
 */
export async function prepareSeat(
  nc: NatsConnection,
  o: LauncherOptions,
  seat: {
    name: string;
    uid: string;
    /** The agent the seat runs (its card's `runtime`, and which session file its event plane reads). */
    agent: SeatAgent;
    role?: string | undefined;
    channels: string[];
    allowSubscribe: string[];
    allowPublish: string[];
    noEvents?: boolean;
    /** Personas its credential may spawn helpers of (the operator's spawn only; docs/manager.md, Helpers). */
    allowSpawn?: string[] | undefined;
    spawnLimit?: number | undefined;
    /** The agent files of those personas as they are now (the grant pins them; docs/manager.md, Helpers). */
    personaDigests?: Record<string, string> | undefined;
    /** The manager instance that runs it (launch material `manager`: where its helpers are spawned). */
    manager?: string | undefined;
    /** Who spawned it (its owner: may answer its permission asks). */
    spawnedBy?: string | undefined;
    posture?: "unattended" | "supervised" | undefined;
  },
): Promise<SeatFiles> {
  const dir = seatDir(o.stateDir, seat.name);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const files: SeatFiles = { dir, material: join(dir, "launch.json"), log: join(dir, "seat.log") };
  if (o.mints) {
    files.creds = join(dir, `${seat.uid}.creds`);
    await mintSeatCredential(nc, { space: o.space, caller: o.caller, lifetimeMs: o.seatCredsLifetimeMs, server: o.server }, files.creds, {
      name: seat.name,
      profile: "agent",
      approve: [],
      allowSubscribe: seat.allowSubscribe,
      allowPublish: seat.allowPublish,
      ...(seat.role ? { role: seat.role } : {}),
      // A seat writes its own event plane (docs/events.md), unless spawned with --no-events.
      events: !seat.noEvents,
      allowSpawn: seat.allowSpawn ?? [],
      ...(seat.spawnLimit !== undefined ? { spawnLimit: seat.spawnLimit } : {}),
      ...(seat.personaDigests ? { personaDigests: seat.personaDigests } : {}),
    });
  }
  writeLaunchMaterial(files.material, {
    server: o.server,
    space: o.space,
    name: seat.name,
    ...(seat.role ? { role: seat.role } : {}),
    channels: seat.channels,
    ...(files.creds ? { creds: files.creds } : {}),
    uid: seat.uid,
    controlToken: newControlToken(),
    runtime: seat.agent,
    ...(seat.noEvents ? { noEvents: true } : {}),
    ...(seat.manager ? { manager: seat.manager } : {}),
    ...(seat.spawnedBy ? { spawnedBy: seat.spawnedBy } : {}),
    ...(seat.posture === "supervised" ? { posture: seat.posture } : {}),
    ...(o.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: o.approvalTimeoutMs } : {}),
  });
  return files;
}

/** Start the incarnation's process (the `process` terminal host). */
export function launchSeat(o: LauncherOptions, agent: SeatAgent, files: SeatFiles): SeatProcess {
  return startSeatProcess({
    argv: o.agentCommand(agent),
    env: o.seatEnv({ COTAL_LAUNCH_MATERIAL: files.material }),
    cwd: files.dir,
    logFile: files.log,
  });
}

/**
 * Fence a retired incarnation off the broker: revoke every credential of the name (static
 * meshes), then remove its folder (launch material, credential, log). Call only once its process is gone.
 */
export async function retireSeatFiles(nc: NatsConnection, o: LauncherOptions, name: string): Promise<number> {
  const revoked = o.mints ? (await requestRevoke(nc, o.space, name, o.caller)).revoked : 0;
  rmSync(seatDir(o.stateDir, name), { recursive: true, force: true });
  return revoked;
}
