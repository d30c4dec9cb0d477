// A short session's activity reaches the event plane: `claude -p` with the plugin on an open mesh,
// one turn with a Bash call, over in well under a second. The connector joins on the session's
// first hook; the session can end (SIGINT to the MCP server) before the plane has read the
// transcript or published a frame. Every frame must be stored before the connector exits.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { frameOf } from "../../schemas/index.js";
import { buildCli, pidAlive, projectRoot } from "../harness/cli.js";
import { cleanupRun, runClaude } from "../harness/claude-runner.js";
import { NatsServer, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { ModelDouble } from "../../testbed/model-double.js";

let server: NatsServer;
let mesh: TestMesh;
let dir: string;

beforeAll(async () => {
  await buildCli(); // also copies the bundles into plugin/bin
  server = await NatsServer.start();
  mesh = await TestMesh.start(server, "short");
  dir = mkdtempSync(join(tmpdir(), "cotal-short-"));
}, 60_000);

afterAll(async () => {
  await mesh?.close();
  await server?.cleanup();
  if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
});

/** The pids of the connectors that wrote `log` (pino records carry `pid`). */
function connectorPids(log: string): number[] {
  const pids = new Set<number>();
  for (const line of readFileSync(log, "utf8").split("\n")) {
    try {
      pids.add((JSON.parse(line) as { pid: number }).pid);
    } catch {
      // a partial line
    }
  }
  return [...pids];
}

describe("a short plugin session", () => {
  it("has its run, text and tool call stored on events.local.dora by the time its connector has exited", async () => {
    const double = await ModelDouble.start([
      { reply: ["Let me look.", { tool: "Bash", input: { command: "echo short", description: "echo" } }] },
      { reply: ["Done."], afterToolResult: "Bash" },
    ]);
    const log = join(dir, "connector.log");
    const run = await runClaude({
      baseUrl: double.url,
      prompt: "Say hi",
      args: ["--plugin-dir", join(projectRoot, "plugin"), "--permission-mode", "bypassPermissions"],
      env: {
        COTAL_SERVER: server.url,
        COTAL_SPACE: mesh.space,
        COTAL_NAME: "dora",
        COTAL_CONTROL_DIR: join(dir, "ctl"),
        COTAL_LOG_FILE: log,
        COTAL_LOG_LEVEL: "debug",
      },
      timeoutMs: 60_000,
    });
    try {
      expect(run.json, run.stderr).toMatchObject({ is_error: false, result: "Done." });
      // Claude signals its MCP servers as it exits; the connector's bounded flush ends within seconds.
      const pids = connectorPids(log);
      expect(pids.length, readFileSync(log, "utf8")).toBeGreaterThan(0);
      await until(() => pids.every((p) => !pidAlive(p)), 15_000, `the connectors ${pids.join(", ")} to exit`);
      const reader = await mesh.endpoint("reader_dora");
      const frames = (await reader.history("events.local.dora")).map((h) => frameOf(h.message.parts)!);
      const types = frames.flatMap((f) => f.events.map((e) => e.type));
      expect(types, readFileSync(log, "utf8")).toContain("RUN_STARTED");
      expect(types).toContain("TOOL_CALL_START");
      expect(types).toContain("RUN_FINISHED");
      expect(frames.every((f) => f.threadId === run.json?.session_id)).toBe(true);
    } finally {
      await double.close();
      await cleanupRun(run);
    }
  }, 90_000);
});
