import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { jetStreamConnection, JS_OPTIONS, type Endpoint } from "../../broker/index.js";
import { encodeMessage, names, type CotalMessage } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { collect } from "../harness/deliveries.js";
import { until } from "../../testbed/until.js";

/**
 * The hole this closes: an agent published DMs to `cotal.<space>.inst.*.*.<o>.<a>` and anycasts to
 * `…svc.*.<o>.<a>`. NATS matches a wildcard token in a published subject against the wildcards of
 * the sender's allow list, so the broker lets it through, and JetStream stored them in queues no
 * consumer takes. Nothing unreachable may stay stored, and nothing may be blocked by it.
 */
const SPACE = "wild";
let mesh: TestMesh;
let bob: Endpoint;

beforeAll(async () => {
  mesh = await TestMesh.startStatic(SPACE, { wildcardSweepMs: 200 });
  bob = await mesh.joined("bob", { role: "builder" });
});

afterAll(async () => {
  await mesh?.close();
});

function message(from: string, address: Pick<CotalMessage, "to" | "toService">): Uint8Array {
  return encodeMessage({
    id: `w-${Math.random().toString(36).slice(2)}`,
    ts: Date.now(),
    space: SPACE,
    from: { id: `local.${from}`, name: from },
    ...address,
    parts: [{ kind: "text", text: "for nobody" }],
  } as CotalMessage);
}

async function mallory(): Promise<NatsConnection> {
  const creds = await mesh.mint({ name: "mallory", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"] });
  return jetStreamConnection(await mesh.connection(creds, "_INBOX.local.mallory"), creds);
}

/** Subjects stored in `stream` that carry a wildcard token. */
async function wildcardSubjects(stream: string): Promise<string[]> {
  const info = await (await mesh.dataJsm()).streams.info(stream, { subjects_filter: ">" });
  return Object.keys(info.state.subjects ?? {}).filter((s) => s.split(".").some((t) => t === "*" || t === ">"));
}

describe("mail to a wildcard subject", () => {
  test("a DM or anycast published to a subject with wildcard tokens does not stay stored; real mail still flows", async () => {
    const nc = await mallory();
    const js = jetstream(nc, JS_OPTIONS);
    // Real mail around it: one DM handed over and acked (a gap in the stream), one waiting for a
    // name that never joined. The sweep must step over both and remove neither.
    const inbox = collect(bob);
    await js.publish(`cotal.${SPACE}.inst.local.bob.local.mallory`, message("mallory", { to: "local.bob" }));
    await until(() => inbox.items.length === 1, 10_000, "bob to receive mallory's first DM");
    const ghost = `cotal.${SPACE}.inst.local.ghost.local.mallory`;
    await js.publish(ghost, message("mallory", { to: "local.ghost" }));
    const attempts = [
      { subject: `cotal.${SPACE}.inst.*.*.local.mallory`, body: message("mallory", { to: "local.bob" }) },
      { subject: `cotal.${SPACE}.inst.local.*.local.mallory`, body: message("mallory", { to: "local.bob" }) },
      { subject: `cotal.${SPACE}.svc.*.local.mallory`, body: message("mallory", { toService: "builder" }) },
    ];
    // The broker stores them (nats-server 2.10 cannot refuse a literal `*` its allow list matches):
    // each is acknowledged, so what follows proves the sweep removed stored mail.
    for (const a of attempts) expect((await js.publish(a.subject, a.body)).seq, a.subject).toBeGreaterThan(0);
    await until(
      async () => (await wildcardSubjects(names.dmStream(SPACE))).length === 0 && (await wildcardSubjects(names.taskStream(SPACE))).length === 0,
      10_000,
      "no DM or anycast stored under a wildcard subject",
    );
    // Real mail is kept, and bob's is not held up behind it.
    const dm = await (await mesh.dataJsm()).streams.info(names.dmStream(SPACE), { subjects_filter: ">" });
    expect(dm.state.subjects).toEqual({ [ghost]: 1 });
    await js.publish(`cotal.${SPACE}.inst.local.bob.local.mallory`, message("mallory", { to: "local.bob" }));
    await until(() => inbox.items.length === 2, 10_000, "bob to receive mallory's second DM");
    inbox.stop();
  });
});
