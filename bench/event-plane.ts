// The event plane (docs/events.md): frames per second one seat publishes (transcript → WAL →
// ordered publishes with Nats-Expected-Last-Subject-Sequence) beside a raw client publishing the
// same frame bytes in order with the same headers, and beside the raw client doing what the plane
// must and plain raw does not (the transcript read, the WAL, the dedupe id, the envelope check);
// frames per second one console renders
// (core subscription, envelope check, frame check, timeline lines) beside a raw subscription that
// only parses the JSON; and what the plane adds to a tool call's hook round trip (PreToolUse
// relay with the plane busy vs a seat with the plane off).
import { createHash } from "node:crypto";
import { appendFileSync, closeSync, fstatSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync, writeSync } from "node:fs";
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
import { CpuAccount, type CpuPerMessage } from "./cpu.js";
import { summarize, type Summary } from "./stats.js";

export interface EventPlanePlan {
  /** Turns measured per side (each: prompt, text, tool start, tool result, final text). */
  turns: number;
  /** Turns each side publishes first, unmeasured, so no side runs the others' cold code. */
  warmup: number;
  /** The measured turns come in this many blocks per side, the sides' order alternating. */
  blocks: number;
  /** PreToolUse hooks timed per side. */
  hooks: number;
}

/** The sides of the publish figure: Cotal's plane, the raw client, the raw client doing what the plane must. */
const SIDES = ["cotal", "raw", "rawSameWork"] as const;
type Side = (typeof SIDES)[number];

