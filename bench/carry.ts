// Transcript carry (issue #16), beside the raw NATS client doing the same in the same run:
//   carry: hash a 50 MB transcript, ask the target manager, upload it through the mesh service's
//     `xfer` endpoint into the instance's Object Store bucket, and have the manager read it back,
//     verify it and stage it (what `cotal spawn --resume` waits for before the spawn);
//   upload only: the same bytes through `xfer` into the bucket, nothing read back;
//   raw: one Object Store `put` of the same file with the raw client (128 KiB chunks), no hash
//     check, no read-back.
// Standalone: `npm run build && node dist/bench-carry.mjs` (also run by `npm run bench`).
// BENCH_QUICK=1 carries 10 MB. Starts its own nats-server, never the shared one.
import { randomBytes } from "node:crypto";
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { logger, MeshService, uploadTransfer, XferService } from "../broker/index.js";
import { sha256File } from "../claude/index.js";
import { carryFile } from "../cli/carry.js";
import { ManagerService } from "../manager/index.js";
import { localPrincipal } from "../schemas/index.js";
import { NatsServer } from "../testbed/nats-server.js";
import { renderTable, type Row } from "./report.js";

process.env.COTAL_LOG_LEVEL ??= "warn";
const QUICK = process.env.BENCH_QUICK === "1";
const MB = QUICK ? 10 : 50;
const RUNS = QUICK ? 2 : 3;
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

async function main(): Promise<void> {
  const server = await NatsServer.start({ jetstream: { maxMemoryStore: "256MB", maxFileStore: "4GB" } });
  const root = mkdtempSync(path.join(os.tmpdir(), "cotal-bench-carry-"));
  const nc = await connect({ servers: server.url, name: "bench-carry" });
  const service = await MeshService.start(nc, SPACE);
  const xfer = await XferService.start(nc, SPACE, logger("bench-xfer"), { operatorOnly: false });
  let mgr: ManagerService | undefined;
  try {
    mgr = await ManagerService.start(nc, {
      space: SPACE,
      server: server.url,
      stateDir: root,
      instance: "bench",
      mints: false,
      caller: operator,
      jsConnection: nc,
      agentCommand: () => [process.execPath, "-e", ""],
      seatEnv: (e) => e,
      log: logger("bench-manager"),
    });
    const party = { nc, space: SPACE, me: operator };
    // Distinct bytes per run, so no run finds the previous one's transfer or staging.
    const files = Array.from({ length: RUNS * 2 }, (_, i) => {
      const f = path.join(root, `t${i}-${SESSION}.jsonl`);
      writeFileSync(f, randomBytes(MB * 1024 ** 2));
      return f;
    });
    const bytes = MB * 1024 ** 2;
    const carry = await medianSeconds(RUNS, async (i) => {
      await carryFile(party, { instance: "bench", session: SESSION, file: files[i]! });
    });
    const upload = await medianSeconds(RUNS, async (i) => {
      const file = files[RUNS + i]!;
      await uploadTransfer(party, { instance: "bench", file, digest: await sha256File(file), size: bytes });
    });
    const os2 = await new Objm(jetstream(nc)).create("bench_raw", { max_bytes: 512 * 1024 ** 2 });
    const raw = await medianSeconds(RUNS, async (i) => {
      await os2.put({ name: `raw${i}`, options: { max_chunk_size: 128 * 1024 } }, Readable.toWeb(createReadStream(files[i]!)) as ReadableStream<Uint8Array>);
    });
    const mbps = (s: number) => MB / s;
    const rows: Row[] = [
      {
        name: `carry ${MB} MB (hash, upload, verify, stage)`,
        unit: "MB/s",
        cotal: mbps(carry),
        raw: mbps(raw),
        better: "higher",
        note: `median of ${RUNS}; raw: one Object Store put of the same file, no hash check or read-back`,
      },
      {
        name: `upload ${MB} MB through xfer`,
        unit: "MB/s",
        cotal: mbps(upload),
        raw: mbps(raw),
        better: "higher",
        note: "the upload alone: base64 chunks over the control rail, each an expected-sequence append by the mesh service",
      },
    ];
    console.log(`cotal bench-carry: ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}${QUICK ? ", BENCH_QUICK=1" : ""}\n`);
    console.log(renderTable(rows));
  } finally {
    await mgr?.stop().catch(() => undefined);
    xfer.stop();
    await service.stop().catch(() => undefined);
    await nc.close().catch(() => undefined);
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
