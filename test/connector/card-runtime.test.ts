// The card's runtime: a connector seat says which agent CLI it runs, as its launch names
// it, in its presence card (validated against the exported schema), and every reader shows it
// (`cotal roster` human and --json, `cotal console`). A card claiming a runtime outside the
// alphabet is not taken: the roster skips the whole record, so nothing downstream prints it.
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JS_OPTIONS, jetStreamConnection, type Endpoint } from "../../broker/index.js";
import { rosterLine } from "../../cli/commands/console.js";
import { rosterJson } from "../../cli/terminal/format.js";
import { names, type Presence } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";
import { wireValidators } from "../harness/wire-schemas.js";
import { startConnector } from "./helpers.js";

const SPACE = "rt";
const validate = wireValidators();
let mesh: TestMesh;
let olga: Endpoint;

beforeAll(async () => {
  mesh = await TestMesh.startStatic(SPACE);
  olga = await mesh.joined("olga");
});

afterAll(async () => {
  await mesh?.close();
});

/** The presence record stored under `id`, as the bucket holds it. */
async function stored(id: string): Promise<Record<string, unknown>> {
  const nc = jetStreamConnection(await mesh.connection(mesh.cliCreds), mesh.cliCreds);
  const kv = await new Kvm(jetstream(nc, JS_OPTIONS)).open(names.presenceBucket(SPACE), { bindOnly: true });
  const e = await kv.get(id);
  return JSON.parse(e!.string()) as Record<string, unknown>;
}

describe("the agent CLI a seat runs, on its card", () => {
  it("a connector launched for codex says runtime codex (and meta.connector codex); roster and console show it", async () => {
    const creds = await mesh.mint({ name: "bob", profile: "agent", allowSubscribe: [], allowPublish: [] });
    const seat = await startConnector(mesh, "bob", { launch: { creds, runtime: "codex" } });
    try {
      const rec = await stored("local.bob");
      expect(validate("Presence", rec)).toEqual([]);
      expect(rec.card).toMatchObject({ runtime: "codex", meta: { connector: "codex" } });
      const view = await olga.roster();
      await until(() => view.get("local.bob") !== undefined, 10_000, "bob on olga's roster");
      const entry = view.get("local.bob")!;
      expect(rosterJson(entry)).toMatchObject({ id: "local.bob", runtime: "codex" });
      expect(rosterLine(entry)).toMatch(/^roster bob idle, runs codex/);
    } finally {
      await seat.close();
    }
  });

  it("a connector whose launch names no runtime writes no runtime (a hand-started Claude of an older plugin)", async () => {
    const creds = await mesh.mint({ name: "carl", profile: "agent", allowSubscribe: [], allowPublish: [] });
    const seat = await startConnector(mesh, "carl", { launch: { creds } });
    try {
      const rec = await stored("local.carl");
      expect(rec.card).not.toHaveProperty("runtime");
      expect(rec.card).toMatchObject({ meta: { connector: "claude-code" } });
    } finally {
      await seat.close();
    }
  });

  it("a peer's record claiming a runtime outside the alphabet is skipped by the roster; a record written after it shows", async () => {
    const card = (name: string, runtime: string) => ({ id: `local.${name}`, name, kind: "agent", owner: "local", actor: name, tags: [], meta: {}, runtime });
    const record = (name: string, runtime: string): Presence =>
      ({ card: card(name, runtime), status: "idle", ts: Date.now(), attention: "open", channelModes: {}, channels: [] }) as Presence;
    const put = async (name: string, value: Presence) => {
      const creds = await mesh.mint({ name, profile: "agent", allowSubscribe: [], allowPublish: [] });
      const nc = jetStreamConnection(await mesh.connection(creds, `_INBOX.local.${name}`), creds);
      await jetstream(nc, JS_OPTIONS).publish(`$KV.${names.presenceBucket(SPACE)}.local.${name}`, JSON.stringify(value));
    };
    const view = await olga.roster();
    await put("mallory", record("mallory", "codex\u001b[2J"));
    await put("trudy", record("trudy", "x".repeat(33)));
    await put("marker", record("marker", "echo"));
    // Once the record written after theirs is on the roster, theirs were read (and skipped), not merely not yet seen.
    await until(() => view.get("local.marker") !== undefined, 10_000, "the record written after the bad ones on the roster");
    expect(view.get("local.marker")!.presence.card.runtime).toBe("echo");
    expect(view.get("local.mallory")).toBeUndefined();
    expect(view.get("local.trudy")).toBeUndefined();
  });
});
