// What a tool call costs the seat's presence: the record is written when it changes, a repeated
// tool call's progress goes with the next beat (or the goodbye), and a hook's answer never waits
// on a presence write. Each write is counted where the broker takes it: the seat's KV subject.
import { readdirSync, readFileSync } from "node:fs";
import type { NatsConnection } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { runHook } from "../../connector/internal.js";
import { parsePrincipal, patterns } from "../../schemas/index.js";
import { NatsServer, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { hook, startConnector, serverPerFile } from "./helpers.js";

const { server: nats, cleanups } = serverPerFile();
let n = 0;

/** A beat period no test here outlives: progress is then written only by what the test does. */
const NO_BEAT_MS = 600_000;

interface Written {
  status: string;
  activity?: string;
  activeAt?: number;
  card: { meta: Record<string, string> };
}

/** A mesh whose judge never takes a quiet seat offline within a test, and a seat on it. */
async function seatOn(on: NatsServer, heartbeatMs: number) {
  const mesh = await TestMesh.start(on, `writes${++n}`, { livenessMs: NO_BEAT_MS });
  cleanups.push(() => mesh.close());
  const seat = await startConnector(mesh, "bob", { heartbeatMs });
  let closed = false;
  cleanups.push(() => (closed ? undefined : seat.close()));
  const writes = await presenceWrites(mesh.serviceConnection, mesh.space, seat.connector.id);
  return { mesh, seat, writes, close: () => ((closed = true), seat.close()) };
}

/** Every presence record written under `id`, in the order the broker took them (deletes left out). */
async function presenceWrites(nc: NatsConnection, space: string, id: string): Promise<Written[]> {
  const seen: Written[] = [];
  const sub = nc.subscribe(patterns.presenceKey(space, parsePrincipal(id)), {
    callback: (_err, m) => {
      if (m.data.length) seen.push(m.json<Written>());
    },
  });
  cleanups.push(() => sub.unsubscribe());
  await nc.flush();
  return seen;
}

/**
 * Whether every thread of `pid` has stopped (Linux /proc). SIGSTOP stops a process only once one of
 * its threads took the signal: on a loaded machine another thread may serve a publish meanwhile.
 */
function allStopped(pid: number): boolean {
  const tasks = readdirSync(`/proc/${pid}/task`);
  // The state follows the command name, which is in parentheses.
  return tasks.every((t) => /\) [Tt] /.test(readFileSync(`/proc/${pid}/task/${t}/stat`, "utf8")));
}

const shown = (w: Written) => `${w.status}/${w.activity ?? ""}`;

/** Run the real hook relay; what it printed, and why it fell back to `{}` on its own if it did (the connector did not answer in its budget). */
async function answered(env: NodeJS.ProcessEnv, event: string, payload: Record<string, unknown>): Promise<{ raw: string; fallback?: string }> {
  let raw = "";
  let fallback: string | undefined;
  await runHook(event, JSON.stringify({ session_id: "s-test", hook_event_name: event, ...payload }), env, {
    io: { write: async (t) => void (raw += t) },
    onFallback: (why) => (fallback = why),
  });
  return { raw, ...(fallback !== undefined ? { fallback } : {}) };
}

describe("presence writes on tool calls", () => {
  it("five calls of the same tool write the seat's presence once; the next tool is written at once", async () => {
    const { seat, writes } = await seatOn(nats(), NO_BEAT_MS);
    await hook(seat.env, "SessionStart", { source: "startup" });
    await hook(seat.env, "UserPromptSubmit", { prompt: "go" });
    for (let i = 0; i < 5; i++) expect((await hook(seat.env, "PreToolUse", { tool_name: "Bash" })).raw).toBe("{}\n");
    await hook(seat.env, "PreToolUse", { tool_name: "Read" });
    // Writes reach the broker in order: once Read's is in, every write before it is too.
    await until(() => writes.some((w) => w.activity === "Read"), 5_000, "bob's presence shows Read");
    const turn = writes.slice(writes.findIndex((w) => w.status === "working")).map(shown);
    expect(turn).toEqual(["working/", "working/Bash", "working/Read"]);
  });

  it("a repeated tool call's progress reaches the record with the next beat", async () => {
    const { seat, writes } = await seatOn(nats(), 100);
    await hook(seat.env, "UserPromptSubmit", { prompt: "go" });
    await hook(seat.env, "PreToolUse", { tool_name: "Bash" });
    // The session's id (card meta) goes out with the first record after it was noted: then nothing else is owed.
    await until(() => writes.some((w) => w.activity === "Bash" && w.card.meta.sessionId === "s-test"), 5_000, "a beat wrote the session's id");
    const before = Date.now();
    await hook(seat.env, "PreToolUse", { tool_name: "Bash" });
    await until(() => writes.some((w) => (w.activeAt ?? 0) >= before), 5_000, "a record carrying the second Bash call's progress");
    expect(writes.at(-1)).toMatchObject({ status: "working", activity: "Bash" });
  });

  it("progress not yet written goes out with the seat's goodbye", async () => {
    const { seat, writes, close } = await seatOn(nats(), NO_BEAT_MS);
    await hook(seat.env, "UserPromptSubmit", { prompt: "go" });
    await hook(seat.env, "PreToolUse", { tool_name: "Bash" });
    const before = Date.now();
    await hook(seat.env, "PreToolUse", { tool_name: "Bash" });
    await close();
    await until(() => writes.at(-1)?.status === "offline", 5_000, "bob's offline record");
    expect(writes.at(-1)!.activeAt).toBeGreaterThanOrEqual(before);
  });

  it("a hook is answered while the seat's presence write is stuck (its server paused); the latest tool is written once it resumes", async () => {
    // A server of its own: this test pauses it.
    const own = await NatsServer.start();
    cleanups.push(() => own.cleanup());
    const { seat, writes } = await seatOn(own, NO_BEAT_MS);
    await hook(seat.env, "UserPromptSubmit", { prompt: "go" });
    await until(() => writes.some((w) => w.status === "working"), 5_000, "bob's presence shows working");
    const pid = own.pid!;
    process.kill(pid, "SIGSTOP");
    try {
      await until(() => allStopped(pid), 5_000, "every nats-server thread stopped");
      // Neither waits for the broker: the server takes no write until it is resumed.
      expect(await answered(seat.env, "PreToolUse", { tool_name: "Bash" })).toEqual({ raw: "{}\n" });
      expect(await answered(seat.env, "PreToolUse", { tool_name: "Read" })).toEqual({ raw: "{}\n" });
      expect(writes.map(shown)).not.toContain("working/Bash");
    } finally {
      process.kill(pid, "SIGCONT");
    }
    await until(() => writes.at(-1)?.activity === "Read", 10_000, "bob's presence shows Read after the server resumed");
    expect(writes.map(shown).slice(-2)).toEqual(["working/Bash", "working/Read"]);
  });
});
