import type { Command } from "commander";
import { z } from "zod";
import { MeshUnavailableError } from "../../broker/index.js";
import { names } from "../../schemas/index.js";
import { jsonOption, meshOptions, resolveTarget, type MeshTarget } from "../mesh-client/mesh-target.js";
import { EXIT } from "../terminal/errors.js";
import { rosterJson, rosterTable, type RosterRow } from "../terminal/format.js";
import { printJson, printLines } from "../terminal/output.js";
import { isRunning, readRecord } from "../mesh-host/pid-file.js";
import { notNatsAt, pingMeshService } from "../mesh-host/probe.js";
import { credsCaller, isPermissionDenied, isStreamNotFound } from "../../broker/index.js";
import { credentialLabel, credentialScope } from "../identity/credential-scope.js";
import { listManagers, withStatus, type ManagerEntry } from "../mesh-client/manager-calls.js";
import type { ServiceLog } from "../mesh-host/mesh-root.js";
import { MeshSession } from "../mesh-client/session.js";
import { parseInput } from "../terminal/validate.js";
import { checkComponents, COMPONENTS, type Component } from "../mesh-host/components.js";
import { meshNodes } from "../mesh-host/cluster-nodes.js";
import { describeSync } from "../mesh-host/sync-interval.js";
import { authLines } from "../mesh-host/runtime-auth.js";

/** The state of one of the space's streams. */
export interface StreamStatus {
  name: string;
  exists: boolean;
  messages?: number;
  bytes?: number;
  consumers?: number;
}

/** Everything `cotal status` reports. */
export interface StatusReport {
  server: string;
  space: string;
  /** From mesh.json; named by --server/COTAL_SERVER, whether the server requires authentication (unknown when unreachable). */
  mode: string;
  reachable: boolean;
  /** What answered at the server address when it was not a NATS server (an HTTP port …). */
  notNats?: string;
  /** Whether the server asks clients to authenticate. */
  authRequired?: boolean;
  /** The version the server reported when we connected. */
  serverVersion?: string;
  /** JetStream's sync_interval, from mesh.json (on the mesh host only; off-host it is not known). */
  sync?: string;
  error?: string;
  root?: string;
  processes?: { natsServer: ProcessStatus; meshService: ProcessStatus; manager: ProcessStatus; nodes?: Array<ProcessStatus & { name: string }> };
  /** Managers whose heartbeat is current (`cotal ps` lists their seats). */
  managers?: ManagerEntry[];
  meshService?: { answering: boolean; pid?: number };
  streams: StreamStatus[];
  /** Set when the credential may not read stream state (every profile but the operator's). */
  streamsHidden?: string;
  roster: RosterRow[];
}

interface ProcessStatus {
  pid?: number;
  running: boolean;
}

/** `cotal status`: is the mesh up, what is stored, who is here. */
export function registerStatus(program: Command): void {
  const cmd = program
    .command("status")
    .summary("show the mesh: server, space, mode, streams, roster")
    .description(
      "Show the mesh this folder belongs to (or the one named by --server/--space): whether the server answers, " +
        "whether its mesh service answers, the space's streams with their message counts, and the roster. " +
        "Exits 3 when the server cannot be reached, 6 when its mesh service does not answer.",
    );
  cmd.option(
    "--components [names]",
    `health check for supervisors: check ${COMPONENTS.join(", ")} (all, or the comma-separated names given) and exit with the sum of the failing ones' codes (nats-server 8, mesh-service 16, manager 32; 0: all healthy)`,
  );
  jsonOption(meshOptions(cmd)).action(async (raw: Record<string, unknown>) => {
    const flags = parseInput(z.object({ json: z.boolean().optional(), components: ComponentsFlag.optional() }).passthrough(), raw);
    const target = resolveTarget(raw);
    if (flags.components) {
      const r = await checkComponents(target, flags.components);
      if (flags.json) printJson(r);
      else printLines(...r.checks.map((c) => `${c.name.padEnd(16)} ${c.healthy ? "ok     " : "FAILING"} ${c.detail}`), `exit code: ${r.exitCode}`);
      process.exitCode = r.exitCode;
      return;
    }
    const report = await collectStatus(target);
    if (flags.json) printJson(report);
    else printLines(...describeStatus(report));
    if (!report.reachable) process.exitCode = EXIT.unreachable;
    else if (!report.meshService?.answering) process.exitCode = EXIT.meshService;
  });
}

