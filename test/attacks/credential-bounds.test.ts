// "No limit per credential": one agent credential opened 100 connections with 2,500
// subscriptions each and nats-server grew by ~950 MB. Now every credential carries its profile's
// bounds and the space's clients account a connection bound (broker/auth/credential-limits.ts).
// An agent credential tries to exceed each over a raw NATS client (which sends what nats.js
// would refuse to) on a real operator-mode server: the broker refuses it, names the bound, and
// what is within the bound still works.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { PROFILE_LIMITS, pushSpaceAccounts, SERVER_MAX_PENDING } from "../../broker/index.js";
import { chatSubject, localPrincipal, patterns } from "../../schemas/index.js";
import { RawNats, RawRefusedError } from "../../testbed/raw-nats.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const SPACE = "bnd";
/** The space's connection bound for this test (`cotal up --max-connections`): small, to reach it. */
const CONNECTIONS = 12;
const AGENT = PROFILE_LIMITS.agent;
let mesh: TestMesh;
const open: RawNats[] = [];

beforeAll(async () => {
  mesh = await TestMesh.startStatic(SPACE);
});

afterAll(async () => {
  for (const c of open) c.close();
  await mesh?.close();
});

let n = 0;
async function mallory(): Promise<{ name: string; creds: Uint8Array }> {
  const name = `mallory${n++}`;
  const file = await mesh.mint({ name, profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"], provision: true });
  return { name, creds: readFileSync(file) };
}

async function rawConnection(creds: Uint8Array): Promise<RawNats> {
  const c = await RawNats.connect(mesh.server.url, creds);
  open.push(c);
  return c;
}

describe("what one agent credential may cost the broker is bounded by the broker", () => {
  test(`the ${AGENT.subs + 1}th subscription on one connection is refused; the connection and its first ${AGENT.subs} stay`, async () => {
    const { name, creds } = await mallory();
    const c = await rawConnection(creds);
    const subs = Array.from({ length: AGENT.subs }, (_, i) => RawNats.sub(`_INBOX.local.${name}.s${i}`, i + 1)).join("");
    expect(await c.exchange(subs)).toBe("PONG\r\n");
    expect(await c.exchange(RawNats.sub(`_INBOX.local.${name}.over`, AGENT.subs + 1))).toBe("-ERR 'maximum subscriptions exceeded'");
    expect(await c.exchange(RawNats.pub(chatSubject(SPACE, localPrincipal(name), "general"), 10))).toBe("PONG\r\n");
  });

  test(`a message over ${AGENT.payload} bytes is refused and the connection closed; one of exactly that size goes through`, async () => {
    const { name, creds } = await mallory();
    const c = await rawConnection(creds);
    // The server tells the client its bound (nats.js then refuses before sending)...
    expect(c.info.max_payload).toBe(AGENT.payload);
    const post = chatSubject(SPACE, localPrincipal(name), "general");
    expect(await c.exchange(RawNats.pub(post, AGENT.payload))).toBe("PONG\r\n");
    // ...and refuses a client that announces more anyway, at the PUB line (sent alone: with the body
    // behind it unread, the server's close resets the connection before its -ERR arrives).
    expect(await c.exchange(`PUB ${post} ${AGENT.payload + 1}\r\n`)).toBe("-ERR 'Maximum Payload Violation'");
    await c.closed;
  });

  test(`a connection that stops reading is cut once the server has queued ${SERVER_MAX_PENDING / 1024 / 1024} MiB for it`, async () => {
    const { name, creds } = await mallory();
    const reader = await rawConnection(creds);
    expect(await reader.exchange(RawNats.sub(patterns.presenceAll(SPACE), 1))).toBe("PONG\r\n");
    reader.stopReading();
    // Its own presence key: delivered to every watcher (the bucket refuses to store a value this large).
    const writer = await rawConnection(creds);
    const key = patterns.presenceKey(SPACE, localPrincipal(name));
    const burst = Buffer.concat(Array.from({ length: 16 }, () => RawNats.pub(key, 64 * 1024)));
    // 5 × max_pending: past what the server and the sockets between hold (nats-server's default, 64 MiB, would hold it all).
    for (let sent = 0; sent < 5 * SERVER_MAX_PENDING; sent += burst.length) expect(await writer.exchange(burst)).toBe("PONG\r\n");
    reader.readAgain();
    await until(() => reader.isClosed, 10_000, "the server to cut the connection that did not read (slow consumer)");
    expect(await writer.exchange("")).toBe("PONG\r\n");
  });

  test(`an agent credential's connections past its ${AGENT.connections} are closed, the newest; its first ones stay`, async () => {
    const { creds } = await mallory();
    const bound = AGENT.connections!;
    const conns: RawNats[] = [];
    for (let i = 0; i < bound + 3; i++) conns.push(await rawConnection(creds));
    await until(() => conns.filter((c) => c.isClosed).length === 3, 10_000, "the mesh service to close the 3 connections past the bound");
    expect(conns.slice(bound).every((c) => c.isClosed)).toBe(true);
    for (const c of conns.slice(0, bound)) expect(await c.exchange("")).toBe("PONG\r\n");
    // Once one closes, the credential may open one again.
    conns[0]!.close();
    await conns[0]!.closed;
    const again = await rawConnection(creds);
    expect(await again.exchange("")).toBe("PONG\r\n");
  });

  test(`past the space's ${CONNECTIONS} connections (--max-connections) the next is refused by the server`, async () => {
    // Each credential within its own bound: the mesh's own clients hold some of the space's connections, these the rest.
    const minted = [await mallory(), await mallory()];
    for (const c of open.splice(0)) c.close();
    await mesh.store.ensureSpace(SPACE, { connections: CONNECTIONS });
    await pushSpaceAccounts(mesh.store, mesh.server.url, SPACE);
    let refusal: unknown;
    let opened = 0;
    for (let i = 0; i <= CONNECTIONS && refusal === undefined; i++) {
      await rawConnection(minted[i % 2]!.creds).then(
        () => opened++,
        (e: unknown) => (refusal = e),
      );
    }
    expect(refusal, `a connection past the bound was refused (opened ${opened})`).toBeInstanceOf(RawRefusedError);
    expect((refusal as RawRefusedError).serverError).toBe("-ERR 'maximum account active connections exceeded'");
    expect(opened).toBeGreaterThan(0);
    expect(opened).toBeLessThan(CONNECTIONS);
  });
});
