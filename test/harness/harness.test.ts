// The real-broker harness itself: each test fails if the harness stops doing what tests rely on.
import { existsSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { vi } from "vitest";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import {
  BrokerBackendUnavailableError,
  NatsServer,
  NatsServerNotFoundError,
  NatsServerStartError,
  NatsServerTooOldError,
  brokerBackend,
  dumpLogsOnFailure,
  expect,
  findNatsServer,
  test,
  until,
} from "./fixtures.js";
import { LogRing } from "../../testbed/nats-server.js";

async function withConnection<T>(url: string, fn: (nc: NatsConnection) => Promise<T>): Promise<T> {
  const nc = await connect({ servers: url, reconnect: false });
  try {
    return await fn(nc);
  } finally {
    await nc.close();
  }
}

function processAlive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function publishAndCount(url: string, stream: string, subject: string, bodies: string[]): Promise<number> {
  return withConnection(url, async (nc) => {
    const js = jetstream(nc);
    for (const b of bodies) await js.publish(subject, b);
    const jsm = await jetstreamManager(nc);
    return (await jsm.streams.info(stream)).state.messages;
  });
}

async function publishEventually(url: string, subject: string, body: string): Promise<void> {
  await withConnection(url, (nc) =>
    until(
      async () => (await jetstream(nc).publish(subject, body, { msgID: subject, timeout: 2_000 })).seq > 0,
      20_000,
      `an acknowledged publish to ${subject}`,
      100,
    ),
  );
}

test("a started server stores a JetStream message and returns it", async ({ nats }) => {
  expect(nats.url).toBe(`nats://127.0.0.1:${nats.port}`);
  expect(nats.port).not.toBe(4222);
  expect(nats.storeDir.startsWith(tmpdir())).toBe(true);
  await withConnection(nats.url, async (nc) => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "HARNESS", subjects: ["harness.>"], storage: StorageType.File });
    const ack = await jetstream(nc).publish("harness.hello", "hi there");
    expect(ack).toMatchObject({ stream: "HARNESS", seq: 1 });
    const stored = await jsm.streams.getMessage("HARNESS", { seq: 1 });
    expect(stored?.subject).toBe("harness.hello");
    expect(stored?.string()).toBe("hi there");
  });
});

test("two servers started in parallel get different ports, and neither is 4222", async () => {
  const started = await Promise.allSettled([NatsServer.start(), NatsServer.start()]);
  const servers = started.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
  try {
    expect(started.map((r) => r.status)).toEqual(["fulfilled", "fulfilled"]);
    const [a, b] = servers as [NatsServer, NatsServer];
    expect(a.port).not.toBe(b.port);
    expect([a.port, b.port]).not.toContain(4222);
    expect(a.storeDir).not.toBe(b.storeDir);
    expect(a.pid).not.toBe(b.pid);
  } finally {
    await Promise.all(servers.map((s) => s.cleanup()));
  }
});

test("a killed server restarts on the same port and keeps its file-stored messages", async ({ nats }) => {
  await withConnection(nats.url, async (nc) => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "DURABLE", subjects: ["durable.>"], storage: StorageType.File });
  });
  expect(await publishAndCount(nats.url, "DURABLE", "durable.x", ["one", "two", "three"])).toBe(3);
  const { port, pid } = nats;

  await nats.kill();
  expect(nats.running).toBe(false);
  expect(processAlive(pid)).toBe(false);

  await nats.restart();
  expect(nats.running).toBe(true);
  expect(nats.port).toBe(port);
  expect(nats.pid).not.toBe(pid);
  await withConnection(nats.url, async (nc) => {
    const jsm = await jetstreamManager(nc);
    expect((await jsm.streams.info("DURABLE")).state.messages).toBe(3);
    expect((await jsm.streams.getMessage("DURABLE", { seq: 3 }))?.string()).toBe("three");
  });
  expect(await publishAndCount(nats.url, "DURABLE", "durable.x", ["four"])).toBe(4);
  expect(nats.logs()).toContain("[harness] restarting nats-server");
});