/** `--components` alone (every component) or a comma-separated list of them. */
const ComponentsFlag = z.union([
  z.literal(true).transform(() => COMPONENTS),
  z.string().transform((v, ctx) => {
    const names = v
      .split(",")
      .map((x) => x.trim())
      .filter(Boolean);
    const bad = names.filter((n) => !(COMPONENTS as string[]).includes(n));
    if (bad.length || names.length === 0) {
      ctx.addIssue({ code: "custom", message: `components are ${COMPONENTS.join(", ")}${bad.length ? ` (not ${bad.join(", ")})` : ""}` });
      return z.NEVER;
    }
    return names as Component[];
  }),
]);

const STREAMS = [names.chatStream, names.dmStream, names.taskStream, names.seatsStream];

async function collectStatus(t: MeshTarget): Promise<StatusReport> {
  const report: StatusReport = {
    ...(t.root ? { root: t.root.dir } : {}),
    server: t.server,
    space: t.space,
    mode: t.info?.mode ?? "unknown",
    ...(t.info ? { sync: t.info.sync ?? "2m" } : {}),
    reachable: false,
    streams: [],
    roster: [],
  };
  if (t.root) {
    const proc = (name: ServiceLog): ProcessStatus => {
      const rec = readRecord(t.root!.pidFile(name));
      return rec ? { pid: rec.pid, running: isRunning(rec) } : { running: false };
    };
    const nodes = t.info?.cluster ? meshNodes(t.root, t.info).map((n) => ({ name: n.name, ...proc(n.name) })) : undefined;
    report.processes = {
      natsServer: nodes?.[0] ?? proc("nats-server"),
      meshService: proc("mesh-service"),
      manager: proc("manager"),
      ...(nodes ? { nodes } : {}),
    };
  }
  let session: MeshSession;
  // Something that is not NATS at that port would hold the connect for 20 s, then read as "down".
  const other = await notNatsAt(t.server);
  if (other) {
    report.notNats = other;
    report.error = `${other} answered there, not a NATS server: --server names the mesh's NATS client port (mesh.json's server; 4222 by default)`;
    return report;
  }
  try {
    session = await MeshSession.open(t, false);
  } catch (err) {
    if (!(err instanceof MeshUnavailableError)) throw err;
    report.error = err.cause instanceof Error ? err.cause.message : err.message;
    return report;
  }
  try {
    report.reachable = true;
    report.authRequired = session.nc.info?.auth_required ?? false;
    if (session.nc.info?.version) report.serverVersion = session.nc.info.version;
    // Named by --server (no mesh.json here): the server's own answer tells the mode.
    if (report.mode === "unknown") report.mode = report.authRequired ? "static" : "open";
    const ping = await pingMeshService(session.nc, t.space, undefined, credsCaller(t.creds));
    report.meshService = ping ? { answering: true, pid: ping.pid } : { answering: false };
    const hidden = () => `${credentialLabel(t.creds ? credentialScope(t.creds) : undefined)} may not read stream state`;
    if (!session.mayReadStreams) report.streamsHidden = hidden();
    for (const name of session.mayReadStreams ? STREAMS.map((f) => f(t.space)) : []) {
      try {
        const info = await session.jsm.streams.info(name);
        report.streams.push({ name, exists: true, messages: info.state.messages, bytes: info.state.bytes, consumers: info.state.consumer_count });
      } catch (err) {
        if (isPermissionDenied(err)) {
          report.streamsHidden = hidden();
          report.streams = [];
          break;
        }
        if (!isStreamNotFound(err)) throw err;
        report.streams.push({ name, exists: false });
      }
    }
    // Only the operator's credential reaches the managers (an agent's may not read their bucket).
    // Heartbeats say only whether each manager's auth is ready; its own `status` says with what (the operator's).
    if (session.mayReadStreams)
      report.managers = await listManagers(session)
        .then((ms) => withStatus(session, ms))
        .catch(() => undefined);
    // A client credential's roster comes from the mesh service: without it there is none to show.
    if ((report.meshService.answering || !session.isClient) && report.streams.every((s) => s.exists)) {
      const now = Date.now();
      report.roster = (await session.roster()).entries(now).map((e) => rosterJson(e, now));
    }
  } finally {
    await session.close();
  }
  return report;
}

