import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { jetStreamConnection, JS_OPTIONS, setLogDestination } from "../../broker/index.js";
import { names } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

/**
 * The hole this closes: a presence record whose `channelModes` key held U+009B (the 8-bit CSI, a
 * terminal escape) reached the logs raw, and `cotal logs` printed it. Every log line leaves the
 * process with such characters escaped as visible text, whoever prints it later, raw or parsed.
 */
const SPACE = "ptxt";
const CSI = "\u009b";
const BIDI = "\u202e";
let mesh: TestMesh;
const lines: string[] = [];

beforeAll(async () => {
  setLogDestination({ write: (line: string) => void lines.push(line) });
  mesh = await TestMesh.startStatic(SPACE);
});

afterAll(async () => {
  await mesh?.close();
  setLogDestination(undefined);
});

describe("peer text in logs", () => {
  test("a presence record with a terminal escape in a channelModes key is logged escaped, never raw", async () => {
    const creds = await mesh.mint({ name: "mallory", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"] });
    const nc = jetStreamConnection(await mesh.connection(creds, "_INBOX.local.mallory"), creds);
    const record = {
      card: { id: "local.mallory", name: `mal${BIDI}lory`, kind: "agent", tags: [], meta: {} },
      status: "idle",
      ts: Date.now(),
      channelModes: { [`gen${CSI}2Jeral`]: "quiet" },
      channels: [],
    };
    await jetstream(nc, JS_OPTIONS).publish(`$KV.${names.presenceBucket(SPACE)}.local.mallory`, JSON.stringify(record));
    // The mesh service reads every record: this one is refused (a channel name holds no controls), with a log line.
    await until(() => lines.some((l) => l.includes("local.mallory") && l.includes("channelModes")), 10_000, "the mesh service to log the refused record");
    const about = lines.filter((l) => l.includes("local.mallory"));
    for (const l of about) {
      expect(l).not.toContain(CSI);
      expect(l).not.toContain(BIDI);
      // Parsed, as a log viewer reads it: still no raw escape, the character is shown as text.
      expect(JSON.stringify(JSON.parse(l))).not.toMatch(/[\u009b\u202e]/);
    }
    expect(about.join("\n")).toContain("\\\\u009b");
  });
});
