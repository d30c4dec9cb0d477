// Transcript carry (bytes as bytes), black box on an operator-mode server with raw NATS
// clients: a transfer to manager hostb is written by the operator alone and read by hostb's own
// credential alone. Every other credential (an agent, another manager, an admin, an observer, a
// scoped reader, another host's leaf) sees no chunk pass however wide it subscribes, reads none from
// the stream, writes none, and cannot remove one; hostb itself cannot write. No stored chunk can be
// replaced, not even by the operator, and a transfer cannot outgrow its stream.
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, type JetStreamManager } from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  callXfer,
  ControlCallError,
  jetStreamConnection,
  JS_OPTIONS,
  logger,
  PermissionDeniedError,
  permissionViolation,
  StorageLimitError,
  TransferReceiver,
  uploadTransfer,
  XferService,
  type MintRequest,
} from "../../broker/internal.js";
import { CARRY_CHUNK_BYTES, CARRY_MAX_BYTES, CotalError, localPrincipal, names, principalId, xferChunkSubject, xferObjectFilter } from "../../schemas/index.js";
import { sha256File } from "../../runtime/index.js";
import { TestMesh } from "../harness/mesh.js";
import { refusals } from "../harness/refusals.js";
import { until } from "../../testbed/until.js";

const SPACE = "xferatk";
const operator = localPrincipal("cotal_cli");

/** Third parties: everyone but the operator and hostb, with the names their mint gives them. */
const THIRD: Array<Omit<MintRequest, "provision">> = [
  { name: "mallory", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"] },
  { name: "hostc", profile: "manager" },
  { name: "adam", profile: "admin" },
  { name: "olga", profile: "observer" },
  { name: "watcher", profile: "reader", allowSubscribe: ["general"] },
  { name: "hostc_leaf", profile: "leaf" },
];

let mesh: TestMesh;
let xfer: XferService;
let op: NatsConnection;
let data: JetStreamManager;
let hostb: { nc: NatsConnection; creds: string };
let third: Array<{ name: string; nc: NatsConnection; creds: string; refused: ReturnType<typeof refusals> }>;
let root: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "cotal-carry-access-"));
  mesh = await TestMesh.startStatic(SPACE);
  xfer = await XferService.start(mesh.serviceConnection, SPACE, logger("test-xfer"), { operatorOnly: true });
  op = await mesh.rawConnection();
  data = await mesh.dataJsm();
  const creds = await mesh.mint({ name: "hostb", profile: "manager" });
  hostb = { nc: await mesh.connection(creds, "_INBOX.local.hostb"), creds };
  third = [];
  for (const spec of THIRD) {
    const creds = await mesh.mint(spec);
    const nc = await mesh.connection(creds, `_INBOX.${principalId(localPrincipal(spec.name))}`);
    third.push({ name: spec.name, nc, creds, refused: refusals(nc) });
  }
}, 120_000);

afterAll(async () => {
  xfer?.stop();
  await mesh?.close();
  rmSync(root, { recursive: true, force: true });
});

/** A file of `bytes` random bytes, its digest and size. */
async function transcript(bytes: number): Promise<{ file: string; digest: string; size: number }> {
  const file = join(mkdtempSync(join(root, "t-")), "session.jsonl");
  writeFileSync(file, randomBytes(bytes));
  return { file, digest: await sha256File(file), size: bytes };
}

/** What the data account holds of a transfer: chunk subject → its bytes (hex). */
async function held(instance: string, digest: string): Promise<Record<string, string>> {
  const stream = names.xferStream(SPACE, instance);
  const subjects = Object.keys((await data.streams.info(stream, { subjects_filter: xferObjectFilter(SPACE, instance, digest) })).state.subjects ?? {});
  const out: Record<string, string> = {};
  for (const s of subjects.sort()) out[s] = Buffer.from((await data.streams.getMessage(stream, { last_by_subj: s }))!.data).toString("hex");
  return out;
}

