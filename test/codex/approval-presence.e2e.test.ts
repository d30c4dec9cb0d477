// Approval state from a Codex session: Codex fires PermissionRequest, with
// Claude's payload, as it is about to open its approval dialog; the hook `cotal setup --runtime codex`
// installs relays it to the session's connector, whose presence then says `waiting` with condition
// `approval`, as a Claude seat's does, until the person answers and the turn ends. Codex's dialog
// waits for the hook, so a hand-started session's connector answers it at once (nothing is put to
// the mesh; a supervised seat's asks are, test/codex/approvals.e2e.test.ts). Real parts:
// the codex TUI (0.171.0, under tmux, approval on-request) against the Responses double, its
// hooks as setupCodex writes and trusts them (the built hook.mjs), a connector on a real mesh.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { codexRuntime, setupCodex } from "../../codex/index.js";
import { codexProviderConfig, functionOutputs, inputTexts, ResponsesDouble } from "../../testbed/responses-double.js";
import { CONNECTOR_BUNDLE, ensureBuilt } from "../connector/built.js";
import { startConnector } from "../connector/helpers.js";
import { projectRoot } from "../harness/cli.js";
import { NatsServer, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";

const codexBin = join(projectRoot, "node_modules", ".bin", "codex");
let root: string;
let server: NatsServer;
let mesh: TestMesh;
let double: ResponsesDouble;
const tmuxSocket = (): string => join(root, "tmux.sock");
const tmux = (...args: string[]): string => execFileSync("tmux", ["-S", tmuxSocket(), ...args], { encoding: "utf8" });
const screen = (): string => {
  try {
    return tmux("capture-pane", "-p", "-t", "codex");
  } catch {
    return "";
  }
};

beforeAll(async () => {
  ensureBuilt();
  root = mkdtempSync(join(tmpdir(), "cotal-codex-approval-"));
  server = await NatsServer.start();
  mesh = await TestMesh.start(server, "approval");
  double = await ResponsesDouble.start();
}, 120_000);

afterAll(async () => {
  try {
    tmux("kill-server");
  } catch {
    // no tmux server left
  }
  await double?.close();
  await mesh?.close();
  await server?.cleanup();
  rmSync(root, { recursive: true, force: true });
});

describe("a Codex approval dialog in presence", () => {
  it("PermissionRequest puts the connector's presence at waiting (approval); after the person approves, the turn ends idle", async () => {
    // In-process, so not Codex's child: the check that a hook comes from the connector's own session is off.
    // A Codex session's connector (as `cotal setup --runtime codex` names it): its asks stay its own.
    const seat = await startConnector(mesh, "carol", { pairing: false, launch: { runtime: "codex" } });
    const presence = () => seat.connector.status();
    try {
      const home = join(root, "home");
      const codexHome = join(home, ".codex");
      const cwd = join(root, "work");
      const outside = join(root, "outside-marker");
      mkdirSync(codexHome, { recursive: true });
      mkdirSync(cwd);
      // The user's own config: Codex may ask them (on-request), the double as provider, the folder trusted.
      writeFileSync(
        join(codexHome, "config.toml"),
        `approval_policy = "on-request"\nsandbox_mode = "workspace-write"\n${codexProviderConfig(double.baseUrl, "K")}\n[projects.${JSON.stringify(cwd)}]\ntrust_level = "trusted"\n`,
      );
      const env = { HOME: home, CODEX_HOME: codexHome, PATH: process.env.PATH ?? "/usr/bin" };
      const report = await setupCodex({ env, connectorEntry: CONNECTOR_BUNDLE, executable: codexBin, check: false });
      expect(report.trusted).toBe(5);
      // This test's connector runs in-process (seat.env names it to the hooks): Codex must not start another.
      const config = join(codexHome, "config.toml");
      expect(readFileSync(config, "utf8")).toContain("[mcp_servers.cotal]");
      writeFileSync(config, readFileSync(config, "utf8").replace(/^\[mcp_servers\.cotal\]\n(?:[^[\n].*\n|\n)*/m, ""));

      double.push(
        {
          when: (r) => inputTexts(r).some((t) => t.includes("APPROVE-ME")),
          reply: [{ tool: "exec_command", arguments: { cmd: `touch ${outside}`, sandbox_permissions: "require_escalated", justification: "needs it" } }],
        },
        { when: (r) => functionOutputs(r).length > 0, reply: ["done"] },
      );
      const vars: Record<string, string> = { ...env, K: "k", TERM: "xterm-256color", ...(seat.env as Record<string, string>) };
      // --no-daemon: a hand-started TUI otherwise installs and starts Codex's shared background
      // server in the home, which outlives the TUI (and the test).
      const argv = ["env", "-i", ...Object.entries(vars).map(([k, v]) => `${k}=${v}`), codexBin, "--no-daemon", "-C", cwd];
      tmux("new-session", "-d", "-s", "codex", "-x", "160", "-y", "45", "-c", cwd, argv.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" "));
      try {
        await until(() => /\? for shortcuts|context left/.test(screen()), 60_000, "codex's input screen", 250);
        tmux("send-keys", "-t", "codex", "-l", "APPROVE-ME touch the marker");
        // Codex reads text followed at once by Enter as a paste (the manager's wake waits the same).
        await new Promise((r) => setTimeout(r, codexRuntime.submitDelayMs));
        tmux("send-keys", "-t", "codex", "Enter");

        await until(() => presence().status === "waiting", 60_000, "presence waiting", 100);
        expect(presence()).toMatchObject({ status: "waiting", condition: "approval" });
        await until(() => /Would you like to run the following command\?/.test(screen()), 30_000, "codex's approval dialog", 250);
        expect(existsSync(outside)).toBe(false);

        tmux("send-keys", "-t", "codex", "y");
        await until(() => double.turns().some((r) => functionOutputs(r).length > 0), 60_000, "the approved command's output to reach the model", 250);
        await until(() => presence().status === "idle", 60_000, "presence idle after the turn", 100);
      } catch (err) {
        throw new Error(`${(err as Error).message}\n--- codex's screen ---\n${screen()}`, { cause: err });
      }
      expect(presence().condition).toBeUndefined();
      expect(existsSync(outside)).toBe(true);
    } finally {
      await seat.close();
    }
  }, 240_000);
});
