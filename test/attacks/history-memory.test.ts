// A channel holding 250 MB must not take the mesh service with it: `history` reads one page at
// a time at the source, so asking for the newest post (or a first page) costs one page of
// memory, not the channel. The service runs as its own process (the shipped `cotal mesh serve`)
// so its memory can be read from /proc.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterEach, describe } from "vitest";
import { callControl, HISTORY_PAGE_BYTES } from "../../broker/internal.js";
import { chatSubject, localPrincipal, messageText, type CotalMessage } from "../../schemas/index.js";
import { BUNDLES, ensureBuilt } from "../harness/build.js";
import { cleanEnv } from "../harness/cli.js";
import { expect, test, until } from "../harness/fixtures.js";

const SPACE = "mem";
const POSTS = 1_000;
const POST_BYTES = 250_000;
const RSS_LIMIT_BYTES = 150 * 1024 * 1024;

let service: ChildProcess | undefined;
let nc: NatsConnection | undefined;
afterEach(async () => {
  await nc?.close().catch(() => undefined);
  nc = undefined;
  if (service && service.exitCode === null) {
    const exited = new Promise((r) => service!.once("exit", r));
    service.kill("SIGTERM");
    await exited;
  }
  service = undefined;
});

/** Resident set (now and peak) of a process, bytes, from /proc/<pid>/status. */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}

describe("history with bounded memory", () => {
  test("history {limit: 1} and a first page of a 250 MB channel keep the mesh service under 150 MB", { timeout: 240_000 }, async ({ nats, onTestFailed }) => {
    ensureBuilt();
    let output = "";
    service = spawn(process.execPath, [BUNDLES.cli, "mesh", "serve", "--server", nats.url, "--space", SPACE], {
      env: cleanEnv({ COTAL_LOG_LEVEL: "warn" }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    service.stdout!.setEncoding("utf8").on("data", (c: string) => (output += c));
    service.stderr!.setEncoding("utf8").on("data", (c: string) => (output += c));
    onTestFailed(() => void process.stderr.write(`\n----- mesh service output -----\n${output.slice(-8_000)}\n`));
    const pid = service.pid!;

    nc = await connect({ servers: nats.url, maxReconnectAttempts: 0 });
    const caller = localPrincipal("reader");
    await until(async () => (await callControl(nc!, SPACE, "ping", caller, {}, { timeoutMs: 1_000 })) !== undefined, 20_000, "the mesh service answers a ping");

    // 1,000 posts of 250 KB, published raw by a client with the rights (an open mesh).
    const js = jetstream(nc);
    const alice = localPrincipal("alice");
    const subject = chatSubject(SPACE, alice, "general");
    const filler = "x".repeat(POST_BYTES);
    const post = (i: number): Uint8Array => {
      const m: CotalMessage = {
        id: `big-${i}`,
        ts: Date.now(),
        space: SPACE,
        from: { id: "local.alice", name: "alice" },
        channel: "general",
        parts: [{ kind: "text", text: `${i} ${filler}` }],
      };
      return new TextEncoder().encode(JSON.stringify(m));
    };
    let lastSeq = 0;
    for (let i = 0; i < POSTS; i += 20) {
      const acks = await Promise.all(
        Array.from({ length: Math.min(20, POSTS - i) }, (_, k) => js.publish(subject, post(i + k), { msgID: `big-${i + k}`, timeout: 30_000 })),
      );
      lastSeq = Math.max(lastSeq, ...acks.map((a) => a.seq));
    }
    const before = memoryOf(pid);

    const newest = await callControl(nc, SPACE, "history", caller, { channel: "general", limit: 1 }, { timeoutMs: 30_000 });
    expect(newest.items.map((h) => h.seq)).toEqual([lastSeq]);
    expect(messageText(newest.items[0]!.message).startsWith(`${POSTS - 1} `)).toBe(true);
    expect(newest.more).toBe(false);
    const afterNewest = memoryOf(pid);

    const first = await callControl(nc, SPACE, "history", caller, { channel: "general" }, { timeoutMs: 30_000 });
    expect(first.items.length).toBeGreaterThanOrEqual(2);
    expect(first.items.map((h) => messageText(h.message).split(" ")[0])).toEqual(first.items.map((_, i) => String(i)));
    expect(first.more).toBe(true);
    expect(first.nextAfterSeq).toBe(first.items.at(-1)!.seq + 1);
    expect(Buffer.byteLength(JSON.stringify(first))).toBeLessThanOrEqual(HISTORY_PAGE_BYTES);
    const afterFirst = memoryOf(pid);

    const mb = (n: number) => `${Math.round(n / 1024 / 1024)} MB`;
    const report = `before ${mb(before.rss)}, after limit 1 ${mb(afterNewest.rss)}, after first page ${mb(afterFirst.rss)}, peak ${mb(afterFirst.peak)}`;
    expect(afterFirst.peak, report).toBeLessThan(RSS_LIMIT_BYTES);
    expect(service.exitCode, `the mesh service exited: ${output.slice(-2_000)}`).toBeNull();
  });
});
