// Transcript carry (issue #16) on a static mesh: the CLI's carry loop uploads through the mesh
// service's `xfer` endpoint into the target instance's bucket, the in-process manager verifies,
// stages and claims it. A transcript bigger than the max payload arrives byte-identical; a re-run
// sends nothing; a run killed halfway sends only the rest on the next; the broker copy is gone
// once staged; an agent's credential cannot touch a transfer; names and duplicate ids are refused;
// a claim is one-time; a tampered staged transcript refuses the seat and the log records why.
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
  uploadTransfer,
  XferService,
} from "../../broker/internal.js";
import { carriedResume, findSession, sessionsNamed, TranscriptMismatchError } from "../../claude/index.js";
import { ManagerService, TranscriptDesk } from "../../manager/internal.js";
import { localPrincipal, MANAGER_COMMANDS, names, type SeatView } from "../../schemas/index.js";
import { carryFile, requireSessionId } from "../../cli/carry.js";
import { startClaudeManager } from "../harness/claude-manager.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../harness/until.js";

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

/** Chunks of a transfer still in the instance's bucket, as the data account sees them. */
async function brokerChunks(instance: string, digest: string): Promise<number> {
  const bucket = names.xferBucket(mesh.space, instance);
  const subject = `$O.${bucket}.C.${digest.slice("sha256:".length)}`;
  const info = await (await mesh.dataJsm()).streams.info(`OBJ_${bucket}`, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

describe("transcript carry", () => {
  test("a transcript larger than the max payload arrives byte-identical and staged 0600; the broker copy is removed; a re-run sends 0 bytes", async () => {
    const { stateDir } = await manager("c1");
    const file = transcript(3 * 1024 ** 2 + 12_345);
    const bytes = readFileSync(file);
    expect(bytes.length).toBeGreaterThan(nc.info!.max_payload);
    const party = { nc, space: mesh.space, me: operator };

    const first = await carryFile(party, { instance: "c1", session: SESSION, file });
    expect(first).toMatchObject({ sent: bytes.length, size: bytes.length, digest: sha(bytes) });
    expect(first.chunks).toBe(Math.ceil(bytes.length / (128 * 1024)));
    const staged = join(stateDir, "carry", `${sha(bytes).slice(7)}.jsonl`);
    expect(readFileSync(staged).equals(bytes)).toBe(true);
    expect(statSync(staged).mode & 0o777).toBe(0o600);
    expect(await brokerChunks("c1", first.digest)).toBe(0);

    const again = await carryFile(party, { instance: "c1", session: SESSION, file });
    expect(again).toMatchObject({ sent: 0, chunks: 0, digest: first.digest });
    expect(again.claim).not.toBe(first.claim);
  }, 120_000);

  test("a run killed halfway, then re-run, sends only the rest, from what the broker stored", async () => {
    const { stateDir } = await manager("c2");
    const file = transcript(2 * 1024 ** 2);
    const bytes = readFileSync(file);
    const party = { nc, space: mesh.space, me: operator };
    const digest = sha(bytes);
    // The first run dies after 5 chunks (as a killed CLI would: nothing local survives it).
    let chunks = 0;
    await expect(
      uploadTransfer(party, { instance: "c2", file, digest, size: bytes.length }, () => {
        if (++chunks > 5) throw new Error("killed");
      }),
    ).rejects.toThrow("killed");
    expect(await brokerChunks("c2", digest)).toBe(5);

    const second = await carryFile(party, { instance: "c2", session: SESSION, file });
    expect(second.sent).toBe(bytes.length - 5 * 128 * 1024);
    expect(second.chunks).toBe(Math.ceil(bytes.length / (128 * 1024)) - 5);
    expect(readFileSync(join(stateDir, "carry", `${digest.slice(7)}.jsonl`)).equals(bytes)).toBe(true);
  }, 120_000);

  test("the mesh service restarting mid-upload does not fail the carry: the run begins again from what the broker stored", async () => {
    const { stateDir } = await manager("c3");
    const file = transcript(1024 ** 2);
    const bytes = readFileSync(file);
    let restarted: Promise<void> | undefined;
    let chunks = 0;
    const c = await carryFile({ nc, space: mesh.space, me: operator }, { instance: "c3", session: SESSION, file }, () => {
      if (++chunks !== 4) return;
      xfer.stop(); // its open transfers are forgotten; the broker keeps the chunks
      restarted = XferService.start(mesh.serviceConnection, mesh.space, logger("test-xfer"), { operatorOnly: true }).then((s) => void (xfer = s));
    });
    await restarted;
    expect(c.sent).toBe(bytes.length);
    expect(c.chunks).toBe(Math.ceil(bytes.length / (128 * 1024)));
    expect(readFileSync(join(stateDir, "carry", `${c.digest.slice(7)}.jsonl`)).equals(bytes)).toBe(true);
  }, 60_000);

  test("chunks shrink to fit a server whose max payload cannot carry 128 KiB as base64", () => {
    expect(carryChunkBytes(1024 * 1024)).toBe(128 * 1024);
    const small = carryChunkBytes(64 * 1024);
    expect(small).toBeLessThan(64 * 1024);
    expect(Math.ceil(small / 3) * 4 + 2_048).toBeLessThanOrEqual(64 * 1024);
  });

  test("a stale transfer's chunks expire with the bucket's max age: the next begin starts over", async () => {
    xfer.stop();
    const quick = await XferService.start(mesh.serviceConnection, mesh.space, logger("test-xfer"), { operatorOnly: true, ttlMs: 1_500 });
    try {
      const file = transcript(600_000);
      const bytes = readFileSync(file);
      const party = { nc, space: mesh.space, me: operator };
      const t = { instance: "stale1", file, digest: sha(bytes), size: bytes.length };
      let chunks = 0;
      await expect(
        uploadTransfer(party, t, () => {
          if (++chunks > 2) throw new Error("killed");
        }),
      ).rejects.toThrow("killed");
      expect(await brokerChunks("stale1", t.digest)).toBe(2);
      await until(async () => (await brokerChunks("stale1", t.digest)) === 0, 15_000, "the stale chunks to expire");
      const again = await callXfer(nc, mesh.space, "xfer-begin", operator, { instance: "stale1", digest: t.digest, size: t.size });
      expect(again).toMatchObject({ stored: 0, nextSeq: 0, complete: false });
    } finally {
      quick.stop();
      xfer = await XferService.start(mesh.serviceConnection, mesh.space, logger("test-xfer"), { operatorOnly: true });
    }
  }, 60_000);

  test("a manager on another host (its own manager-profile credential, instance = its name) receives a carry; it may not read another instance's transfers", async () => {
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
      const file = transcript(400_000);
      const c = await carryFile({ nc, space: mesh.space, me: operator }, { instance: "hostb", session: SESSION, file });
      expect(readFileSync(join(stateDir, "carry", `${c.digest.slice(7)}.jsonl`)).equals(readFileSync(file))).toBe(true);
      const other = await callXfer(conn, mesh.space, "xfer-read", localPrincipal("hostb"), { instance: "c1", digest: c.digest }).catch((e: unknown) => e);
      expect(other).toBeInstanceOf(ControlCallError);
      expect((other as ControlCallError).code).toBe("not-allowed");
      await expect(callXfer(conn, mesh.space, "xfer-begin", localPrincipal("hostb"), { instance: "hostb", digest: c.digest, size: 1 })).rejects.toBeInstanceOf(
        PermissionDeniedError,
      );
    } finally {
      await conn.close();
    }
  }, 60_000);

  test("an agent's credential cannot begin, write or read a transfer (the broker refuses it)", async () => {
    const creds = await mesh.mint({ name: "mallory", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"] });
    const agent = await mesh.connection(creds, "_INBOX.local.mallory");
    const digest = `sha256:${"a".repeat(64)}`;
    await expect(callXfer(agent, mesh.space, "xfer-begin", localPrincipal("mallory"), { instance: "c1", digest, size: 10 })).rejects.toBeInstanceOf(
      PermissionDeniedError,
    );
    await expect(callXfer(agent, mesh.space, "xfer-read", localPrincipal("mallory"), { instance: "c1", digest })).rejects.toBeInstanceOf(PermissionDeniedError);
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
      claudeConfigDir: join(root, "nowhere"),
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
        claudeConfigDir: home,
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
