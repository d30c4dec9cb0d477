// Transcript carry (bytes as bytes) on a static mesh: the CLI's carry loop
// publishes raw chunks into the target instance's transfer stream, the in-process manager takes
// them as they pass, checks, stages and claims it. A transcript bigger than the max payload arrives
// byte-identical; a re-run sends nothing; a run killed halfway sends only the rest on the next; a
// manager that saw nothing pass reads it all from the stream; the broker copy is gone once staged;
// names and duplicate ids are refused; a claim is one-time; a tampered staged transcript refuses
// the seat and the log records why. (Who else may touch a transfer: test/attacks/carry-access.test.ts.)
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  callXfer,
  carryChunkBytes,
  connectMesh,
  ControlCallError,
  controlCaller,
  jetStreamConnection,
  logger,
  PermissionDeniedError,
  TransferReceiver,
  uploadTransfer,
  XferService,
} from "../../broker/internal.js";
import { carriedResume, findSession, sessionsNamed, TranscriptMismatchError } from "../../claude/index.js";
import { ManagerService, TranscriptDesk } from "../../manager/internal.js";
import { CARRY_CHUNK_BYTES, localPrincipal, MANAGER_COMMANDS, names, xferChunkIndex, xferObjectFilter, type SeatView } from "../../schemas/index.js";
import { carryFile, requireSessionId } from "../../cli/mesh-client/carry.js";
import { startClaudeManager } from "../harness/claude-manager.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");
const SESSION = "0b6c3a52-7d1e-4c55-9f0a-3e2b1c4d5e6f";

let mesh: TestMesh;
let nc: NatsConnection;
let xfer: XferService;
let root: string;
const managers: ManagerService[] = [];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "cotal-carry-"));
  mesh = await TestMesh.startStatic("carry");
  nc = await mesh.rawConnection();
  xfer = await XferService.start(mesh.serviceConnection, mesh.space, logger("test-xfer"), { operatorOnly: true });
}, 120_000);
afterAll(async () => {
  for (const m of managers) await m.stopWithSeats(operator).catch(() => undefined);
  xfer?.stop();
  await mesh?.close();
  rmSync(root, { recursive: true, force: true });
});

/** A manager on the mesh host (the operator's credential); its Claude is never reached here (no model behind it). */
async function manager(instance: string): Promise<{ m: ManagerService; stateDir: string }> {
  const r = await startClaudeManager(mesh, nc, { root, instance, baseUrl: "http://127.0.0.1:9", over: { caller: operator } });
  managers.push(r.m);
  return r;
}