test("the log buffer holds the server's output and stays bounded", async () => {
  const server = await NatsServer.start({ logLimit: { lines: 8 } });
  try {
    const logs = server.logs();
    expect(logs).toContain("Server is ready");
    expect(logs).toContain(`Listening for client connections on 127.0.0.1:${server.port}`);
    expect(logs).not.toContain("Starting nats-server"); // the first line was evicted
    expect(logs.split("\n").length).toBeLessThanOrEqual(8);
  } finally {
    await server.cleanup();
  }

  const ring = new LogRing(1000, 100);
  for (let i = 0; i < 50; i += 1) ring.push(`line ${i} `.padEnd(20, "x") + "\n");
  ring.push("partial");
  expect(ring.text().length).toBeLessThanOrEqual(100);
  expect(ring.text().endsWith("partial")).toBe(true);
  expect(ring.text()).toContain("line 49");
  expect(ring.dropped).toBeGreaterThan(40);
});

test("cleanup stops the process and removes its temp dirs", async () => {
  const server = await NatsServer.start();
  const { pid, storeDir } = server;
  expect(processAlive(pid)).toBe(true);
  expect(existsSync(storeDir)).toBe(true);
  await server.cleanup();
  expect(processAlive(pid)).toBe(false);
  expect(existsSync(storeDir)).toBe(false);
  await server.cleanup(); // idempotent
});

test("a missing binary fails with NatsServerNotFoundError naming the remedy", async () => {
  vi.stubEnv("NATS_SERVER_BIN", "/nonexistent/cotal/nats-server");
  try {
    const err: unknown = await NatsServer.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NatsServerNotFoundError);
    expect((err as Error).message).toContain("apt-get install nats-server");
    expect((err as Error).message).toContain("NATS_SERVER_BIN");
    expect((err as NatsServerNotFoundError).searched).toEqual(["/nonexistent/cotal/nats-server"]);
  } finally {
    vi.unstubAllEnvs();
  }

  const empty = await mkdtemp(join(tmpdir(), "cotal-empty-path-"));
  try {
    expect(() => findNatsServer({ PATH: empty }, [])).toThrow(NatsServerNotFoundError);
    expect(() => findNatsServer({ PATH: empty }, [])).toThrow(/apt-get install nats-server.*NATS_SERVER_BIN/s);
  } finally {
    await rm(empty, { recursive: true, force: true });
  }
});

test("a nats-server older than 2.10 is refused before it starts, with the reason and how to get a newer one: no test runs on 2.9", async () => {
  const dir = await mkdtemp(join(tmpdir(), "cotal-old-nats-"));
  try {
    // A stand-in that reports what Debian 12's package reports; it is never run as a server.
    const old = join(dir, "nats-server");
    writeFileSync(old, '#!/bin/sh\necho "nats-server: v2.9.10"\n', { mode: 0o755 });
    vi.stubEnv("NATS_SERVER_BIN", old);
    const err: unknown = await NatsServer.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NatsServerTooOldError);
    expect((err as Error).message).toMatch(/2\.10 or newer is required; found only NATS_SERVER_BIN=.*\(v2\.9\.10\)/);
    expect((err as Error).message).toMatch(/crashed by one message from any credential/);
    vi.unstubAllEnvs();
    // Found on PATH it is skipped, never used; with nothing newer anywhere the same error names it.
    expect(() => findNatsServer({ PATH: dir }, [])).toThrow(NatsServerTooOldError);
    const newer = findNatsServer();
    expect(findNatsServer({ PATH: `${dir}:${dirname(newer)}` }, [])).toBe(join(dirname(newer), "nats-server"));
  } finally {
    vi.unstubAllEnvs();
    await rm(dir, { recursive: true, force: true });
  }
});

test("a server with an auth config starts, and JetStream works for an authorised client", async () => {
  const server = await NatsServer.start({ config: 'authorization { token: "s3cret" }' });
  try {
    await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(/Authorization/i);
    const nc = await connect({ servers: server.url, reconnect: false, token: "s3cret" });
    try {
      const jsm = await jetstreamManager(nc);
      expect((await jsm.getAccountInfo()).limits).toBeDefined();
    } finally {
      await nc.close();
    }
  } finally {
    await server.cleanup();
  }
});

