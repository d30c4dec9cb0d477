// What the server the suite runs on does with the JetStream knobs newer than 2.10 that
// docs/nats-servers.md weighs: 2.11 and later honour them, 2.10 ignores them without an error, so a
// 2.11+ path must be chosen from the server's version, never by trying it. Runs in project `all`
// (2.10) and `nats-newest` (2.15), each asserting what its own server does; a server that changes
// this fails here, and the page's table with it. Publishes go through a service import, the way a
// static mesh's clients reach the data account's streams.
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { isAtLeast } from "../../broker/index.js";
import { findNatsServer, NatsServer, natsServerVersion } from "../../testbed/nats-server.js";

const v = natsServerVersion(findNatsServer())!;
/** 2.11 or newer: the knobs below take effect. */
const honoured = isAtLeast(v, { major: 2, minor: 11 });

let server: NatsServer;
let data: NatsConnection;
let client: NatsConnection;
let jsm: JetStreamManager;
let js: JetStreamClient;

beforeAll(async () => {
  server = await NatsServer.start({
    config: [
      "accounts {",
      '  DATA: { jetstream: enabled, users: [{ user: d, password: d }], exports: [{ service: "seat.>" }] }',
      '  CLIENTS: { users: [{ user: c, password: c }], imports: [{ service: { account: DATA, subject: "seat.>" } }] }',
      "}",
    ].join("\n"),
    ready: async () => undefined,
  });
  data = await connect({ servers: server.url, user: "d", pass: "d" });
  client = await connect({ servers: server.url, user: "c", pass: "c" });
  jsm = await jetstreamManager(data);
  js = jetstream(data);
});
afterAll(async () => {
  await client?.close();
  await data?.close();
  await server?.cleanup();
});

describe(`nats-server ${v.text}: the JetStream knobs after 2.10 are ${honoured ? "honoured" : "ignored, without an error"}`, () => {
  test("a claim expecting nothing yet on a seat's subjects (every writer's): the second claim is refused from 2.11, stored by 2.10", async () => {
    await jsm.streams.add({ name: "SEATS", subjects: ["seat.>"] });
    const claim = (writer: string) =>
      jetstream(client).publish(`seat.local.carol.local.${writer}`, "requested", {
        expect: { lastSubjectSequence: 0, lastSubjectSequenceSubject: "seat.local.carol.*.*" },
      });
    await claim("ma");
    const second = await claim("mb").then(
      (ack) => ack.seq,
      (err: unknown) => err,
    );
    if (honoured) expect(String(second)).toMatch(/wrong last sequence: 1/);
    else expect(second).toBe(2);
    expect((await jsm.streams.info("SEATS")).state.messages).toBe(honoured ? 1 : 2);
  });

  test("a per-message TTL: the message is stored either way; the stream keeps allow_msg_ttl only from 2.11", async () => {
    await jsm.streams.add({ name: "TTL", subjects: ["ttl.>"], allow_msg_ttl: true });
    expect((await js.publish("ttl.a", "x", { ttl: "1h" })).seq).toBe(1);
    expect((await jsm.streams.info("TTL")).config.allow_msg_ttl === true).toBe(honoured);
  });

  test("an atomic batch of three: committed whole from 2.12; on 2.10 each message is stored as it comes and the commit fails", async () => {
    const atomic = isAtLeast(v, { major: 2, minor: 12 });
    await jsm.streams.add({ name: "BATCH", subjects: ["batch.>"], allow_atomic: true });
    const batch = await js.startBatch("batch.1", "1");
    batch.add("batch.2", "2");
    const committed = await batch.commit("batch.3", "3").then(
      (ack) => ack.count,
      (err: unknown) => err,
    );
    if (atomic) expect(committed).toBe(3);
    else expect(committed).toBeInstanceOf(Error);
    expect((await jsm.streams.info("BATCH")).state.messages).toBe(3);
  });
});