function describeStatus(r: StatusReport): string[] {
  const lines: string[] = [];
  if (r.root) lines.push(`mesh:         ${r.root}`);
  lines.push(`server:       ${r.server}  (${r.reachable ? "reachable" : `NOT reachable${r.error ? `: ${r.error}` : ""}`})`);
  lines.push(`space:        ${r.space}`);
  lines.push(`mode:         ${r.mode}${r.authRequired !== undefined ? `  (server ${r.authRequired ? "requires" : "does not require"} authentication)` : ""}`);
  if (r.serverVersion) lines.push(`nats-server:  v${r.serverVersion}`);
  if (r.sync) lines.push(`durability:   sync ${describeSync(r.sync)}`);
  if (r.processes) {
    const p = (s: ProcessStatus) => (s.pid === undefined ? "not started" : `pid ${s.pid} ${s.running ? "running" : "NOT running"}`);
    const nats = r.processes.nodes ? r.processes.nodes.map((n) => `${n.name} ${p(n)}`).join("; ") : `nats-server ${p(r.processes.natsServer)}`;
    lines.push(`processes:    ${nats}; mesh service ${p(r.processes.meshService)}; manager ${p(r.processes.manager)}`);
  }
  if (r.managers) {
    lines.push(
      `managers:     ${r.managers.length === 0 ? "none (seats need one: `cotal up` starts one here, `cotal manager` on other hosts)" : r.managers.map((m) => `${m.instance} on ${m.host ?? "?"} (${m.seats ?? 0}/${m.maxSeats ?? "?"} seats)`).join(", ")}`,
    );
    for (const m of r.managers) {
      lines.push(...authLines(m.runtimes, r.managers.length > 1 ? `${m.instance}: ` : ""));
      // The other runtimes' configuration (a runtime with a choice of auth has its auth line above).
      for (const rt of (m.runtimes ?? []).filter((x) => !x.auth))
        lines.push(
          `${`${rt.name} config: `.padEnd(14)}${r.managers.length > 1 ? `${m.instance}: ` : ""}${rt.config ?? "(configuration not shown)"}${rt.ready ? "" : `, NOT READY: ${rt.problem ?? "credentials missing"} ${rt.remedy ?? ""}`.trimEnd()}`,
        );
    }
  }
  if (r.meshService)
    lines.push(
      `mesh service: ${r.meshService.answering ? `answering (pid ${r.meshService.pid})` : "NOT answering (run `cotal up --detach` on the mesh host to repair it)"}`,
    );
  if (!r.reachable) {
    if (r.notNats) return lines; // the error says what answered and what --server should name
    lines.push("", "Start it with `cotal up` (or check --server / COTAL_SERVER).");
    return lines;
  }
  lines.push("", `streams:${r.streamsHidden ? `      not shown (${r.streamsHidden})` : ""}`);
  for (const s of r.streams)
    lines.push(`  ${s.name.padEnd(24)} ${s.exists ? `${s.messages} message${s.messages === 1 ? "" : "s"}` : "MISSING (run `cotal up`)"}`);
  lines.push("", `roster (${r.roster.filter((e) => e.status !== "offline").length} online, ${r.roster.length} known):`);
  if (r.roster.length === 0) lines.push("  nobody has joined yet");
  else lines.push(...rosterTable(r.roster).map((l) => `  ${l}`));
  return lines;
}