export interface EventPlaneResult {
  /** Frames per second each side published (`rawSameWork`: raw + the WAL, the dedupe id, the envelope check, the transcript read). */
  publish: { cotal: number; raw: number; rawSameWork: number; frames: number; events: number; cpu: CpuPerMessage; cpuSameWork: CpuPerMessage };
  render: { cotal: number; raw: number; frames: number };
  hook: { planeOn: Summary; planeOff: Summary };
  /**
   * `published`: turns written, turns whose RUN_FINISHED reached the console, frames seen twice,
   * frames the plane still held; `raw`, `raw same work`: frames published and received by each
   * raw subscriber; `rendered`: the plain raw frames rendered by the console; `hooks on`/`hooks
   * off`: hooks run and answered `{}`.
   */
  tallies: Record<"published" | "raw" | "raw same work" | "rendered" | "hooks on" | "hooks off", Tally>;
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

/** What one block of a side did: frames published, ms from its start to its last frame stored. */
interface Block {
  frames: number;
  ms: number;
}

/** One seat's plane, its transcript written a block at a time, read by a console. */
async function cotalPlane(scope: Scope, session: MeshSession, dir: string) {
  const { ep } = await scope.joined("evseat");
  const renderer = new FrameRenderer();
  const seen: CotalMessage[] = [];
  const frameIds = new Arrivals();
  /** When the console saw each run's RUN_FINISHED. */
  const finishedAt = new Map<string, bigint>();
  const feed = new ConsoleFeed(session, log, (item) => {
    if (!item.frame) return;
    plainLines(item, renderer);
    if (!frameIds.add(item.message.id)) return;
    seen.push(item.message);
    if (item.frame.events.some((e) => e.type === "RUN_FINISHED")) finishedAt.set(item.frame.runId, process.hrtime.bigint());
  });
  scope.defer(async () => feed.close());
  await feed.add([eventsChannelOf(ep.me)], Date.now());
  const transcript = path.join(dir, "t.jsonl");
  writeFileSync(transcript, "");
  // The plane's own poll (250 ms); a hook pokes it when the session writes, as the bench does after each write.
  const plane = new EventPlane({ ep, dir: path.join(dir, "events"), log });
  scope.defer(() => plane.close(0));
  plane.start();
  plane.sessionStart({ sessionId: "bench", transcriptPath: transcript, source: "startup" });
  await wait(() => plane.status === "live", "the plane established");
  let written = 0;
  return {
    seen,
    /** Write turns `from`… to the transcript; resolves with the frames they made once every one is stored and seen. */
    async block(from: number, n: number): Promise<{ block: Block; frames: CotalMessage[] }> {
      const before = seen.length;
      const last = `p${from + n - 1}`;
      const text = turns(from, n);
      const t0 = process.hrtime.bigint();
      appendFileSync(transcript, text);
      plane.poke();
      written += n;
      // The block's last RUN_FINISHED reached a live subscriber: every frame before it was stored, in order.
      await wait(() => finishedAt.has(last) && plane.backlog === 0, "all frames stored");
      const frames = seen.slice(before);
      return { block: { frames: frames.length, ms: Number(finishedAt.get(last)! - t0) / 1e6 }, frames };
    },
    tally: (): Tally => ({ sent: written, received: finishedAt.size, duplicates: frameIds.duplicates, pending: plane.backlog }),
  };
}

/**
 * The raw client publishing the plane's frames on `events.local.<actor>`, in order, each with a
 * msg id and the expected last subject sequence, read by a raw subscriber (parsing the JSON) and
 * by a console. Plain, it publishes bytes encoded before the clock starts. With `sameWork` it does
 * what the plane must and plain raw does not, with the raw client and node's own modules: reads
 * and parses the transcript's lines, writes the frames to a write-ahead log before publishing and
 * each ack after, names each frame by its SHA-256 (the dedupe id) and checks the envelope
 * against the schema as it encodes it. What is left between it and Cotal is the plane's own
 * code (the mapper, framing, the endpoint).
 */
async function rawPlane(scope: Scope, session: MeshSession, dir: string, actor: string, sameWork: boolean) {
  const raw = await scope.raw(actor);
  const channel = `events.local.${actor}`;
  const subject = postSubject(scope.space, { owner: "local", actor }, channel);
  const ids = new Arrivals();
  const sub = raw.nc.subscribe(patterns.channelPosts(scope.space, channel), {
    callback: (_e, m) => void ids.add((JSON.parse(new TextDecoder().decode(m.data)) as { id: string }).id),
  });
  scope.defer(async () => sub.unsubscribe());
  // The console renders these publishes too, beside the raw subscriber: the same stream, two readers.
  const rendered = new Arrivals();
  const renderer = new FrameRenderer();
  const feed = new ConsoleFeed(session, log, (item) => {
    if (item.frame) plainLines(item, renderer);
    rendered.add(item.message.id);
  });
  scope.defer(async () => feed.close());
  await feed.add([channel], Date.now());
  const transcript = path.join(dir, `${actor}.jsonl`);
  writeFileSync(transcript, "");
  const wal = openSync(path.join(dir, `${actor}.wal`), "a", 0o600);
  scope.defer(async () => closeSync(wal));
  let read = 0;
  let lastSeq = 0;
  let sent = 0;
  let round = 0;
  return {
    /** Publish `frames` (another side's, re-addressed); resolves once both readers have every one. */
    async block(frames: readonly CotalMessage[], text: string): Promise<{ block: Block; render: { subscriberMs: number; consoleMs: number } }> {
      round += 1;
      const mine = frames.map((m) => ({ ...m, from: { id: `local.${actor}`, name: actor }, channel, id: `raw-${round}-${m.id}` }));
      const payloads = sameWork ? [] : mine.map((m) => encodeMessage(m));
      const want = sent + mine.length;
      const r0 = process.hrtime.bigint();
      if (sameWork) {
        appendFileSync(transcript, text);
        const fd = openSync(transcript, "r");
        const fresh = Buffer.alloc(fstatSync(fd).size - read);
        read += readSync(fd, fresh, 0, fresh.length, read);
        closeSync(fd);
        for (const line of fresh.toString("utf8").split("\n")) if (line) JSON.parse(line);
        writeSync(wal, JSON.stringify({ t: "frames", frames: mine.map((m) => m.parts[0]) }) + "\n");
      }
      for (const [i, m] of mine.entries()) {
        let data = payloads[i]!;
        let id = m.id;
        if (sameWork) {
          id = `${m.id}-${createHash("sha256").update(JSON.stringify(m.parts[0])).digest("hex").slice(0, 16)}`;
          data = encodeMessage({ ...m, id, ts: Date.now() });
        }
        const ack = await raw.js.publish(subject, data, { msgID: id, expect: { lastSubjectSequence: lastSeq } });
        lastSeq = ack.seq;
        if (sameWork) writeSync(wal, JSON.stringify({ t: "ack", seq: i, subjectSeq: ack.seq }) + "\n");
      }
      const publishMs = ms(r0);
      sent = want;
      await wait(() => ids.received >= want, `the ${actor} subscriber got every frame`);
      const subscriberMs = ms(r0);
      await wait(() => rendered.received >= want, `the console rendered every ${actor} frame`);
      return { block: { frames: mine.length, ms: publishMs }, render: { subscriberMs, consoleMs: ms(r0) } };
    },
    tally: (): Tally => ids.tally(sent, 0),
    renderedTally: (): Tally => rendered.tally(sent, 0),
  };
}

export async function eventPlane(scope: Scope, plan: EventPlanePlan): Promise<EventPlaneResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "cotal-bench-evt-"));
  scope.defer(async () => rmSync(dir, { recursive: true, force: true }));
  const session = await MeshSession.open({ server: scope.url, space: scope.space });
  scope.defer(() => session.close());

  // --- publish: each side's frames per second and CPU per frame, published and rendered by a console.
  const cotal = await cotalPlane(scope, session, dir);
  const raw = await rawPlane(scope, session, dir, "evraw", false);
  const rawSameWork = await rawPlane(scope, session, dir, "evrawsw", true);
  // The raw sides publish the frames of the plane's previous block (the warm-up's for the first),
  // so the three sides can take turns in either order.
  let prev = await cotal.block(0, plan.warmup);
  let prevText = turns(0, plan.warmup);
  await raw.block(prev.frames, prevText);
  await rawSameWork.block(prev.frames, prevText);
  const cpu = new CpuAccount<Side>(() => scope.pids, "events");
  const total = { cotal: { frames: 0, ms: 0 }, raw: { frames: 0, ms: 0 }, rawSameWork: { frames: 0, ms: 0 } };
  const render = { frames: 0, subscriberMs: 0, consoleMs: 0 };
  const perBlock = Math.ceil(plan.turns / plan.blocks);
  for (let b = 0; b < plan.blocks; b++) {
    const from = plan.warmup + b * perBlock;
    const n = Math.min(perBlock, plan.turns - b * perBlock);
    const given = prev;
    const givenText = prevText;
    const order = b % 2 === 0 ? SIDES : [...SIDES].reverse();
    for (const side of order) {
      const count = (r: { block: Block }) => r.block.frames;
      const r =
        side === "cotal"
          ? await cpu.measure(side, count, () => cotal.block(from, n))
          : await cpu.measure(side, count, () => (side === "raw" ? raw : rawSameWork).block(given.frames, givenText));
      total[side].frames += r.block.frames;
      total[side].ms += r.block.ms;
      if (side === "cotal") {
        prev = r as typeof prev;
        prevText = turns(from, n);
      }
      if (side === "raw" && "render" in r) {
        render.frames += r.block.frames;
        render.subscriberMs += r.render.subscriberMs;
        render.consoleMs += r.render.consoleMs;
      }
    }
  }
  const rate = (s: Side) => total[s].frames / (total[s].ms / 1000);
  const measured = cotal.seen.slice(-total.cotal.frames);

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
      cotal: rate("cotal"),
      raw: rate("raw"),
      rawSameWork: rate("rawSameWork"),
      frames: total.cotal.frames,
      events: measured.reduce((n, m) => n + (frameOf(m.parts)?.events.length ?? 0), 0),
      cpu: cpu.pair("cotal", "raw"),
      cpuSameWork: cpu.pair("cotal", "rawSameWork"),
    },
    render: { cotal: render.frames / (render.consoleMs / 1000), raw: render.frames / (render.subscriberMs / 1000), frames: render.frames },
    hook: { planeOn: planeOn.summary, planeOff: planeOff.summary },
    tallies: {
      published: cotal.tally(),
      raw: raw.tally(),
      "raw same work": rawSameWork.tally(),
      rendered: raw.renderedTally(),
      "hooks on": planeOn.tally,
      "hooks off": planeOff.tally,
    },
  };
}