/** A transcript of `bytes` random-ish JSONL lines. */
function transcript(bytes: number): string {
  const file = join(mkdtempSync(join(root, "t-")), `${SESSION}.jsonl`);
  const lines: string[] = [];
  let size = 0;
  while (size < bytes) {
    const line = JSON.stringify({ type: "user", message: { role: "user", content: randomBytes(600).toString("base64") } });
    lines.push(line);
    size += line.length + 1;
  }
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

const sha = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

/** Indexes of the chunks of a transfer still in the instance's stream, as the data account sees them. */
async function brokerChunks(instance: string, digest: string): Promise<number[]> {
  const info = await (
    await mesh.dataJsm()
  ).streams.info(names.xferStream(mesh.space, instance), { subjects_filter: xferObjectFilter(mesh.space, instance, digest) });
  return Object.keys(info.state.subjects ?? {})
    .map((s) => xferChunkIndex(s)!)
    .sort((a, b) => a - b);
}

/** The chunks stored once their count holds still (chunks in flight when an upload stopped may still land). */
async function settledChunks(instance: string, digest: string): Promise<number[]> {
  let kept = await brokerChunks(instance, digest);
  await until(
    async () => {
      await new Promise((r) => setTimeout(r, 200));
      const now = await brokerChunks(instance, digest);
      const still = now.length === kept.length;
      kept = now;
      return still;
    },
    10_000,
    "the stored chunk count to hold still",
  );
  return kept;
}

/** The broker copy goes once the transcript is staged (right after the claim: the claim does not wait for the purge). */
async function removed(instance: string, digest: string): Promise<void> {
  await until(async () => (await brokerChunks(instance, digest)).length === 0, 15_000, `the broker copy of ${digest} to be removed`);
}

const C = CARRY_CHUNK_BYTES;

describe("transcript carry", () => {
  test("a transcript larger than the max payload arrives byte-identical and staged 0600; the broker copy is removed; a re-run sends 0 bytes", async () => {
    const { stateDir } = await manager("c1");
    const file = transcript(5 * 1024 ** 2 + 12_345);
    const bytes = readFileSync(file);
    expect(bytes.length).toBeGreaterThan(nc.info!.max_payload);
    const party = { nc, space: mesh.space, me: operator };

    const first = await carryFile(party, { instance: "c1", session: SESSION, file });
    expect(first).toMatchObject({ sent: bytes.length, size: bytes.length, digest: sha(bytes) });
    expect(first.chunks).toBe(Math.ceil(bytes.length / C));
    const staged = join(stateDir, "carry", `${sha(bytes).slice(7)}.jsonl`);
    expect(readFileSync(staged).equals(bytes)).toBe(true);
    expect(statSync(staged).mode & 0o777).toBe(0o600);
    await removed("c1", first.digest);

    const again = await carryFile(party, { instance: "c1", session: SESSION, file });
    expect(again).toMatchObject({ sent: 0, chunks: 0, digest: first.digest });
    expect(again.claim).not.toBe(first.claim);
  }, 120_000);

  test("a run killed halfway, then re-run, sends only the rest, from what the broker stored", async () => {
    const { stateDir } = await manager("c2");
    const file = transcript(12 * 1024 ** 2);
    const bytes = readFileSync(file);
    const party = { nc, space: mesh.space, me: operator };
    const digest = sha(bytes);
    const total = Math.ceil(bytes.length / C);
    // The first run dies after 3 chunks are stored (as a killed CLI would: nothing local survives it).
    let acks = 0;
    await expect(
      uploadTransfer(party, { instance: "c2", file, digest, size: bytes.length }, () => {
        if (++acks > 4) throw new Error("killed");
      }),
    ).rejects.toThrow("killed");
    const kept = await settledChunks("c2", digest);
    expect(kept.length).toBeGreaterThanOrEqual(3);
    expect(kept.length).toBeLessThan(total);

    const second = await carryFile(party, { instance: "c2", session: SESSION, file });
    expect(second.chunks).toBe(total - kept.length);
    expect(second.sent).toBe(bytes.length - kept.reduce((n, i) => n + Math.min(C, bytes.length - i * C), 0));
    expect(readFileSync(join(stateDir, "carry", `${digest.slice(7)}.jsonl`)).equals(bytes)).toBe(true);
    await removed("c2", digest);
  }, 120_000);

  test("a manager takes the chunks as they pass; one that saw none pass reads them all from the stream; both hash them once, on the way in", async () => {
    const file = transcript(4 * 1024 ** 2);
    const bytes = readFileSync(file);
    const t = { instance: "r1", file, digest: sha(bytes), size: bytes.length };
    const receiver = (name: string) =>
      new TransferReceiver({
        nc,
        js: jetStreamConnection(nc, mesh.cliCreds),
        space: mesh.space,
        instance: "r1",
        digest: t.digest,
        size: t.size,
        file: join(root, name),
        log: logger("test-receive"),
      });
    const passing = receiver("passing.part");
    await nc.flush();
    await uploadTransfer({ nc, space: mesh.space, me: operator }, t);
    const late = receiver("late.part");
    expect(await passing.finish()).toEqual({ digest: t.digest, size: t.size, live: t.size });
    expect(await late.finish()).toEqual({ digest: t.digest, size: t.size, live: 0 });
    expect(readFileSync(join(root, "passing.part")).equals(bytes)).toBe(true);
    expect(readFileSync(join(root, "late.part")).equals(bytes)).toBe(true);
    expect(statSync(join(root, "late.part")).mode & 0o777).toBe(0o600);
  }, 60_000);

  test("an empty transcript is carried as no chunk at all and staged empty", async () => {
    const { stateDir } = await manager("e1");
    const file = join(mkdtempSync(join(root, "t-")), `${SESSION}.jsonl`);
    writeFileSync(file, "");
    const c = await carryFile({ nc, space: mesh.space, me: operator }, { instance: "e1", session: SESSION, file });
    expect(c).toMatchObject({ sent: 0, chunks: 0, size: 0, digest: sha(Buffer.alloc(0)) });
    expect(c.claim).toMatch(/^[0-9a-f]{32}$/);
    expect(readFileSync(join(stateDir, "carry", `${c.digest.slice(7)}.jsonl`))).toHaveLength(0);
  }, 60_000);

  test("the mesh service restarting mid-upload does not fail the carry (the bytes do not pass through it)", async () => {
    const { stateDir } = await manager("c3");
    const file = transcript(6 * 1024 ** 2);
    const bytes = readFileSync(file);
    let restarted: Promise<void> | undefined;
    let chunks = 0;
    const c = await carryFile({ nc, space: mesh.space, me: operator }, { instance: "c3", session: SESSION, file }, () => {
      if (++chunks !== 3) return;
      xfer.stop();
      restarted = XferService.start(mesh.serviceConnection, mesh.space, logger("test-xfer"), { operatorOnly: true }).then((s) => void (xfer = s));
    });
    await restarted;
    expect(c.sent).toBe(bytes.length);
    expect(c.chunks).toBe(Math.ceil(bytes.length / C));
    expect(readFileSync(join(stateDir, "carry", `${c.digest.slice(7)}.jsonl`)).equals(bytes)).toBe(true);
  }, 60_000);

  test("chunks shrink to fit a server whose max payload is smaller than 1 MiB", () => {
    expect(carryChunkBytes(1024 * 1024)).toBe(C);
    expect(carryChunkBytes(64 * 1024)).toBe(60 * 1024);
  });

  test("a stale transfer's chunks expire with the stream's max age: the next begin finds none", async () => {
    xfer.stop();
    const quick = await XferService.start(mesh.serviceConnection, mesh.space, logger("test-xfer"), { operatorOnly: true, ttlMs: 1_500 });
    try {
      const file = transcript(2 * C + 1000);
      const bytes = readFileSync(file);
      const party = { nc, space: mesh.space, me: operator };
      const t = { instance: "stale1", file, digest: sha(bytes), size: bytes.length };
      await uploadTransfer(party, t);
      expect(await brokerChunks("stale1", t.digest)).toEqual([0, 1, 2]);
      await until(async () => (await brokerChunks("stale1", t.digest)).length === 0, 15_000, "the stale chunks to expire");
      const again = await callXfer(nc, mesh.space, "xfer-begin", operator, { instance: "stale1", digest: t.digest, size: t.size });
      expect(again).toMatchObject({ stored: 0, have: [], chunks: 3 });
    } finally {
      quick.stop();
      xfer = await XferService.start(mesh.serviceConnection, mesh.space, logger("test-xfer"), { operatorOnly: true });
    }
  }, 60_000);

  test("a manager on another host (its own manager-profile credential, instance = its name) receives a carry, also one it saw none of pass; it may not remove another instance's transfers", async () => {
    const creds = await mesh.mint({ name: "hostb", profile: "manager" });
    const conn = await connectMesh({ server: mesh.server.url, creds, name: "hostb" });
    try {
      const stateDir = mkdtempSync(join(root, "hostb-"));
      const m = await ManagerService.start(conn, {
        space: mesh.space,
        server: mesh.server.url,
        stateDir,
        instance: "hostb",
        mints: true,
        caller: localPrincipal("hostb"),
        jsConnection: jetStreamConnection(conn, creds),
        agentCommand: () => [process.execPath, "-e", ""],
        seatEnv: (e) => e,
        log: logger("test-hostb"),
      });
      managers.push(m);
      const party = { nc, space: mesh.space, me: operator };
      const file = transcript(3 * 1024 ** 2);
      const c = await carryFile(party, { instance: "hostb", session: SESSION, file });
      expect(readFileSync(join(stateDir, "carry", `${c.digest.slice(7)}.jsonl`)).equals(readFileSync(file))).toBe(true);

      // Uploaded before the manager was asked: it reads every chunk from its stream with its own credential.
      const other = transcript(2 * 1024 ** 2 + 7);
      const bytes = readFileSync(other);
      await uploadTransfer(party, { instance: "hostb", file: other, digest: sha(bytes), size: bytes.length });
      const staged = await callManager(
        nc,
        mesh.space,
        "carry-commit",
        operator,
        { session: SESSION, digest: sha(bytes), size: bytes.length },
        { target: "hostb" },
      );
      expect(staged.digest).toBe(sha(bytes));
      expect(readFileSync(join(stateDir, "carry", `${sha(bytes).slice(7)}.jsonl`)).equals(bytes)).toBe(true);
      await removed("hostb", sha(bytes));

      const elsewhere = await callXfer(conn, mesh.space, "xfer-remove", localPrincipal("hostb"), { instance: "c1", digest: c.digest }).catch((e: unknown) => e);
      expect(elsewhere).toBeInstanceOf(ControlCallError);
      expect((elsewhere as ControlCallError).code).toBe("not-allowed");
      await expect(callXfer(conn, mesh.space, "xfer-begin", localPrincipal("hostb"), { instance: "hostb", digest: c.digest, size: 1 })).rejects.toBeInstanceOf(
        PermissionDeniedError,
      );
    } finally {
      await conn.close();
    }
  }, 60_000);

  test("a claim is one-time, bound to its session, and expires; staged files are swept", async () => {
    const dir = mkdtempSync(join(root, "desk-"));
    const desk = new TranscriptDesk({
      nc,
      space: mesh.space,
      instance: "d1",
      stateDir: dir,
      caller: operator,
      log: logger("test-desk"),
      sessionDir: join(root, "nowhere"),
      ttlMs: 60_000,
    });
    try {
      const home = mkdtempSync(join(root, "cfg-"));
      mkdirSync(join(home, "projects", "-w"), { recursive: true });
      writeFileSync(join(home, "projects", "-w", `${SESSION}.jsonl`), "{}\n");
      const resolving = new TranscriptDesk({
        nc,
        space: mesh.space,
        instance: "d2",
        stateDir: mkdtempSync(join(root, "desk-")),
        caller: operator,
        log: logger("test-desk"),
        sessionDir: home,
      });
      const c = await resolving.resolve({ session: SESSION });
      expect(() => resolving.take(c.claim, "11111111-2222-4333-8444-555555555555")).toThrow(/is for session/);
      const c2 = await resolving.resolve({ session: SESSION });
      expect(resolving.take(c2.claim, SESSION).digest).toBe(sha(Buffer.from("{}\n")));
      expect(() => resolving.take(c2.claim, SESSION)).toThrow(/unknown, used or expired/);
      const c3 = await resolving.resolve({ session: SESSION });
      resolving.sweep(Date.now() + 11 * 60_000);
      expect(() => resolving.take(c3.claim, SESSION)).toThrow(/unknown, used or expired/);
      resolving.stop();
      await expect(desk.resolve({ session: SESSION })).rejects.toThrow(/neither on this host/);
    } finally {
      desk.stop();
    }
  });

  test("a carried seat forks on its first start; a restart checks the copy and continues its own newest fork; a changed copy refuses it", async () => {
    const config = mkdtempSync(join(root, "seatcfg-"));
    const cwd = "/srv/app";
    const file = transcript(10_000);
    const digest = sha(readFileSync(file));
    expect(await carriedResume(config, cwd, { session: SESSION, digest, file })).toEqual({ session: SESSION, fork: true });
    const project = join(config, "projects", "-srv-app");
    expect(readFileSync(join(project, `${SESSION}.jsonl`)).equals(readFileSync(file))).toBe(true);
    // No fork yet (it crashed before its first turn): fork again.
    expect(await carriedResume(config, cwd, { session: SESSION, digest })).toEqual({ session: SESSION, fork: true });
    writeFileSync(join(project, "aaaaaaaa-2222-4333-8444-555555555555.jsonl"), "{}\n");
    writeFileSync(join(project, "bbbbbbbb-2222-4333-8444-555555555555.jsonl"), "{}\n");
    const older = new Date(Date.now() - 60_000); // the first fork is the older one, whatever the clock's resolution
    utimesSync(join(project, "aaaaaaaa-2222-4333-8444-555555555555.jsonl"), older, older);
    expect(await carriedResume(config, cwd, { session: SESSION, digest })).toEqual({ session: "bbbbbbbb-2222-4333-8444-555555555555", fork: false });
    writeFileSync(join(project, `${SESSION}.jsonl`), "changed\n");
    await expect(carriedResume(config, cwd, { session: SESSION, digest })).rejects.toBeInstanceOf(TranscriptMismatchError);
  });

  test("a title instead of an id is refused listing the candidates; an id found twice is refused", async () => {
    const home = mkdtempSync(join(root, "cfg-"));
    for (const [dir, id, title] of [
      ["-a", SESSION, "Fix the login bug"],
      ["-b", "11111111-2222-4333-8444-555555555555", "login page redesign"],
      ["-c", "22222222-2222-4333-8444-555555555555", "other"],
    ] as const) {
      mkdirSync(join(home, "projects", dir), { recursive: true });
      writeFileSync(join(home, "projects", dir, `${id}.jsonl`), `${JSON.stringify({ type: "summary", summary: title })}\n`);
    }
    const named = await sessionsNamed(home, "login");
    expect(named.map((n) => n.session).sort()).toEqual([SESSION, "11111111-2222-4333-8444-555555555555"].sort());
    const refusal = (await requireSessionId("login", home).catch((e: unknown) => e)) as Error;
    expect(refusal.message).toContain(SESSION);
    expect(refusal.message).toContain("11111111-2222-4333-8444-555555555555");
    expect(refusal.message).toMatch(/sha256:[0-9a-f]{64}/);
    expect(refusal.message).not.toContain("22222222");

    mkdirSync(join(home, "projects", "-d"), { recursive: true });
    writeFileSync(join(home, "projects", "-d", `${SESSION}.jsonl`), "{}\n");
    expect(() => findSession(home, SESSION)).toThrow(/is in 2 projects/);
  });

  test("a tampered staged transcript refuses the seat: it is retired and the seat log records why", async () => {
    const { stateDir } = await manager("t1");
    const file = transcript(200_000);
    const c = await carryFile({ nc, space: mesh.space, me: operator }, { instance: "t1", session: SESSION, file });
    writeFileSync(join(stateDir, "carry", `${c.digest.slice(7)}.jsonl`), "tampered\n");
    const work = mkdtempSync(join(root, "work-"));
    const err = await callManager(
      nc,
      mesh.space,
      "spawn",
      operator,
      { agent: "claude", name: "forked", cwd: work, resume: SESSION, claim: c.claim },
      { target: "t1", timeoutMs: 30_000 },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ControlCallError);
    expect((err as ControlCallError).code).toBe("transcript-mismatch");
    let seat: SeatView | undefined;
    await until(
      async () => {
        const ps = await callManager(nc, mesh.space, "ps", operator, { all: true }, { target: "t1" });
        seat = ps.seats.find((s) => s.name === "forked");
        return seat?.state === "retired";
      },
      10_000,
      "the refused seat to be retired",
    );
    expect(seat!.reason).toMatch(/transcript of session .* has sha256:[0-9a-f]{64}, not the carried/);
    // Retiring removed the seat's folder, its config dir and the copy with it.
    expect(statSync(join(stateDir, "seats", "forked"), { throwIfNoEntry: false })).toBeUndefined();
    // Carrying it again does not trust the changed staging: the bytes are sent anew and staged intact.
    const again = await carryFile({ nc, space: mesh.space, me: operator }, { instance: "t1", session: SESSION, file });
    expect(again.sent).toBe(c.size);
    expect(readFileSync(join(stateDir, "carry", `${c.digest.slice(7)}.jsonl`)).equals(readFileSync(file))).toBe(true);
  }, 60_000);
});
