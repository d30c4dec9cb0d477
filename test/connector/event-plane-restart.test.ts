// The shipped connector killed (SIGKILL) mid-turn and started again on the same state dir: its
// event plane resumes at the WAL's cursor with no gap and no duplicate frame, and the run the
// crash left open is closed.
import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Connector, EventWal, optionsFromEnv, readLaunchMaterial, runHook, streamViolation } from "../../connector/internal.js";
import { AGUI_FRAME_KIND, AGUI_PROTOCOL, frameOf, type AgUiFrame } from "../../schemas/index.js";
import { NatsServer, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { CONNECTOR_BUNDLE, ensureBuilt } from "./built.js";
import { tempControlDir } from "./helpers.js";

let server: NatsServer;
let mesh: TestMesh;
const ctl = tempControlDir();

beforeAll(async () => {
  ensureBuilt();
  server = await NatsServer.start();
  mesh = await TestMesh.start(server, "evtkill");
}, 60_000);
afterAll(async () => {
  await mesh?.close();
  await server?.cleanup();
  ctl.cleanup();
});

const records = [
  { type: "user", uuid: "p1", message: { role: "user", content: "Run the tests" } },
  { type: "assistant", uuid: "a1", message: { role: "assistant", content: [{ type: "text", text: "Running them." }] } },
  {
    type: "assistant",
    uuid: "a2",
    message: { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "npm test" } }] },
  },
  { type: "user", uuid: "r1", message: { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "ok" }] } },
  { type: "assistant", uuid: "a3", message: { role: "assistant", content: [{ type: "text", text: "All green." }], stop_reason: "end_turn" } },
].map((r) => JSON.stringify(r) + "\n");

describe("the event plane across a connector killed mid-turn", () => {
  it("resumes with no gap and no duplicate frame, and closes the run the crash left open", async () => {
    const state = path.join(ctl.dir, "state");
    mkdirSync(state, { recursive: true });
    const transcript = path.join(ctl.dir, "session.jsonl");
    writeFileSync(transcript, records.slice(0, 3).join(""));
    const env = {
      COTAL_SERVER: server.url,
      COTAL_SPACE: mesh.space,
      COTAL_NAME: "bob",
      COTAL_CONTROL_DIR: ctl.dir,
      COTAL_STATE_DIR: state,
      COTAL_JOIN_ON: "start",
    };
    const start = (): ChildProcess =>
      spawn(process.execPath, [CONNECTOR_BUNDLE], {
        env: { PATH: process.env.PATH ?? "", COTAL_LOG_LEVEL: "warn", ...env },
        stdio: ["pipe", "ignore", "inherit"],
      });
    const hook = (event: string, payload: Record<string, unknown>) =>
      runHook(event, JSON.stringify({ hook_event_name: event, session_id: "sess-1", ...payload }), env, { io: { write: async () => undefined } });
    const reader = await mesh.endpoint("reader");
    const stored = async () => (await reader.history("events.local.bob")).map((h) => ({ id: h.message.id, frame: frameOf(h.message.parts)! }));
    const events = async () => (await stored()).flatMap((s) => s.frame.events.map((e) => ({ ...e, runId: e.runId ?? s.frame.runId })));
    // What the plane held at the last look, for a wait that runs out (a loaded machine starts the
    // connector slowly; these waits are outcomes, so their limits only matter when something is wrong).
    let seen: string[] = [];
    const holding = (want: (e: Awaited<ReturnType<typeof events>>[number]) => boolean) => async () => {
      const evs = await events();
      seen = evs.map((e) => (e.type === "TEXT_MESSAGE_CONTENT" ? `${e.type}(${e.delta})` : e.type));
      return evs.some(want);
    };

    let child = start();
    const onThePlane = () =>
      `; the plane held: ${seen.join(", ") || "nothing"}; the connector ${child.exitCode === null ? "runs" : `exited ${child.exitCode}`}`;
    await hook("SessionStart", { source: "startup", transcript_path: transcript });
    await until(
      holding((e) => e.type === "TOOL_CALL_START"),
      30_000,
      () => `the tool call started on the plane${onThePlane()}`,
    );
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));

    appendFileSync(transcript, records.slice(3).join(""));
    child = start();
    try {
      await hook("Stop", {});
      await until(
        holding((e) => e.type === "TEXT_MESSAGE_CONTENT" && e.delta === "All green."),
        30_000,
        () => `the rest of the turn published after the restart${onThePlane()}`,
      );
      const frames = await stored();
      expect(frames.map((f) => f.frame.seq)).toEqual(frames.map((_, i) => i + 1));
      expect(new Set(frames.map((f) => f.id)).size).toBe(frames.length);
      expect(frames.at(-1)!.frame.epoch).toBe(2);
      const evs = await events();
      expect(streamViolation(evs)).toBeUndefined();
      expect(evs.filter((e) => e.type === "TOOL_CALL_START")).toHaveLength(1);
      expect(evs.filter((e) => e.type === "TOOL_CALL_END")).toHaveLength(1);
      expect(evs.filter((e) => e.type === "RUN_ERROR").map((e) => e.message)).toEqual(["run interrupted"]);
      expect(evs.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta)).toEqual(["Run the tests", "Running them.", "All green."]);
    } finally {
      child.stdin?.end();
      await new Promise((r) => child.once("exit", r));
    }
  }, 90_000);
});

