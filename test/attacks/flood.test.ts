// One agent credential floods the mesh service with what any agent may publish: its own liveness
// beat (8 bytes, not JSON) and control requests with no reply subject, as fast as a raw client can,
// from a process of its own. Meanwhile a bystander's control calls (pings as an agent and as the
// operator, then the operator's revoke of the flooder) must all be answered, and the mesh service's
// log must hold a bounded number of lines about the flooder, with the count of what it dropped,
// instead of a line per message (a 15 s flood once wrote 141 MB of log and left 5 of 7 pings unanswered).
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { callControl, MAX_BEAT_BYTES, setLogDestination } from "../../broker/internal.js";
import { beatSubject, controlSubject, localPrincipal } from "../../schemas/index.js";
import { flood } from "../../testbed/flooder.js";
import { projectRoot } from "../harness/build.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const SPACE = "floodlog";
const FLOOD_MS = 3_000;
/** Sampling interval of the service under test: a summary line per reason and second. */
const WARN_INTERVAL_MS = 1_000;
/** How long a bystander's call may wait for its answer. */
const CALL_MS = 30_000;

let mesh: TestMesh;
const logs: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  setLogDestination({ write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
  mesh = await TestMesh.startStatic(SPACE, { warnIntervalMs: WARN_INTERVAL_MS });
}, 60_000);
afterAll(async () => {
  setLogDestination(undefined);
  await mesh?.close();
});

describe("a one-credential flood of malformed beats and reply-less control requests", () => {
  test("every bystander call is answered, the operator revokes the flooder, and the log holds a few lines about it with the counts", async () => {
    const mallory = localPrincipal("mallory");
    const malloryCreds = await mesh.mint({ name: "mallory", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"] });
    const bob = await mesh.endpoint("bob");
    const operator = await mesh.connection(mesh.cliCreds);
    const flooding = flood({
      root: projectRoot,
      server: mesh.server.url,
      creds: malloryCreds,
      subjects: [beatSubject(SPACE, mallory), controlSubject(SPACE, "mesh", "one", "ping", mallory)],
      ms: FLOOD_MS,
    });

    // The bystanders call while the flood lasts. Answered is what counts, not how fast (the bench
    // measures that): each call may wait far longer than the CLI's 5 s on a loaded machine.
    const end = Date.now() + FLOOD_MS;
    let calls = 0;
    while (Date.now() < end) {
      await expect(callControl(bob.nc, SPACE, "ping", bob.me, {}, { timeoutMs: CALL_MS })).resolves.toMatchObject({ space: SPACE });
      await expect(callControl(operator, SPACE, "ping", localPrincipal("cotal_cli"), {}, { timeoutMs: CALL_MS })).resolves.toMatchObject({ space: SPACE });
      calls += 2;
    }
    const flooded = await flooding;
    expect(flooded.sent).toBeGreaterThan(10_000);
    expect(calls).toBeGreaterThan(0);
    await expect(callControl(operator, SPACE, "revoke", localPrincipal("cotal_cli"), { name: "mallory" }, { timeoutMs: CALL_MS })).resolves.toMatchObject({
      principal: "local.mallory",
      revoked: 1,
    });
    await expect(mesh.connection(malloryCreds, "_INBOX.local.mallory")).rejects.toThrow(/Authorization Violation/i);

    // Every count is written once the windows close (a summary per reason and interval).
    await new Promise((r) => setTimeout(r, 2 * WARN_INTERVAL_MS));
    const about = logs.filter((l) => l.component === "mesh-service" && JSON.stringify(l).includes("mallory") && l.level === 40);
    const reasons = new Set(about.map((l) => l.reason));
    expect(reasons).toEqual(new Set(["beat-too-often", "beat-not-json", "control-reply-not-inbox"]));
    // A first line per reason and at most a summary per reason and interval (the flood's, then the next).
    const intervals = Math.ceil(FLOOD_MS / WARN_INTERVAL_MS) + 2;
    expect(about.length).toBeLessThanOrEqual(reasons.size * (1 + intervals));
    const dropped = about.reduce((n, l) => n + (typeof l.dropped === "number" ? l.dropped : 0), 0);
    expect(dropped).toBeGreaterThan(flooded.sent / 4);
    expect(about.find((l) => l.reason === "control-reply-not-inbox" && typeof l.dropped === "number")).toBeDefined();
  }, 60_000);

  test("a beat larger than a presence record can be is dropped unread, with its size and the bound", async () => {
    const carol = await mesh.endpoint("carol");
    carol.nc.publish(beatSubject(SPACE, carol.me), new Uint8Array(MAX_BEAT_BYTES + 1));
    await carol.nc.flush();
    await until(() => logs.some((l) => l.reason === "beat-too-large" && l.source === "local.carol"), 5_000, "the oversize beat's log line");
    expect(logs.find((l) => l.reason === "beat-too-large")).toMatchObject({ bytes: MAX_BEAT_BYTES + 1, limit: 17 * 1024 });
  });
});
