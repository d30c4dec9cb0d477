// What a one-credential flood costs everyone else (`node dist/bench-flood.mjs`, run by `npm run
// bench`; BENCH_QUICK=1: a shorter flood). A real mesh as `cotal up --detach` starts it in a fresh
// folder (operator mode, its own nats-server on a free port, the mesh service and the manager as
// processes, their logs bounded in .cotal/logs/), and two minted agent credentials: a bystander and
// a flooder. The bystander's control-call latency (`ping` to the mesh service, one after another)
// is measured quiet, then while the flooder, a raw client in a process of its own, publishes its
// own beat (8 bytes, not JSON) and reply-less control requests as fast as the server takes them;
// then the operator revokes the flooder. The row is the flood's p50 beside the quiet p50: the
// ratio is what the flood costs a bystander. Lines after the table: what the flood sent, and what
// it cost the mesh service's log.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { callControl, connectMesh, credsCaller } from "../broker/index.js";
import { beatSubject, controlSubject, localPrincipal } from "../schemas/index.js";
import { flood, type FloodResult } from "../testbed/flooder.js";
import { freePort } from "../testbed/ports.js";
import { ProcessRecord } from "../cli/mesh-host/pid-file.js";
import type { Tally } from "./checks.js";
import { CpuAccount } from "./cpu.js";
import { fmt, type BenchReport, type BenchRun } from "./report.js";
import { summarize } from "./stats.js";

export interface FloodPlan {
  /** Pings measured before the flood. */
  quietPings: number;
  /** How long the flood lasts, ms (the bystander pings throughout). */
  floodMs: number;
  /** How long after it the log is read, ms: the mesh service writes what it only counted within its sampling interval (10 s). */
  settleMs: number;
  /**
   * How long one call may take before it counts as unanswered, ms: the CLI's default (5 s) where
   * the figures are what a user sees; longer in the smoke plan, whose counts must not hang on how
   * loaded the machine running the suite is.
   */
  callTimeoutMs: number;
}

export const FLOOD_PLANS: Record<"full" | "quick" | "smoke", FloodPlan> = {
  full: { quietPings: 300, floodMs: 15_000, settleMs: 16_000, callTimeoutMs: 5_000 },
  quick: { quietPings: 100, floodMs: 5_000, settleMs: 16_000, callTimeoutMs: 5_000 },
  smoke: { quietPings: 10, floodMs: 1_500, settleMs: 0, callTimeoutMs: 60_000 },
};

/** What the bench runs: the CLI bundle (`cotal up`, `cotal mint`), and the project root (the flooder resolves the NATS client there). */
export interface FloodPaths {
  cli: string;
  root: string;
}

function cotal(paths: FloodPaths, project: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      [paths.cli, ...args],
      { cwd: project, env: { ...process.env, COTAL_LOG_LEVEL: "info" }, timeout: 120_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`cotal ${args.join(" ")} failed: ${stderr || err.message}`)) : resolve(stdout)),
    ),
  );
}

/** Sequential pings as `creds`' principal: each one's latency (ms) when answered, and how many were not. */
async function pings(nc: Awaited<ReturnType<typeof connectMesh>>, space: string, creds: string, timeoutMs: number, more: (i: number) => boolean) {
  const who = credsCaller(creds);
  const ms: number[] = [];
  /** Why calls went unanswered, by error code (a timeout, no responders while the mesh service reconnects, …). */
  const unanswered = new Map<string, number>();
  let sent = 0;
  for (let i = 0; more(i); i++) {
    sent += 1;
    const t = performance.now();
    try {
      await callControl(nc, space, "ping", who, {}, { timeoutMs });
      ms.push(performance.now() - t);
    } catch (err) {
      // Counted by sent − answered; why, for the report.
      const e = err as { code?: string; reason?: string };
      const why = [e.code ?? (err as Error).name, e.reason].filter(Boolean).join(": ");
      unanswered.set(why, (unanswered.get(why) ?? 0) + 1);
    }
  }
  return { ms, unanswered, tally: { sent, received: ms.length, duplicates: 0, pending: 0 } satisfies Tally };
}

/** A count as people read it: 1,234 (fmt gives small numbers two places). */
const count = (n: number) => Math.round(n).toLocaleString("en-US");

