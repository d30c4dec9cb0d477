// Mail across a seat's restarts, with the real claude CLI and the README's launch line (an open
// mesh here: test/e2e/plugin-session.e2e.test.ts covers the minted credential): a killed session's held DM reaches the next session's SessionStart at once (not
// after the 30 s ack wait), `claude mcp list` (a health check that starts the connector) takes
// no mail and leaves presence alone, and the very first session on a host, before any control
// directory exists, still gets the mail that waited for it.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager, type ConsumerInfo, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Endpoint, Roster } from "../../broker/index.js";
import { buildCli, projectRoot } from "../harness/cli.js";
import { cleanupRun, runClaude } from "../harness/claude-runner.js";
import { NatsServer } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { allText, ModelDouble } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";
import { TmuxClaude } from "./tmux-claude.js";

const SPACE = "restart";
const PLUGIN_DIR = join(projectRoot, "plugin");
/** The README's launch line, after `claude` (the plugin folder resolved). */
const README_ARGS = ["--plugin-dir", PLUGIN_DIR, "--allowedTools", "mcp__plugin_cotal_cotal"];

let server: NatsServer;
let mesh: TestMesh;
let jsm: JetStreamManager;
let bob: Endpoint;
let roster: Roster;
let root: string;

beforeAll(async () => {
  await buildCli(); // also copies the bundles into plugin/bin
  server = await NatsServer.start();
  mesh = await TestMesh.start(server, SPACE);
  // The mesh service's own connection sees the streams (they live in its account).
  jsm = await jetstreamManager(mesh.serviceConnection);
  bob = await mesh.joined("bob");
  roster = await bob.roster();
  root = mkdtempSync(join(tmpdir(), "cotal-restart-"));
});

afterAll(async () => {
  await mesh?.close();
  await server?.cleanup();
  rmSync(root, { recursive: true, force: true });
});

const inbox = (actor: string): Promise<ConsumerInfo> => jsm.consumers.info(`DM_${SPACE}`, `dm_local-${actor}`);

/** A seat as the README makes one (COTAL_* in the environment), its DM inbox provisioned by an earlier join. */
async function seat(name: string, controlDir: string): Promise<Record<string, string>> {
  const earlier = await mesh.joined(name);
  await earlier.close();
  await until(() => roster.get(`local.${name}`)?.presence.status === "offline", 5_000, `${name}'s earlier join left`);
  return { COTAL_SERVER: mesh.server.url, COTAL_SPACE: SPACE, COTAL_NAME: name, COTAL_CONTROL_DIR: controlDir };
}

/** The connector's pino log lines, parsed. */
function logLines(file: string): Array<Record<string, unknown>> {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("mail across restarts, health checks and a fresh host (real claude, README launch line)", () => {
  it("a killed session's held DM reaches the next session's SessionStart at once, once, flagged as a possible repeat", async () => {
    // The connector's log (pino JSON) tells when the first session's SessionStart was answered.
    const log = join(root, "alice-connector.log");
    const env = { ...(await seat("alice", mkdtempSync(join(root, "ctl-")))), COTAL_LOG_FILE: log, COTAL_LOG_LEVEL: "debug" };
    const double = await ModelDouble.start();
    const first = await TmuxClaude.start({ baseUrl: double.url, args: README_ARGS, env });
    let second: Awaited<ReturnType<typeof runClaude>> | undefined;
    try {
      await first.waitFor(/shift\+tab to cycle|\? for shortcuts/, 45_000, "the first session's input screen");
      await until(
        () => logLines(log).some((l) => l.msg === "hook answered" && l.event === "SessionStart"),
        20_000,
        "the first session's SessionStart was answered",
      );
      await bob.dm("alice", "are you still there?");
      await until(() => roster.get("local.alice")?.presence.unread === 1, 10_000, "the first session's connector holds the DM, unread");
      expect((await inbox("alice")).num_ack_pending).toBe(1);

      const deliveredBefore = (await inbox("alice")).delivered.consumer_seq;
      await first.kill();
      await until(() => roster.get("local.alice")?.presence.status === "offline", 10_000, "the first session left the mesh");
      await until(
        () => logLines(log).some((l) => l.msg === "held mail returned to the broker" && l.returned === 1),
        10_000,
        "the first connector gave the DM back",
      );
      // Given back after its pull stopped: not redelivered under the dying session.
      expect((await inbox("alice")).delivered.consumer_seq).toBe(deliveredBefore);

      const restartedAt = Date.now();
      second = await runClaude({ baseUrl: double.url, prompt: "Anything for me?", args: README_ARGS, env, timeoutMs: 60_000 });
      expect(second.json, second.stderr).toMatchObject({ is_error: false });
      // Well inside the 30 s ack wait: the mail did not sit under the dead session's pull.
      expect(Date.now() - restartedAt).toBeLessThan(30_000);
      const context = allText(double.mainRequests[0]!);
      expect(context).toMatch(/\[cotal DM from local\.bob [^\n\]]*possible repeat\]\n│ are you still there\?/);
      expect(context.match(/are you still there\?/g)).toHaveLength(1);
      await until(
        async () => {
          const i = await inbox("alice");
          return i.num_pending === 0 && i.num_ack_pending === 0;
        },
        10_000,
        "the DM is acked once the second session's hook wrote it",
      );
    } finally {
      await first.cleanup();
      if (second) await cleanupRun(second);
      await double.close();
    }
  }, 150_000);

  it("claude mcp list with COTAL_* set leaves the DM pending and presence unchanged", async () => {
    const env = await seat("carol", mkdtempSync(join(root, "ctl-")));
    await bob.dm("carol", "for your first real session");
    await until(async () => (await inbox("carol")).num_pending === 1, 5_000, "the DM waits in carol's inbox");
    const presenceBefore = roster.get("local.carol")?.presence;

    const double = await ModelDouble.start();
    const run = await runClaude({ baseUrl: double.url, print: false, args: ["--plugin-dir", PLUGIN_DIR, "mcp", "list"], env, timeoutMs: 60_000 });
    try {
      // The health check really started our connector and completed the handshake.
      expect(run.stdout, run.stderr).toMatch(/plugin:cotal:cotal: .*connector\.mjs - ✔ Connected/);
      const i = await inbox("carol");
      expect({ pending: i.num_pending, ackPending: i.num_ack_pending, delivered: i.delivered.consumer_seq }).toEqual({
        pending: 1,
        ackPending: 0,
        delivered: 0,
      });
      expect(roster.get("local.carol")?.presence).toEqual(presenceBefore);
    } finally {
      await cleanupRun(run);
      await double.close();
    }
  }, 90_000);

  it("the first session on a fresh host (no control directory yet) gets the mail sent before it started", async () => {
    const fresh = join(mkdtempSync(join(root, "host-")), "run", "cotal"); // created by the connector, not by us
    const env = await seat("dave", fresh);
    await bob.dm("dave", "welcome aboard");
    const double = await ModelDouble.start();
    const run = await runClaude({ baseUrl: double.url, prompt: "Anything for me?", args: README_ARGS, env, timeoutMs: 60_000 });
    try {
      expect(run.json, run.stderr).toMatchObject({ is_error: false });
      expect(allText(double.mainRequests[0]!)).toMatch(/\[cotal DM from local\.bob [^\n]*\]\n│ welcome aboard/);
    } finally {
      await cleanupRun(run);
      await double.close();
    }
  }, 90_000);
});
