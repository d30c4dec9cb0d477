// A seat-log append made while the log's stream has no responder (a cluster electing a stream
// leader after a node loss) is tried again until the stream answers: the fault suite
// (docs/reliability.md) found a killed seat never restarted when its `exited` record met such a
// moment. Here the stream stops answering by taking its subjects away for a second.
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { logger } from "../../broker/internal.js";
import { names } from "../../schemas/index.js";
import { newLifecycleUid, projectSeat, SeatLog } from "../../manager/internal.js";
import { TestMesh } from "../harness/mesh.js";
import { NatsServer } from "../../testbed/nats-server.js";

const SPACE = "seatnoleader";
let server: NatsServer;
let mesh: TestMesh;

beforeAll(async () => {
  server = await NatsServer.start({ jetstream: true });
  mesh = await TestMesh.start(server, SPACE);
});
afterAll(async () => {
  await mesh?.close();
  await server?.cleanup();
});

describe("seat log without a responder", () => {
  test("an append made while the stream does not answer is stored once it answers again", async () => {
    const nc = await mesh.rawConnection();
    const log = await SeatLog.open(nc, SPACE, logger("test"));
    const jsm = await jetstreamManager(nc);
    const stream = names.seatsStream(SPACE);
    const config = (await jsm.streams.info(stream)).config;
    await jsm.streams.update(stream, { ...config, subjects: [`parked.${SPACE}`] });
    const uid = newLifecycleUid();
    const appended = log.append({ type: "requested", seat: "local.kea", uid, epoch: 0, ts: Date.now(), manager: "m1", agent: "echo" }, 0);
    // The first attempt finds no responder; the stream answers again a second later.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await jsm.streams.update(stream, config);
    const seq = await appended;
    expect(seq).toBeGreaterThan(0);
    const kea = projectSeat((await log.replay()).get("local.kea")!)!;
    expect(kea).toMatchObject({ state: "requested", uid, lastSeq: seq });
  });
});