describe("turning the event plane off", () => {
  it("launch material noEvents and COTAL_EVENTS=off leave the seat without a plane; the material's folder is its state dir", async () => {
    const dir = path.join(ctl.dir, "seat");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const material = path.join(dir, "launch.json");
    writeFileSync(
      material,
      JSON.stringify({ server: server.url, space: mesh.space, name: "quiet", controlToken: "t".repeat(32), controlDir: ctl.dir, noEvents: true }),
      { mode: 0o600 },
    );
    const launch = readLaunchMaterial(material);
    expect(launch).toMatchObject({ noEvents: true, stateDir: dir });
    expect(optionsFromEnv({ COTAL_EVENTS: "off" }).events).toBe(false);
    expect(optionsFromEnv({}).events).toBeUndefined();
    const off = await Connector.start({ launch, env: { COTAL_CONTROL_DIR: ctl.dir }, joinOn: "start", pairing: false });
    const on = await Connector.start({
      launch: { ...launch, name: "loud", noEvents: false },
      env: { COTAL_CONTROL_DIR: ctl.dir },
      joinOn: "start",
      pairing: false,
    });
    try {
      await until(() => on.status().events.status === "live", 5_000, "the plane of the seat that has one is live");
      expect(off.status().events).toEqual({ status: "off" });
      expect(on.status().events).toEqual({ status: "live", backlog: 0 });
    } finally {
      await off.close();
      await on.close();
    }
  }, 30_000);

  it("frames a killed connector left unconfirmed in its WAL are published when the seat's connector starts again, before any hook", async () => {
    // What a short session leaves when Claude's SIGKILL (half a second after SIGINT) cuts the
    // flush: frames written to the WAL, none stored. The next start may see no hook at all
    // (a health check, a session that ends at once), so it must not wait for one.
    const state = path.join(ctl.dir, "state-cut");
    const frame = (seq: number, events: AgUiFrame["events"]): AgUiFrame => ({
      kind: AGUI_FRAME_KIND,
      protocol: AGUI_PROTOCOL,
      threadId: "sess-cut",
      runId: "p1",
      epoch: 1,
      seq,
      events,
    });
    const pending = [
      frame(1, [{ type: "RUN_STARTED", threadId: "sess-cut", runId: "p1" }]),
      frame(2, [
        { type: "TEXT_MESSAGE_START", messageId: "a1", role: "assistant" },
        { type: "TEXT_MESSAGE_CONTENT", messageId: "a1", delta: "cut short" },
        { type: "TEXT_MESSAGE_END", messageId: "a1" },
      ]),
    ];
    EventWal.create(path.join(state, "events"), {
      session: "sess-cut",
      cursor: { transcript: null, offset: 0 },
      ackedSeq: 0,
      subjectSeq: 0,
      epoch: 1,
      state: { threadId: "sess-cut", runId: "p1", openTools: [] },
      pending,
      torn: [],
    }).close();
    const child = spawn(process.execPath, [CONNECTOR_BUNDLE], {
      env: {
        PATH: process.env.PATH ?? "",
        COTAL_LOG_LEVEL: "warn",
        COTAL_SERVER: server.url,
        COTAL_SPACE: mesh.space,
        COTAL_NAME: "cut",
        COTAL_CONTROL_DIR: ctl.dir,
        COTAL_STATE_DIR: state,
      },
      stdio: ["pipe", "ignore", "inherit"],
    });
    try {
      const reader = await mesh.endpoint("reader_cut");
      const frames = async () => (await reader.history("events.local.cut")).map((h) => frameOf(h.message.parts)!);
      await until(async () => (await frames()).length >= 2, 15_000, "the WAL's two frames stored on events.local.cut with no hook sent");
      const stored = await frames();
      expect(stored.slice(0, 2)).toEqual(pending);
      // The run the cut left open is closed as interrupted, by the new incarnation.
      await until(async () => (await frames()).some((f) => f.events.some((e) => e.type === "RUN_ERROR")), 15_000, "the open run closed");
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
  }, 30_000);
});
