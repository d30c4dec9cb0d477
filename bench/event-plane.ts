// The event plane (docs/events.md): frames per second one seat publishes (transcript → WAL →
// ordered publishes with Nats-Expected-Last-Subject-Sequence) beside a raw client publishing the
// same frame bytes in order with the same headers; frames per second one console renders
// (core subscription, envelope check, frame check, timeline lines) beside a raw subscription that
// only parses the JSON; and what the plane adds to a tool call's hook round trip (PreToolUse
// relay with the plane busy vs a seat with the plane off).
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { logger } from "../broker/index.js";
import { ConsoleFeed, FrameRenderer, plainLines } from "../cli/console/console-feed.js";
import { MeshSession } from "../cli/mesh-client/session.js";
import { Connector, EventPlane, runHook } from "../connector/internal.js";
import { encodeMessage, eventsChannelOf, frameOf, patterns, postSubject, type CotalMessage } from "../schemas/index.js";
import { until } from "../testbed/until.js";
import { Arrivals, type Tally } from "./checks.js";
import type { Scope } from "./context.js";
import { cpuNowUs, type CpuPerMessage } from "./cpu.js";
import { summarize, type Summary } from "./stats.js";

export interface EventPlanePlan {
  /** Turns written to the transcript (each: prompt, text, tool start, tool result, final text). */
  turns: number;
  /** PreToolUse hooks timed per side. */
  hooks: number;
}

export interface EventPlaneResult {
  publish: { cotal: number; raw: number; frames: number; events: number; cpu: CpuPerMessage };
  render: { cotal: number; raw: number; frames: number };
  hook: { planeOn: Summary; planeOff: Summary };
  /**
   * `published`: turns written, turns whose RUN_FINISHED reached the console, frames seen twice,
   * frames the plane still held; `raw`: frames published and received by the raw subscriber;
   * `rendered`: the same raw frames rendered by the console; `hooks on`/`hooks off`: hooks run and
   * answered `{}`.
   */
  tallies: Record<"published" | "raw" | "rendered" | "hooks on" | "hooks off", Tally>;
}

const log = logger("bench-event-plane");
const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;