describe("a transfer to hostb: hostb's own credential reads it, the operator writes it, nobody else does either", () => {
  test("no third credential sees a chunk pass, however wide it subscribes, nor reads one from the stream; hostb does both", async () => {
    const t = await transcript(3 * 1024 ** 2 + 5);
    const seen = new Map<string, number>();
    for (const { name, nc, refused } of third) {
      const wide = [`cotal.${SPACE}.xfer.hostb.>`, `cotal.${SPACE}.xfer.>`, `cotal.${SPACE}.>`, ">"];
      for (const subject of wide) {
        nc.subscribe(subject, {
          // A refused subscription is called once with the refusal (and no message) and closed.
          callback: (err, m) => {
            if (!err && m.subject.startsWith(`cotal.${SPACE}.xfer.`)) seen.set(name, (seen.get(name) ?? 0) + 1);
          },
        });
      }
      // An admin may subscribe to the whole space (the server leaves transfers out); the others are refused all four.
      for (const subject of wide.slice(0, 2)) expect(await refused("subscription", subject), `${name} ${subject}`).toBe(true);
    }
    let passed = 0;
    hostb.nc.subscribe(`cotal.${SPACE}.xfer.hostb.>`, { callback: (err, m) => void (passed += err ? 0 : m.data.length) });
    await hostb.nc.flush();

    await uploadTransfer({ nc: op, space: SPACE, me: operator }, { instance: "hostb", ...t });
    await until(async () => passed === t.size, 20_000, "hostb to see every chunk pass");
    for (const { nc } of third) {
      await nc.flush();
      await nc.flush();
    }
    expect(Object.fromEntries(seen)).toEqual({});

    const chunk0 = JSON.stringify({ last_by_subj: xferChunkSubject(SPACE, "hostb", t.digest, 0) });
    for (const { name, nc } of third) {
      for (const api of [`$JS.API.STREAM.MSG.GET.${names.xferStream(SPACE, "hostb")}`, `$JS.API.DIRECT.GET.${names.xferStream(SPACE, "hostb")}`]) {
        const err = await nc.request(api, chunk0, { timeout: 5_000 }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(permissionViolation(err), `${name} ${api}`).toBeDefined();
      }
    }
    // Another manager's receiver for hostb's transfer (as a manager credential minted without the right would be) is refused, saying so.
    const hostc = third.find((x) => x.name === "hostc")!;
    const stolen = new TransferReceiver({
      nc: hostc.nc,
      js: jetStreamConnection(hostc.nc, hostc.creds),
      space: SPACE,
      instance: "hostb",
      ...t,
      file: join(root, "stolen.part"),
      log: logger("test-receive"),
    });
    const refusal = await stolen.finish().catch((e: unknown) => e);
    await stolen.abort();
    expect(refusal).toBeInstanceOf(CotalError);
    expect((refusal as CotalError).code).toBe("not-allowed");
    expect(existsSync(join(root, "stolen.part"))).toBe(false);

    const own = await jetstream(jetStreamConnection(hostb.nc, hostb.creds), JS_OPTIONS).jetstreamManager();
    const m = await own.streams.getMessage(names.xferStream(SPACE, "hostb"), { last_by_subj: xferChunkSubject(SPACE, "hostb", t.digest, 0) });
    expect(m?.data.length).toBe(CARRY_CHUNK_BYTES);
  }, 120_000);

  test("no third credential (nor hostb) writes or removes a chunk; no stored chunk is replaced, not even by the operator", async () => {
    const t = await transcript(2 * 1024 ** 2);
    await uploadTransfer({ nc: op, space: SPACE, me: operator }, { instance: "hostb", ...t });
    const before = await held("hostb", t.digest);
    expect(Object.keys(before)).toHaveLength(3);
    const garbage = randomBytes(1000);
    const targets = [0, 2, 99].map((i) => xferChunkSubject(SPACE, "hostb", t.digest, i));
    for (const who of [...third, { name: "hostb", nc: hostb.nc, creds: hostb.creds, refused: refusals(hostb.nc) }]) {
      for (const subject of targets) {
        who.nc.publish(subject, garbage);
        expect(await who.refused("publish", subject), `${who.name} ${subject}`).toBe(true);
        const err = await jetstream(who.nc, JS_OPTIONS)
          .publish(subject, garbage, { timeout: 5_000 })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        expect(permissionViolation(err), `${who.name} js ${subject}`).toBeDefined();
      }
    }
    for (const who of third) {
      const removed = await callXfer(who.nc, SPACE, "xfer-remove", localPrincipal(who.name), { instance: "hostb", digest: t.digest }).catch((e: unknown) => e);
      expect(removed instanceof PermissionDeniedError || (removed instanceof ControlCallError && removed.code === "not-allowed"), `${who.name} remove`).toBe(
        true,
      );
    }
    // The leaf of another host acting as hostb: its scope carries hostc's identities only, so the
    // broker refuses it (and the service would, by who the server says sent it).
    const leaf = third.find((x) => x.name === "hostc_leaf")!;
    const asHostb = await callXfer(leaf.nc, SPACE, "xfer-remove", localPrincipal("hostb"), { instance: "hostb", digest: t.digest }).catch((e: unknown) => e);
    expect(asHostb instanceof PermissionDeniedError || (asHostb instanceof ControlCallError && asHostb.code === "not-allowed"), String(asHostb)).toBe(true);

    // The operator cannot replace a stored chunk either: one message per subject, the second refused; no rollups.
    const js = jetstream(op, JS_OPTIONS);
    await expect(js.publish(targets[0]!, garbage)).rejects.toThrow(/maximum messages per subject exceeded/);
    const rollup = headers();
    rollup.set("Nats-Rollup", "sub");
    await expect(js.publish(targets[0]!, garbage, { headers: rollup })).rejects.toThrow(/rollup/i);
    expect(await held("hostb", t.digest)).toEqual(before);
  }, 120_000);
});

describe("sizes are bounded", () => {
  test("a transfer larger than CARRY_MAX_BYTES is refused at begin; one outgrowing its stream is refused with the stream named", async () => {
    const big = await callXfer(op, SPACE, "xfer-begin", operator, { instance: "hostb", digest: `sha256:${"b".repeat(64)}`, size: CARRY_MAX_BYTES + 1 }).catch(
      (e: unknown) => e,
    );
    expect(big).toBeInstanceOf(ControlCallError);
    expect((big as ControlCallError).code).toBe("invalid-args");

    xfer.stop();
    const small = await XferService.start(mesh.serviceConnection, SPACE, logger("test-xfer"), { operatorOnly: true, maxBytes: 2 * 1024 ** 2 });
    try {
      const t = await transcript(3 * 1024 ** 2);
      const err = await uploadTransfer({ nc: op, space: SPACE, me: operator }, { instance: "tiny", ...t }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StorageLimitError);
      expect((err as Error).message).toContain(names.xferStream(SPACE, "tiny"));
      expect((await data.streams.info(names.xferStream(SPACE, "tiny"))).state.bytes).toBeLessThanOrEqual(2 * 1024 ** 2);
    } finally {
      small.stop();
      xfer = await XferService.start(mesh.serviceConnection, SPACE, logger("test-xfer"), { operatorOnly: true });
    }
  }, 120_000);
});
