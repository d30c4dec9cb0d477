// `cotal doctor`: the mesh answers with this credential (server, space, mesh service), and this
// host's clock agrees with the server's, which judges when a credential expires. A cluster on a
// server that does not handle a full disk is named (broker/full-disk-risk.ts).
import { AuthenticationRefusedError, credsCaller, FULL_DISK_REMEDY, fullDiskRisk } from "../../broker/index.js";
import { durables, names } from "../../schemas/index.js";
import type { MeshTarget } from "../mesh-client/mesh-target.js";
import { credentialLabel, credentialScope } from "../identity/credential-scope.js";
import { notNatsAt, pingMeshService } from "../mesh-host/probe.js";
import { MeshSession } from "../mesh-client/session.js";
import { failed, failedWith, pass, skipped, warned, type DoctorCheck } from "./check.js";

const MESH = { id: "mesh", title: "mesh" } as const;
const CLOCK = { id: "clock", title: "clock skew" } as const;

/** Beyond this the skew is named (times shown here, `--since` windows and expiry notes are off by it). */
export const CLOCK_WARN_MS = 2_000;
/** Beyond this it fails: a credential renewed or judged by this clock can expire early or be taken as valid late. */
export const CLOCK_FAIL_MS = 60_000;

const RENEW = "Ask the mesh admin for a new credential (`cotal mint NAME --replace …` on the mesh host), then pass it with --creds (or COTAL_CREDS).";

/**
 * The mesh and clock checks. `target` undefined: no mesh here (both skipped); `targetError`: the
 * mesh named could not even be addressed (a credential for another space, a space not provisioned).
 */
export async function meshChecks(target: MeshTarget | undefined, targetError?: unknown): Promise<DoctorCheck[]> {
  if (targetError !== undefined)
    return [failedWith(MESH.id, MESH.title, targetError, RENEW), skipped(CLOCK.id, CLOCK.title, "the mesh could not be addressed.")];
  if (!target) {
    const why = "no mesh here (no .cotal/mesh.json at or above this folder, no --server/COTAL_SERVER).";
    return [skipped(MESH.id, MESH.title, `${why} \`cotal up\` starts one.`), skipped(CLOCK.id, CLOCK.title, why)];
  }
  const unreachable = skipped(CLOCK.id, CLOCK.title, "the mesh could not be reached with this credential (see the mesh check).");
  const other = await notNatsAt(target.server);
  if (other)
    return [
      failed(
        MESH.id,
        MESH.title,
        `${other} answered at ${target.server}, not a NATS server.`,
        "Name the mesh's NATS client port (mesh.json's server; 4222 by default) with --server.",
      ),
      unreachable,
    ];
  const scope = target.creds ? credentialScope(target.creds) : undefined;
  const as = target.creds ? `${credentialLabel(scope)} (${target.creds})` : "no credential (open mesh)";
  let session: MeshSession;
  try {
    session = await MeshSession.open(target);
  } catch (err) {
    const check =
      err instanceof AuthenticationRefusedError
        ? failed(
            MESH.id,
            MESH.title,
            failedWith(MESH.id, MESH.title, err, RENEW).detail,
            err.reason === "no-credential" ? "Pass --creds FILE (or set COTAL_CREDS) with one minted by `cotal mint` on the mesh host." : RENEW,
          )
        : failedWith(MESH.id, MESH.title, err, "Start the mesh with `cotal up` on its host, or check --server / --space.");
    return [check, unreachable];
  }
  try {
    const ping = await pingMeshService(session.nc, target.space, undefined, credsCaller(target.creds));
    const version = session.nc.info?.version ? `nats-server v${session.nc.info.version}` : "nats-server";
    const head = `${target.server} (${version}), space ${target.space}, as ${as}`;
    const expiry = scope?.expiresAt !== undefined ? `; the credential expires ${new Date(scope.expiresAt).toISOString()}` : "";
    const risk = fullDiskRisk(session.nc);
    const mesh = ping
      ? risk
        ? warned(MESH.id, MESH.title, `${head}: the mesh service answers (pid ${ping.pid})${expiry}; but ${risk}.`, FULL_DISK_REMEDY)
        : pass(MESH.id, MESH.title, `${head}: the mesh service answers (pid ${ping.pid})${expiry}.`)
      : failed(
          MESH.id,
          MESH.title,
          `${head}: the server answers, the mesh service does not${expiry}.`,
          "Run `cotal up --detach` on the mesh host: it starts the mesh service again.",
        );
    return [mesh, await clockCheck(session)];
  } finally {
    await session.close();
  }
}

/**
 * The server's clock, from the time stamp a JetStream info reply carries (nats-server 2.10 and
 * newer), against this host's at the middle of the round trip.
 */
async function clockCheck(s: MeshSession): Promise<DoctorCheck> {
  const space = s.target.space;
  // What this credential may ask: the operator's (and an open mesh) the space's stream, an agent its own DM inbox.
  const ask = s.mayReadStreams
    ? () => s.jsm.streams.info(names.chatStream(space)).then((i) => i.ts)
    : () => s.jsm.consumers.info(names.dmStream(space), durables.dm(credsCaller(s.target.creds))).then((i) => i.ts);
  let ts: string | undefined;
  const sent = Date.now();
  try {
    ts = await ask();
  } catch {
    return skipped(
      CLOCK.id,
      CLOCK.title,
      `${credentialLabel(s.target.creds ? credentialScope(s.target.creds) : undefined)} may not read stream state, and has no DM inbox yet: the server's time cannot be read with it.`,
    );
  }
  const back = Date.now();
  const server = ts ? Date.parse(ts) : NaN;
  if (Number.isNaN(server)) return skipped(CLOCK.id, CLOCK.title, "the server's replies carry no time stamp (nats-server before 2.10).");
  const rtt = back - sent;
  const skew = server - (sent + back) / 2;
  // What the round trip leaves unknown is not counted against the clock.
  const beyond = Math.max(0, Math.abs(skew) - rtt / 2);
  const said = `this host's clock is ${formatMs(Math.abs(skew))} ${skew > 0 ? "behind" : "ahead of"} the server's (± ${formatMs(rtt / 2)})`;
  const fix = "Synchronise this host's clock with NTP (`timedatectl set-ntp true`, chrony or ntpd), and the mesh host's.";
  if (beyond > CLOCK_FAIL_MS)
    return failed(CLOCK.id, CLOCK.title, `${said}: credentials are judged by the server's clock, so their expiry and renewal are off by that much.`, fix);
  if (beyond > CLOCK_WARN_MS) return warned(CLOCK.id, CLOCK.title, `${said}: times shown here and --since windows are off by that much.`, fix);
  return pass(CLOCK.id, CLOCK.title, `${said}.`);
}

function formatMs(ms: number): string {
  return ms >= 10_000 ? `${Math.round(ms / 1000)} s` : ms >= 1_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}