/** Transcript lines of `n` turns, as Claude writes them. */
function turns(from: number, n: number): string {
  const out: string[] = [];
  for (let i = from; i < from + n; i++) {
    out.push(
      JSON.stringify({ type: "user", uuid: `p${i}`, message: { role: "user", content: `Step ${i}: run the tests` } }),
      JSON.stringify({ type: "assistant", uuid: `a${i}`, message: { role: "assistant", content: [{ type: "text", text: "Running the test suite now." }] } }),
      JSON.stringify({
        type: "assistant",
        uuid: `t${i}`,
        message: { role: "assistant", content: [{ type: "tool_use", id: `toolu_${i}`, name: "Bash", input: { command: "npm test" } }] },
      }),
      JSON.stringify({ type: "user", uuid: `r${i}`, message: { role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_${i}`, content: "ok" }] } }),
      JSON.stringify({
        type: "assistant",
        uuid: `f${i}`,
        message: { role: "assistant", content: [{ type: "text", text: "All green." }], stop_reason: "end_turn" },
      }),
    );
  }
  return out.join("\n") + "\n";
}

/** Every wait of this bench: generous, a loaded 2-core machine is slow, and polled often. */
const wait = (cond: () => boolean | Promise<boolean>, what: string) => until(cond, 120_000, `event-plane bench: ${what}`, 5);

export async function eventPlane(scope: Scope, plan: EventPlanePlan): Promise<EventPlaneResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "cotal-bench-evt-"));
  scope.defer(async () => rmSync(dir, { recursive: true, force: true }));

  // --- publish: one seat's plane, transcript written at once, until every frame is stored.
  const { ep } = await scope.joined("evseat");
  const session = await MeshSession.open({ server: scope.url, space: scope.space });
  scope.defer(() => session.close());
  const renderer = new FrameRenderer();
  const seen: CotalMessage[] = [];
  const frameIds = new Arrivals();
  const finished = new Set<string>();
  let lastSeen = 0n;
  let lastFrameAt = 0n;
  const finalRun = `p${plan.turns - 1}`;
  const feed = new ConsoleFeed(session, log, (item) => {
    if (!item.frame) return;
    plainLines(item, renderer);
    if (!frameIds.add(item.message.id)) return;
    seen.push(item.message);
    if (item.frame.events.some((e) => e.type === "RUN_FINISHED")) finished.add(item.frame.runId);
    lastSeen = process.hrtime.bigint();
    if (item.frame.runId === finalRun && item.frame.events.some((e) => e.type === "RUN_FINISHED")) lastFrameAt = lastSeen;
  });
  scope.defer(async () => feed.close());
  await feed.add([eventsChannelOf(ep.me)], Date.now());
  const transcript = path.join(dir, "t.jsonl");
  writeFileSync(transcript, "");
  const plane = new EventPlane({ ep, dir: path.join(dir, "events"), log, pollMs: 5 });
  scope.defer(() => plane.close(0));
  plane.start();
  plane.sessionStart({ sessionId: "bench", transcriptPath: transcript, source: "startup" });
  await wait(() => plane.status === "live", "the plane established");
  // CPU from the transcript's write until every frame is stored and rendered by the console; raw's
  // from its first publish until its subscriber and the console have every frame.
  const c0 = cpuNowUs(scope.pids);
  const t0 = process.hrtime.bigint();
  appendFileSync(transcript, turns(0, plan.turns));
  // The last turn's RUN_FINISHED reached a live subscriber: every frame before it was stored, in order.
  await wait(() => lastFrameAt > 0n && plane.backlog === 0, "all frames stored");
  const cotalCpuUs = cpuNowUs(scope.pids) - c0;
  const publishMs = Number(lastFrameAt - t0) / 1e6;
  const frames = seen.length;
  const events = seen.reduce((n, m) => n + (frameOf(m.parts)?.events.length ?? 0), 0);

  // --- raw: the same frame bytes, published in order with msg id and expected last subject sequence.
  const raw = await scope.raw("evraw");
  const subject = postSubject(scope.space, { owner: "local", actor: "evraw" }, "events.local.evraw");
  const rawIds = new Arrivals();
  let rawReceived = 0;
  const sub = raw.nc.subscribe(patterns.channelPosts(scope.space, "events.local.evraw"), {
    callback: (_e, m) => {
      const parsed = JSON.parse(new TextDecoder().decode(m.data)) as { id: string };
      if (rawIds.add(parsed.id)) rawReceived += 1;
    },
  });
  scope.defer(async () => sub.unsubscribe());
  const payloads = seen.map((m) => encodeMessage({ ...m, from: { id: "local.evraw", name: "evraw" }, channel: "events.local.evraw", id: `raw-${m.id}` }));
  // The console renders the raw publishes too, beside the raw subscriber: the same stream, two readers.
  const rendered = new Arrivals();
  let consoleDoneAt = 0n;
  const rawRenderer = new FrameRenderer();
  const rawFeed = new ConsoleFeed(session, log, (item) => {
    if (!item.frame) return;
    plainLines(item, rawRenderer);
    if (rendered.add(item.message.id) && rendered.received === payloads.length) consoleDoneAt = process.hrtime.bigint();
  });
  scope.defer(async () => rawFeed.close());
  await rawFeed.add(["events.local.evraw"], Date.now());
  const rc0 = cpuNowUs(scope.pids);
  const r0 = process.hrtime.bigint();
  let last = 0;
  for (const [i, data] of payloads.entries()) {
    const ack = await raw.js.publish(subject, data, { msgID: `raw-${i}`, expect: { lastSubjectSequence: last } });
    last = ack.seq;
  }
  const rawPublishMs = ms(r0);
  await wait(() => rawReceived >= payloads.length, "the raw subscriber got every frame");
  const rawRenderMs = ms(r0);
  await wait(() => consoleDoneAt > 0n, "the console rendered every raw frame");
  const renderMs = Number(consoleDoneAt - r0) / 1e6;
  const rawCpuUs = cpuNowUs(scope.pids) - rc0;

  // --- hook round trip: PreToolUse relay with the plane on (and busy) vs off.
  const hook = async (events: boolean): Promise<{ summary: Summary; tally: Tally }> => {
    const name = events ? "hookon" : "hookoff";
    const ctl = mkdtempSync(path.join(dir, `${name}-`));
    const c = await Connector.start({
      launch: { source: "env", server: scope.url, space: scope.space, owner: "local", name, channels: [] },
      env: { COTAL_CONTROL_DIR: ctl },
      joinOn: "start",
      pairing: false,
      events,
      stateDir: ctl,
    });
    scope.defer(() => c.close());
    const tr = path.join(ctl, "t.jsonl");
    writeFileSync(tr, "");
    const env = { COTAL_CONTROL_DIR: ctl, COTAL_SPACE: scope.space, COTAL_NAME: name };
    let answered = 0;
    const sink = { write: async () => undefined };
    const reply = { write: async (text: string) => void (text.trim() === "{}" && (answered += 1)) };
    const payload = (event: string) =>
      JSON.stringify({ hook_event_name: event, session_id: `s-${name}`, transcript_path: tr, source: "startup", tool_name: "Bash" });
    await runHook("SessionStart", payload("SessionStart"), env, { io: sink });
    const samples: number[] = [];
    for (let i = 0; i < plan.hooks; i++) {
      // A turn's worth of transcript for the plane to chew on between tool calls.
      if (i % 10 === 0) appendFileSync(tr, turns(i, 5));
      const h0 = process.hrtime.bigint();
      await runHook("PreToolUse", payload("PreToolUse"), env, { io: reply });
      samples.push(ms(h0));
    }
    return { summary: summarize(samples), tally: { sent: plan.hooks, received: answered, duplicates: 0, pending: 0 } };
  };
  const planeOff = await hook(false);
  const planeOn = await hook(true);

  return {
    publish: {
      cotal: frames / (publishMs / 1000),
      raw: frames / (rawPublishMs / 1000),
      frames,
      events,
      cpu: { cotal: cotalCpuUs / frames, raw: rawCpuUs / payloads.length },
    },
    render: { cotal: frames / (renderMs / 1000), raw: frames / (rawRenderMs / 1000), frames },
    hook: { planeOn: planeOn.summary, planeOff: planeOff.summary },
    tallies: {
      published: { sent: plan.turns, received: finished.size, duplicates: frameIds.duplicates, pending: plane.backlog },
      raw: rawIds.tally(payloads.length, 0),
      rendered: rendered.tally(payloads.length, 0),
      "hooks on": planeOn.tally,
      "hooks off": planeOff.tally,
    },
  };
}
