// Transcript carry (bytes as bytes), beside the raw NATS client doing the
// same in the same run:
//   carry: hash a 50 MB transcript, ask the target manager (it starts taking the chunks as they
//     pass), upload it as raw chunks into the instance's transfer stream, and have the manager
//     check and stage it (what `cotal spawn --resume` waits for before the spawn);
//   upload only: hash the file and upload the same bytes into the stream, no manager taking them;
//   raw: one Object Store `put` of the same file with the raw client (128 KiB chunks), no hash
//     check, no read-back.
// `node dist/bench-carry.mjs` (run by `npm run bench`; BENCH_QUICK=1 carries 10 MB). Starts its
// own nats-server, never the shared one.
import { randomBytes } from "node:crypto";
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { logger, MeshService, uploadTransfer, XferService } from "../broker/index.js";
import { sha256File } from "../runtime/index.js";
import { carryFile } from "../cli/mesh-client/carry.js";
import { ManagerService } from "../manager/index.js";
import { localPrincipal } from "../schemas/index.js";
import { NatsServer } from "../testbed/nats-server.js";
import { CpuAccount } from "./cpu.js";
import type { BenchReport, BenchRun, Row } from "./report.js";

export interface CarryPlan {
  /** Transcript size, MB (random bytes: nothing compresses or dedupes). */
  mb: number;
  /** Runs per measure; the median is reported. */
  runs: number;
}

export const CARRY_PLANS: Record<"full" | "quick" | "smoke", CarryPlan> = {
  full: { mb: 50, runs: 3 },
  quick: { mb: 10, runs: 2 },
  smoke: { mb: 1, runs: 1 },
};

const SPACE = "benchcarry";
const SESSION = "0b6c3a52-7d1e-4c55-9f0a-3e2b1c4d5e6f";
const operator = localPrincipal("cotal_cli");

/** The median of `runs` timings of `f`, in seconds. */
async function medianSeconds(runs: number, f: (i: number) => Promise<void>): Promise<number> {
  const t: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await f(i);
    t.push((performance.now() - start) / 1000);
  }
  return t.sort((a, b) => a - b)[Math.floor(t.length / 2)]!;
}

export async function carryBench(plan: CarryPlan, { td, step }: BenchRun): Promise<BenchReport> {
  const { mb, runs } = plan;
  const server = await NatsServer.start({ jetstream: { maxMemoryStore: "256MB", maxFileStore: "4GB" } });
  td.defer(() => server.cleanup());
  const root = mkdtempSync(path.join(os.tmpdir(), "cotal-bench-carry-"));
  td.defer(() => rmSync(root, { recursive: true, force: true }));
  const nc = await connect({ servers: server.url, name: "bench-carry" });
  td.defer(() => nc.close());
  const service = await MeshService.start(nc, SPACE);
  td.defer(() => service.stop());
  const xfer = await XferService.start(nc, SPACE, logger("bench-xfer"), { operatorOnly: false });
  td.defer(() => xfer.stop());
  // The manager on a connection of its own, as `cotal manager` runs (it takes the chunks as they pass there).
  const managerNc = await connect({ servers: server.url, name: "bench-carry-manager" });
  td.defer(() => managerNc.close());
  const mgr = await ManagerService.start(managerNc, {
    space: SPACE,
    server: server.url,
    stateDir: root,
    instance: "bench",
    mints: false,
    caller: operator,
    jsConnection: managerNc,
    agentCommand: () => [process.execPath, "-e", ""],
    seatEnv: (e) => e,
    log: logger("bench-manager"),
  });
  td.defer(() => mgr.stop());
  const party = { nc, space: SPACE, me: operator };
  const bytes = mb * 1024 ** 2;
  // Distinct bytes per run, so no run finds the previous one's transfer or staging.
  const files = Array.from({ length: runs * 2 }, (_, i) => {
    const f = path.join(root, `t${i}-${SESSION}.jsonl`);
    writeFileSync(f, randomBytes(bytes));
    return f;
  });
  const counts = { carried: 0, uploaded: 0, put: 0 };
  // CPU per MB: this process (the sender, the manager, the mesh service) and nats-server.
  const cpu = new CpuAccount<"carry" | "upload" | "raw">(() => (server.pid ? [server.pid] : []), "carry");

  step(`carry ${mb} MB, ${runs} runs: hash, ask, upload into the transfer stream, the manager takes it as it passes, checks, stages`);
  const carry = await medianSeconds(runs, (i) =>
    cpu.measure("carry", mb, async () => {
      const c = await carryFile(party, { instance: "bench", session: SESSION, file: files[i]! });
      if (c.sent === bytes && c.claim) counts.carried += 1;
    }),
  );
  // Carrying the same transcript again moves nothing: the manager holds it.
  const again = await carryFile(party, { instance: "bench", session: SESSION, file: files[runs - 1]! });

  step(`hash and upload ${mb} MB into the transfer stream alone, ${runs} runs`);
  const upload = await medianSeconds(runs, (i) =>
    cpu.measure("upload", mb, async () => {
      const file = files[runs + i]!;
      const up = await uploadTransfer(party, { instance: "bench", file, digest: await sha256File(file), size: bytes });
      if (up.sent === bytes) counts.uploaded += 1;
    }),
  );

  step(`raw: one Object Store put of the same ${mb} MB, ${runs} runs`);
  const store = await new Objm(jetstream(nc)).create("bench_raw", { max_bytes: 512 * 1024 ** 2 });
  const raw = await medianSeconds(runs, (i) =>
    cpu.measure("raw", mb, async () => {
      const info = await store.put(
        { name: `raw${i}`, options: { max_chunk_size: 128 * 1024 } },
        Readable.toWeb(createReadStream(files[i]!)) as ReadableStream<Uint8Array>,
      );
      if (info.size === bytes) counts.put += 1;
    }),
  );

  const mbps = (s: number) => mb / s;
  const rows: Row[] = [
    {
      name: `carry ${mb} MB (hash, upload, check, stage)`,
      unit: "MB/s",
      cotal: mbps(carry),
      raw: mbps(raw),
      better: "higher",
      note: `median of ${runs}; the manager hashes the chunks as they pass; raw: one Object Store put of the same file, no hash check or read-back; cpu/msg: per MB, this process (sender, manager) and nats-server`,
      cpu: cpu.pair("carry", "raw"),
    },
    {
      name: `hash and upload ${mb} MB`,
      unit: "MB/s",
      cotal: mbps(upload),
      raw: mbps(raw),
      better: "higher",
      note: "the sender alone: sha256 of the file, then raw chunks of 1020 KiB, one subject each, 8 in flight",
      cpu: cpu.pair("upload", "raw"),
    },
  ];
  const one = (ok: boolean) => ({ sent: 1, received: ok ? 1 : 0, duplicates: 0, pending: 0 });
  return {
    rows,
    lines: [],
    tallies: {
      "carried whole": { sent: runs, received: counts.carried, duplicates: 0, pending: 0 },
      "carried again, 0 bytes sent": one(again.sent === 0 && again.claim !== ""),
      "uploaded whole": { sent: runs, received: counts.uploaded, duplicates: 0, pending: 0 },
      "raw put whole": { sent: runs, received: counts.put, duplicates: 0, pending: 0 },
    },
    detail: { seconds: { carry, upload, raw }, again },
  };
}
