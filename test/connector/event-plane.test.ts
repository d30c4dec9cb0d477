// The event plane on a real static-auth nats-server: a seat's agent credential publishes AG-UI
// frames on events.local.<actor> in order, through its WAL; restarts resume with no gap and no
// duplicate; a torn transcript line is skipped; a scoped reader sees that plane and nothing else.
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logger, type Endpoint } from "../../broker/index.js";
import { EventPlane, streamViolation } from "../../connector/internal.js";
import { EVENT_PLANE, frameOf, type AgUiFrame } from "../../schemas/index.js";
import { until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";

let mesh: TestMesh;
let root: string;
const log = logger("test-event-plane");

beforeAll(async () => {
  mesh = await TestMesh.startStatic("evt");
  root = mkdtempSync(path.join(os.tmpdir(), "cotal-evt-"));
}, 60_000);
afterAll(async () => {
  await mesh?.close();
  rmSync(root, { recursive: true, force: true });
});

const SECRET = "zebra-4711";
/** A scripted turn as Claude 2.1.332 writes it: prompt, text, one Bash call and its result, the final text. */
function turn(n: number): string[] {
  const u = (k: string) => `${k}-${n}`;
  return [
    { type: "user", uuid: u("p"), message: { role: "user", content: `Say hi ${n}` } },
    { type: "assistant", uuid: u("a1"), message: { role: "assistant", content: [{ type: "text", text: "Let me look." }], stop_reason: "tool_use" } },
    {
      type: "assistant",
      uuid: u("a2"),
      message: {
        role: "assistant",
        content: [{ type: "tool_use", id: u("toolu"), name: "Bash", input: { command: `echo ${SECRET}` } }],
        stop_reason: "tool_use",
      },
    },
    {
      type: "user",
      uuid: u("r"),
      message: { role: "user", content: [{ type: "tool_result", tool_use_id: u("toolu"), content: SECRET }] },
      toolUseResult: { stdout: SECRET },
    },
    { type: "assistant", uuid: u("a3"), message: { role: "assistant", content: [{ type: "text", text: "Done." }], stop_reason: "end_turn" } },
  ].map((r) => JSON.stringify(r) + "\n");
}

let seats = 0;
async function seat(): Promise<{ name: string; ep: Endpoint; creds: string; transcript: string; dir: string }> {
  const name = `seat${++seats}`;
  const creds = await mesh.mint({ name, profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"], provision: true });
  const ep = await mesh.endpoint(name, { creds });
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true });
  return { name, ep, creds, transcript: path.join(dir, "session.jsonl"), dir };
}

/** Write `text` as the seat's transcript and start a plane following session `session` from its start. */
function recording(s: { ep: Endpoint; dir: string; transcript: string }, session: string, text: string): EventPlane {
  writeFileSync(s.transcript, text, { mode: 0o600 });
  const p = plane(s.ep, s.dir);
  p.sessionStart({ sessionId: session, transcriptPath: s.transcript, source: "startup" });
  return p;
}

function plane(ep: Endpoint, dir: string): EventPlane {
  const p = new EventPlane({ ep, dir: path.join(dir, "events"), log, retryMs: 100, pollMs: 50 });
  p.start();
  return p;
}

/** Every frame stored on the seat's plane, read as an admin would (the mesh service's data account). */
async function frames(name: string, reader?: Endpoint): Promise<Array<AgUiFrame & { subjectSeq: number; raw: string }>> {
  const r = reader ?? (await mesh.endpoint(`reader_${name}`, { creds: await mesh.mint({ name: `reader_${name}`, profile: "observer" }) }));
  const items = await r.history(`events.local.${name}`);
  return items.map((h) => ({ ...frameOf(h.message.parts)!, subjectSeq: h.seq, raw: JSON.stringify(h.message) }));
}

const eventsOf = (fs: AgUiFrame[]) => fs.flatMap((f) => f.events.map((e) => ({ ...e, runId: e.type === "RUN_STARTED" ? e.runId : f.runId })));

describe("the event plane", () => {
  it("publishes a turn as run, text and tool start/end frames in order, never the tool's arguments or result", async () => {
    const s = await seat();
    const p = recording(s, "sess-1", "");
    for (const l of turn(1)) appendFileSync(s.transcript, l);
    await until(async () => (await frames(s.name)).flatMap((f) => f.events).some((e) => e.type === "RUN_FINISHED"), 10_000, "the run finished on the plane");
    const got = await frames(s.name);
    expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
    expect(got.every((f) => f.threadId === "sess-1" && f.epoch === 1)).toBe(true);
    const types = eventsOf(got).map((e) => e.type);
    expect(types).toEqual([
      "RUN_STARTED",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "TOOL_CALL_START",
      "TOOL_CALL_END",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "RUN_FINISHED",
    ]);
    expect(eventsOf(got).find((e) => e.type === "TOOL_CALL_START")).toMatchObject({ toolCallName: "Bash", toolCallId: "toolu-1" });
    expect(got.map((f) => f.raw).join("\n")).not.toContain(SECRET);
    expect(streamViolation(eventsOf(got))).toBeUndefined();
    await p.close();
  });

  it("a session whose SessionStart named no transcript takes the one a later hook names (Copilot's Stop), read from its start", async () => {
    const s = await seat();
    writeFileSync(s.transcript, turn(1).join(""), { mode: 0o600 });
    const p = plane(s.ep, s.dir);
    p.sessionStart({ sessionId: "sess-late", source: "new" });
    p.sessionSeen({ sessionId: "sess-late", transcriptPath: s.transcript });
    p.turnEnded("finished");
    await until(async () => (await frames(s.name)).flatMap((f) => f.events).some((e) => e.type === "RUN_FINISHED"), 10_000, "the run finished on the plane");
    const got = await frames(s.name);
    expect(eventsOf(got).map((e) => e.type)[0]).toBe("RUN_STARTED");
    expect(eventsOf(got).filter((e) => e.type === "TOOL_CALL_START")).toHaveLength(1);
    expect(got.every((f) => f.threadId === "sess-late")).toBe(true);
    // Another session's hook does not move the plane off the one it follows.
    p.sessionSeen({ sessionId: "sess-other", transcriptPath: path.join(s.dir, "other.jsonl") });
    await p.close();
  });

  it("a connector killed mid-turn and restarted leaves no gap, no duplicate, and closes the open run", async () => {
    const s = await seat();
    const lines = turn(1);
    const first = recording(s, "sess-k", lines.slice(0, 3).join(""));
    await until(
      async () => (await frames(s.name)).flatMap((f) => f.events).some((e) => e.type === "TOOL_CALL_START"),
      10_000,
      "the tool call started on the plane",
    );
    // Crash: the connection drops with frames still only in the WAL; nothing is closed.
    await s.ep.close();
    appendFileSync(s.transcript, lines[3]!);
    await sleep(300); // the dead writer records the result into its WAL but cannot publish it
    expect(first.backlog).toBeGreaterThan(0);
    const ep2 = await mesh.endpoint(s.name, { creds: s.creds });
    const second = plane(ep2, s.dir);
    second.sessionStart({ sessionId: "sess-k", transcriptPath: s.transcript, source: "resume" });
    appendFileSync(s.transcript, lines[4]!);
    await until(
      async () => (await frames(s.name)).flatMap((f) => f.events).filter((e) => e.type === "TEXT_MESSAGE_END").length >= 3,
      10_000,
      "the final text arrived",
    );
    await until(() => second.backlog === 0, 5_000, "the WAL drained");
    const got = await frames(s.name);
    expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
    expect(new Set(got.map((f) => f.subjectSeq)).size).toBe(got.length);
    expect(got.at(-1)!.epoch).toBe(2);
    const evs = eventsOf(got);
    expect(streamViolation(evs)).toBeUndefined();
    // The tool call ended exactly once; the interrupted run closed; the rest of the turn came in a run of its own.
    expect(evs.filter((e) => e.type === "TOOL_CALL_END")).toHaveLength(1);
    expect(evs.filter((e) => e.type === "RUN_ERROR").map((e) => e.message)).toEqual(["run interrupted"]);
    expect(evs.filter((e) => e.type === "TEXT_MESSAGE_START")).toHaveLength(3);
    await second.close();
    await first.close(0);
  });

  it("skips a torn transcript line with a log line naming its offset; later records still publish", async () => {
    const s = await seat();
    const lines = turn(7);
    const torn = '{"type":"assistant","uuid":"x","message":{"role":"assis\n';
    const p = recording(s, "sess-t", lines[0]! + torn + lines.slice(1).join(""));
    await until(
      async () => (await frames(s.name)).flatMap((f) => f.events).some((e) => e.type === "RUN_FINISHED"),
      10_000,
      "the run after the torn line finished",
    );
    expect(eventsOf(await frames(s.name)).filter((e) => e.type === "TOOL_CALL_START")).toHaveLength(1);
    await p.close();
  });

  it("skips a transcript line longer than one read step (a huge tool result) instead of stalling; later records still publish", async () => {
    const s = await seat();
    const lines = turn(8);
    const huge = `{"type":"user","uuid":"big","message":{"role":"user","content":"${"x".repeat(5 * 1024 * 1024)}"}}\n`;
    const p = recording(s, "sess-big", lines[0]! + huge + lines.slice(1).join(""));
    await until(
      async () => (await frames(s.name)).flatMap((f) => f.events).some((e) => e.type === "RUN_FINISHED"),
      20_000,
      "the run after the huge line finished",
    );
    expect(eventsOf(await frames(s.name)).filter((e) => e.type === "TOOL_CALL_START")).toHaveLength(1);
    await p.close();
  });

  it("a frame the broker stored whose ack never reached the WAL is taken as stored at the next start: no halt, no duplicate", async () => {
    const s = await seat();
    const p = recording(s, "sess-lost-ack", turn(1).join(""));
    await until(async () => p.backlog === 0 && (await frames(s.name)).length > 0, 10_000, "frames stored");
    await p.close();
    // The process died between the broker's ack and the WAL's ack line: drop the last ack line.
    const wal = path.join(s.dir, "events", "sess-lost-ack.wal");
    const lines = readFileSync(wal, "utf8").split("\n").filter(Boolean);
    const lastAck = lines.findLastIndex((l) => l.startsWith('{"t":"ack"'));
    writeFileSync(wal, lines.filter((_, i) => i !== lastAck).join("\n") + "\n", { mode: 0o600 });
    const stored = await frames(s.name);
    // The frame is read back from the WAL: its message id must be the one it was stored with.
    const again = plane(s.ep, s.dir);
    await until(() => again.status !== "establishing", 5_000, "the plane established");
    expect(again.haltReason).toBeUndefined();
    expect(again.status).toBe("live");
    await until(() => again.backlog === 0, 5_000, "the WAL drained");
    const got = await frames(s.name);
    expect(got.slice(0, stored.length).map((f) => f.raw)).toEqual(stored.map((f) => f.raw));
    expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
    await again.close();
  });

  it("a WAL that disagrees with the broker stops publishing with a message naming both values", async () => {
    const s = await seat();
    const p = recording(s, "sess-d", turn(1).join(""));
    await until(async () => p.backlog === 0 && (await frames(s.name)).length > 0, 10_000, "frames stored");
    await p.close();
    // Another writer posts on the plane meanwhile.
    await s.ep.post(`events.local.${s.name}`, [{ kind: "text", text: "someone else" }], { id: "intruder-1" });
    const again = plane(s.ep, s.dir);
    await until(() => again.status === "halted", 5_000, "the plane halted");
    expect(again.haltReason).toMatch(/write-ahead log says frame \d+ at stream sequence \d+ .* broker's last .* frame 0 at stream sequence \d+/);
    await again.close();
  });

  it("a WAL from before the plane had its own stream starts the plane over at frame 1 there, keeping its cursor and what waited", async () => {
    const s = await seat();
    writeFileSync(s.transcript, turn(1).join(""), { mode: 0o600 });
    // What a connector wrote while its plane lived in CHAT_: 40 frames acked at CHAT_'s sequence 900,
    // frame 41 (of a run still open) not yet published, the transcript read to its end. No `store`.
    const old = (seq: number): AgUiFrame => ({
      kind: "ag-ui.frame",
      protocol: "ag-ui",
      threadId: "sess-old",
      runId: "r-old",
      epoch: 3,
      seq,
      events: [{ type: "TEXT_MESSAGE_CONTENT", messageId: "m-old", delta: "written before the move" }],
    });
    const cursor = { transcript: s.transcript, offset: Buffer.byteLength(turn(1).join("")) };
    const state = { threadId: "sess-old", runId: "r-old", openTools: [] };
    mkdirSync(path.join(s.dir, "events"), { recursive: true });
    writeFileSync(
      path.join(s.dir, "events", "sess-old.wal"),
      [
        { t: "base", session: "sess-old", cursor, ackedSeq: 40, subjectSeq: 900, epoch: 3, state },
        { t: "frames", frames: [old(41)], cursor, state },
      ]
        .map((l) => JSON.stringify(l) + "\n")
        .join(""),
      { mode: 0o600 },
    );
    const p = plane(s.ep, s.dir);
    await until(
      async () => p.backlog === 0 && (await frames(s.name)).length >= 2,
      5_000,
      `the waiting frame published (status ${p.status}: ${p.haltReason ?? ""})`,
    );
    const got = await frames(s.name);
    expect(p.status).toBe("live");
    expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
    // The waiting frame keeps its writer's epoch; what this incarnation writes has the next one.
    expect(got[0]).toMatchObject({ runId: "r-old", epoch: 3, events: [{ delta: "written before the move" }] });
    expect(got[1]).toMatchObject({ runId: "r-old", epoch: 4 });
    // The run the old incarnation left open is closed; nothing of the transcript is read twice.
    expect(eventsOf(got).map((e) => e.type)).toEqual(["TEXT_MESSAGE_CONTENT", "RUN_ERROR"]);
    await p.close();
  });

  it("a cleared session starts at the boundary captured at SessionStart; a compacted one keeps its cursor; big text is split into frames that fit", async () => {
    const s = await seat();
    const p = recording(s, "sess-a", turn(1).join(""));
    await until(async () => p.backlog === 0 && (await frames(s.name)).length > 0, 10_000, "session a published");
    // Compaction: same session and transcript; nothing is published twice.
    p.sessionStart({ sessionId: "sess-a", transcriptPath: s.transcript, source: "compact" });
    // /clear: a new session id; its transcript already holds what came before the boundary.
    const cleared = path.join(s.dir, "cleared.jsonl");
    writeFileSync(cleared, turn(2).join(""));
    p.sessionStart({ sessionId: "sess-b", transcriptPath: cleared, source: "clear" });
    await sleep(200);
    const big = "x".repeat(600_000);
    appendFileSync(
      cleared,
      turn(3).join("") +
        JSON.stringify({ type: "assistant", uuid: "big", message: { role: "assistant", content: [{ type: "text", text: big }], stop_reason: "end_turn" } }) +
        "\n",
    );
    await until(
      async () => p.backlog === 0 && eventsOf(await frames(s.name)).some((e) => e.type === "RUN_FINISHED" && e.runId === "big"),
      10_000,
      "session b published",
    );
    const got = await frames(s.name);
    const evs = eventsOf(got);
    expect(evs.filter((e) => e.type === "RUN_STARTED").map((e) => e.runId)).toEqual(["p-1", "p-3", "big"]);
    expect(got.filter((f) => f.threadId === "sess-b").length).toBeGreaterThan(3);
    // Each within what EVENTS_ stores (64 KiB, headers included).
    expect(Math.max(...got.map((f) => Buffer.byteLength(f.raw)))).toBeLessThanOrEqual(EVENT_PLANE.maxFrameBytes - 1_024);
    expect(
      evs
        .filter((e) => e.type === "TEXT_MESSAGE_CONTENT" && e.messageId === "big:0")
        .map((e) => e.delta)
        .join(""),
    ).toBe(big);
    expect(streamViolation(evs)).toBeUndefined();
    expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
    await p.close();
  });

  it("two writers on one plane cannot interleave: the second one's publish is refused and it stops, naming both sequences", async () => {
    const s = await seat();
    const a = plane(s.ep, path.join(s.dir, "a"));
    const b = plane(s.ep, path.join(s.dir, "b"));
    await until(() => a.status === "live" && b.status === "live", 5_000, "both writers established on an empty plane");
    writeFileSync(s.transcript, turn(1).join(""));
    a.sessionStart({ sessionId: "sess-2w", transcriptPath: s.transcript, source: "startup" });
    await until(() => a.backlog === 0 && a.status === "live", 5_000, "the first writer stored its frames");
    const other = path.join(s.dir, "other.jsonl");
    writeFileSync(other, turn(9).join(""));
    b.sessionStart({ sessionId: "sess-2w-b", transcriptPath: other, source: "startup" });
    await until(() => b.status === "halted", 5_000, "the second writer stopped");
    expect(b.haltReason).toMatch(
      /expected stream sequence 0 \(frame 0\) to be the last on events\.local\.\w+, the broker's last is stream sequence \d+ \(frame 1\)/,
    );
    const got = await frames(s.name);
    expect(got.every((f) => f.threadId === "sess-2w")).toBe(true);
    await a.close();
    await b.close();
  });

  it("while the mesh is down the seat keeps recording into its WAL; when it is back the plane catches up in order", async () => {
    const s = await seat();
    const p = recording(s, "sess-r", turn(1).join(""));
    await until(() => p.backlog === 0 && p.status === "live", 10_000, "turn 1 published");
    await mesh.server.stop();
    appendFileSync(s.transcript, turn(2).join("") + turn(3).join(""));
    await until(() => p.backlog >= 2, 5_000, "turns 2 and 3 wait in the WAL");
    await mesh.server.restart();
    await until(() => p.backlog === 0, 20_000, "the plane caught up");
    const got = await frames(s.name);
    expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
    expect(eventsOf(got).filter((e) => e.type === "RUN_FINISHED")).toHaveLength(3);
    expect(streamViolation(eventsOf(got))).toBeUndefined();
    expect(p.status).toBe("live");
    await p.close();
  }, 60_000);

  it("a scoped reader minted for one plane reads its history and live frames and nothing else", async () => {
    const s = await seat();
    const other = await seat();
    await s.ep.join();
    await other.ep.send("general", "not for the watcher");
    const p = recording(s, "sess-w", turn(1).join(""));
    await until(() => p.backlog === 0 && p.status === "live", 10_000, "published");
    const creds = await mesh.mint({ name: `watcher_${s.name}`, profile: "agent", allowSubscribe: [`events.local.${s.name}`], provision: true });
    const watcher = await mesh.endpoint(`watcher_${s.name}`, { creds });
    const history = await frames(s.name, watcher);
    expect(history.length).toBeGreaterThan(0);
    await watcher.join();
    const live: AgUiFrame[] = [];
    void (async () => {
      for await (const d of watcher.deliveries) {
        const f = frameOf(d.message.parts);
        if (f) live.push(f);
        d.ack?.();
      }
    })();
    await watcher.joinChannel(`events.local.${s.name}`);
    appendFileSync(s.transcript, turn(2).join(""));
    await until(() => live.some((f) => f.events.some((e) => e.type === "RUN_FINISHED" && e.runId === "p-2")), 10_000, "the watcher got the live frames");
    await expect(watcher.history("general")).rejects.toThrow(/Not allowed to read channel general/);
    await expect(watcher.history(`events.local.${other.name}`)).rejects.toThrow(/Not allowed to read channel/);
    await p.close();
  });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