export async function floodBench(plan: FloodPlan & { paths: FloodPaths }, { td, step }: BenchRun): Promise<BenchReport> {
  const { paths } = plan;
  const project = mkdtempSync(path.join(os.tmpdir(), "cotal-bench-flood-"));
  td.defer(() => rmSync(project, { recursive: true, force: true }));
  td.defer(() => cotal(paths, project, ["down"]).catch(() => undefined));
  await cotal(paths, project, ["up", "--detach", "--port", String(await freePort())]);
  const info = JSON.parse(readFileSync(path.join(project, ".cotal", "mesh.json"), "utf8")) as { server: string; space: string };
  const { server, space } = info;
  const creds = (name: string) => path.join(project, ".cotal", "creds", `${name}.creds`);
  for (const name of ["bystander", "flooder"]) await cotal(paths, project, ["mint", name, "--profile", "agent"]);
  step(`cotal up in ${project}: ${server}, space ${space}; minted bystander and flooder`);

  const nc = await connectMesh({ server, creds: creds("bystander"), name: "bench-bystander" });
  td.defer(() => nc.close());
  const operatorCreds = path.join(project, ".cotal", "auth", "creds", space, "cli.creds");
  const operator = await connectMesh({ server, creds: operatorCreds, name: "bench-operator" });
  td.defer(() => operator.close());

  // CPU per answered ping: this process (the bystander), and the mesh `cotal up` started (nats-server,
  // the mesh service, the manager); not the flooder's own process.
  const meshPids = (["nats-server", "mesh-service", "manager"] as const).flatMap((name) => {
    try {
      return [ProcessRecord.parse(JSON.parse(readFileSync(path.join(project, ".cotal", "run", `${name}.json`), "utf8"))).pid];
    } catch {
      return [];
    }
  });
  const cpu = new CpuAccount<"quiet" | "flood">(() => meshPids, "flood");
  const answered = (r: { ms: number[] }) => r.ms.length;

  step(`quiet: ${plan.quietPings} pings`);
  const quiet = await cpu.measure("quiet", answered, () => pings(nc, space, creds("bystander"), plan.callTimeoutMs, (i) => i < plan.quietPings));

  const logFile = path.join(project, ".cotal", "logs", "mesh-service.log");
  const logBefore = statSync(logFile).size;
  step(`flood: ${plan.floodMs / 1000} s of the flooder's beats and reply-less control requests, the bystander pinging throughout`);
  const flooder = localPrincipal("flooder");
  const end = Date.now() + plan.floodMs;
  const flooding: Promise<FloodResult> = flood({
    root: paths.root,
    server: server.split(",")[0]!,
    creds: creds("flooder"),
    subjects: [beatSubject(space, flooder), controlSubject(space, "mesh", "one", "ping", flooder)],
    ms: plan.floodMs,
  });
  const during = await cpu.measure("flood", answered, () => pings(nc, space, creds("bystander"), plan.callTimeoutMs, () => Date.now() < end));
  const flooded = await flooding;
  for (const [phase, r] of [
    ["quiet", quiet],
    ["during the flood", during],
  ] as const)
    if (r.unanswered.size) step(`unanswered ${phase}: ${[...r.unanswered].map(([why, n]) => `${n} ${why}`).join(", ")}`);
  const t = performance.now();
  const revoked = await callControl(operator, space, "revoke", credsCaller(operatorCreds), { name: "flooder" }, { timeoutMs: plan.callTimeoutMs }).then(
    () => 1,
    () => 0,
  );
  const revokeMs = performance.now() - t;
  await new Promise((r) => setTimeout(r, plan.settleMs));
  const logAfter = readFileSync(logFile, "utf8");
  const about = logAfter
    .split("\n")
    .filter((l) => l.includes("local.flooder"))
    .map((l) => JSON.parse(l) as { dropped?: number; reason?: string })
    .filter((l) => l.reason !== undefined);
  const dropped = about.reduce((n, l) => n + (l.dropped ?? 0), 0);
  // What the service read of each kind: a first line counts one, a summary its `dropped`.
  const seen = { beats: 0, requests: 0 };
  for (const l of about) seen[l.reason?.startsWith("beat-") ? "beats" : "requests"] += l.dropped ?? 1;
  // A consumer the server cut for falling behind (the flooder's messages it never read), by the connection's name.
  const slow = readFileSync(path.join(project, ".cotal", "logs", "nats-server.log"), "utf8")
    .split("\n")
    .filter((l) => /slow consumer/i.test(l))
    .map((l) => /cid:\d+ - .*/.exec(l)?.[0] ?? l);

  const q = summarize(quiet.ms);
  const d = during.ms.length ? summarize(during.ms) : { p50: NaN, p99: NaN, n: 0 };
  const note =
    `${d.n} pings during a ${plan.floodMs / 1000} s flood of ${count(flooded.sent)} messages from one credential (raw column: ${q.n} pings before it, quiet); ` +
    `cpu/msg: per answered ping, this process and the mesh's processes (nats-server, mesh service, manager), the flood's cost to them included, not the flooder's own`;
  const perPing = cpu.pair("flood", "quiet");
  return {
    rows: [
      { name: "bystander control call p50, flood vs quiet", unit: "ms", cotal: d.p50, raw: q.p50, better: "lower", note, cpu: perPing },
      { name: "bystander control call p99, flood vs quiet", unit: "ms", cotal: d.p99, raw: q.p99, better: "lower", cpu: perPing },
    ],
    lines: [
      `flood: ${count(flooded.sent)} messages in ${plan.floodMs / 1000} s (${fmt(flooded.sent / (plan.floodMs / 1000))} msg/s), its connection ${flooded.closed === "open" ? "still open" : `closed: ${flooded.closed}`}`,
      `the operator's revoke of the flooder: ${revoked ? `answered in ${fmt(revokeMs)} ms` : "FAILED"}`,
      `nats-server: ${slow.length ? `cut ${slow.length} slow consumer(s): ${[...new Set(slow)].join(", ")}` : "no slow consumer"}`,
      `mesh service log: +${count(Buffer.byteLength(logAfter) - logBefore)} bytes (the file as it is after the flood; ${about.length} lines about the flooder, counting ${count(dropped)} more not written: ${count(seen.beats)} beats and ${count(seen.requests)} requests read of ${count(flooded.sent / 2)} each sent)`,
    ],
    tallies: { "flood quiet": quiet.tally, "flood during": during.tally, "flood revoke": { sent: 1, received: revoked, duplicates: 0, pending: 0 } },
    detail: { quiet: q, during: d, flooded, revokeMs, logLines: about.length, dropped, slowConsumers: slow },
  };
}