test("a server that cannot start reports why, with its output", async () => {
  const err: unknown = await NatsServer.start({ config: "this is { not valid" }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(NatsServerStartError);
  expect((err as Error).message).toMatch(/exited with code \d+/);
  expect((err as NatsServerStartError).logs.length).toBeGreaterThan(0);
});

test("a failed test prints the server log to stderr", async () => {
  let handler: (() => void) | undefined;
  const ctx = { onTestFailed: (fn: () => void) => void (handler = fn) };
  dumpLogsOnFailure(ctx as never, "nats-server test", () => "LOG LINE 1\nLOG LINE 2");
  const write = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  try {
    (handler as unknown as (c: unknown) => void)({ task: { name: "the failing one" } });
    const printed = write.mock.calls.map((c) => String(c[0])).join("");
    expect(printed).toContain("the failing one");
    expect(printed).toContain("LOG LINE 1\nLOG LINE 2");
  } finally {
    write.mockRestore();
  }
});

test("COTAL_TEST_BROKER=container asks for Docker and testcontainers; the default needs only nats-server", () => {
  expect(brokerBackend({})).toBe("process");
  expect(brokerBackend({ COTAL_TEST_BROKER: "process" })).toBe("process");
  expect(() => brokerBackend({ COTAL_TEST_BROKER: "container" })).toThrow(BrokerBackendUnavailableError);
  expect(() => brokerBackend({ COTAL_TEST_BROKER: "container" })).toThrow(/Docker.*testcontainers.*nats-server/s);
  expect(() => brokerBackend({ COTAL_TEST_BROKER: "podman" })).toThrow(BrokerBackendUnavailableError);
});

test("a three-node cluster elects a meta leader and takes writes on an R3 stream, even with a node down", async ({ natsCluster }) => {
  expect(natsCluster.servers).toHaveLength(3);
  expect(new Set(natsCluster.urls).size).toBe(3);
  const leader = await natsCluster.waitForMetaLeader();
  expect(natsCluster.servers.map((s) => s.serverName)).toContain(leader);

  const url = natsCluster.urls[0] as string;
  await withConnection(url, async (nc) => {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.add({
      name: "R3",
      subjects: ["r3.>"],
      storage: StorageType.File,
      num_replicas: 3,
    });
    expect(info.config.num_replicas).toBe(3);
    expect(info.cluster?.replicas ?? []).toHaveLength(2);
    const ack = await jetstream(nc).publish("r3.a", "replicated");
    expect(ack.seq).toBe(1);
  });

  // One node down: the other two still hold a quorum; the node comes back on its old ports.
  const victim = natsCluster.servers.find((s) => s.serverName !== leader && s.url !== url) as NatsServer;
  const victimPort = victim.port;
  // If the victim led the stream, the survivors elect a new stream leader first: retry the
  // publish (deduplicated by message id) until it is acknowledged.
  await victim.kill();
  await publishEventually(url, "r3.b", "while one node is down");
  await victim.restart();
  expect(victim.port).toBe(victimPort);
  await natsCluster.waitForMetaLeader(20_000);
  await publishEventually(victim.url, "r3.c", "after restart");
  await withConnection(victim.url, async (nc) => {
    const jsm = await jetstreamManager(nc);
    // The restarted node catches up from the others: wait for it, never a fixed time.
    let seen = 0;
    await until(async () => (seen = (await jsm.streams.info("R3")).state.messages) === 3, 20_000, `all three messages seen after the restart (seen ${seen})`);
  });
});

test("until waits as long as a slow condition took before running it again (a CLI poll uses half a core, not all)", async () => {
  const calls: Array<{ start: number; end: number }> = [];
  await until(
    async () => {
      const start = Date.now();
      await new Promise((r) => setTimeout(r, 60));
      calls.push({ start, end: Date.now() });
      return calls.length === 4;
    },
    10_000,
    "four calls",
  );
  for (let i = 1; i < calls.length; i++) {
    const prev = calls[i - 1]!;
    expect(calls[i]!.start - prev.end).toBeGreaterThanOrEqual(prev.end - prev.start - 2);
  }
});
