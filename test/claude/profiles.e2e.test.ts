// The real claude CLI (2.1.332) accepts what the builder produces for the other profiles: a
// one-shot run (structured output through --json-schema, deny floor holding in bypass mode),
// and a foreground spawn's flags.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildClaudeLaunch, launchClaude, type ClaudeLaunch, type ClaudeLaunchInput } from "../../claude/index.js";
import { claudeBin, claudeEnv, projectRoot } from "../harness/claude-runner.js";
import { DESTRUCTIVE } from "../harness/deny-floor-cases.js";
import { ModelDouble, systemText, toolResults, type ScriptStep } from "../../testbed/model-double.js";

const root = mkdtempSync(path.join(os.tmpdir(), "cotal-profiles-e2e-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
  double: ModelDouble;
}

/** Build a launch for `over`, run it to exit with the model double playing `script`. */
async function runProfile(
  tag: string,
  script: ScriptStep[],
  over: Partial<ClaudeLaunchInput>,
  tweak?: (l: ClaudeLaunch) => ClaudeLaunch,
): Promise<Outcome & { cwd: string }> {
  const base = mkdtempSync(path.join(root, `${tag}-`));
  const home = path.join(base, "home");
  const cwd = path.join(base, "work");
  mkdirSync(home);
  mkdirSync(cwd);
  const material = path.join(base, "material.json");
  writeFileSync(material, "{}\n", { mode: 0o600 });
  const double = await ModelDouble.start(script);
  let launch = buildClaudeLaunch({
    profile: "run",
    cwd,
    identity: { name: "runner", space: "team", launchMaterialPath: material },
    connectorEntry: path.join(projectRoot, "test", "fixtures", "tiny-mcp-server.mjs"),
    isolation: true,
    parentEnv: claudeEnv({ baseUrl: double.url, home }),
    authMode: "api-key",
    claudePath: claudeBin(),
    runtimeDir: path.join(base, "run"),
    ...over,
  });
  if (tweak) launch = tweak(launch);
  const { child } = launchClaude(launch, { detached: true, stdio: "pipe", watcherPollMs: 50 });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (s: string) => (stdout += s));
  child.stderr?.setEncoding("utf8").on("data", (s: string) => (stderr += s));
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // gone
    }
  }, 60_000);
  const code = await new Promise<number | null>((resolve) => child.once("close", (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr, double, cwd };
}

/** Not on the floor, and a write: it runs only in bypass mode. */
const CONTROL = "touch bypass-proof && echo floor-control";

describe("the run profile on the real CLI", () => {
  it("returns structured output through --json-schema, and the deny floor holds in bypass mode", async () => {
    const schema = path.join(root, "answer.schema.json");
    writeFileSync(schema, JSON.stringify({ type: "object", properties: { answer: { type: "string" } }, required: ["answer"] }));
    const out = await runProfile(
      "run",
      [
        { reply: [...DESTRUCTIVE, CONTROL].map((command) => ({ tool: "Bash", input: { command, description: "probe" } })) },
        { afterToolResult: "Bash", reply: [{ tool: "StructuredOutput", input: { answer: "42" } }] },
      ],
      // Bypass on purpose: the deny floor must hold even there (runs default to dontAsk).
      { prompt: "What is six times seven?", jsonSchemaFile: schema, launchOptions: { "permission-mode": "bypassPermissions" } },
      (launch) => {
        mkdirSync(path.join(launch.cwd, "victim"));
        return launch;
      },
    );
    try {
      expect(out.code, out.stderr).toBe(0);
      const result = JSON.parse(out.stdout) as { subtype: string; is_error: boolean; structured_output?: unknown };
      expect(result).toMatchObject({ subtype: "success", is_error: false, structured_output: { answer: "42" } });

      const results = toolResults(out.double.mainRequests[1]!);
      expect(results).toHaveLength(DESTRUCTIVE.length + 1);
      DESTRUCTIVE.forEach((command, i) => {
        expect(results[i], command).toMatchObject({ name: "Bash", isError: true });
        expect(results[i]!.text, command).toContain(`Permission to use Bash with command ${command} has been denied`);
      });
      // The control writes a file: it runs only because the run is in bypass mode (print mode denies what would prompt).
      expect(results[DESTRUCTIVE.length]).toMatchObject({ isError: false, text: "floor-control" });
      expect(existsSync(path.join(out.cwd, "bypass-proof"))).toBe(true);
      expect(existsSync(path.join(out.cwd, "victim"))).toBe(true);
    } finally {
      await out.double.close();
    }
  }, 90_000);
});

describe("the foreground profile's flags on the real CLI", () => {
  it("are accepted (run here with -p), and the persona file reaches the system prompt", async () => {
    const persona = `FOREGROUND-PERSONA-${Date.now()}`;
    const out = await runProfile("foreground", [{ reply: ["Hello from the foreground."] }], { profile: "foreground", persona }, (launch) => ({
      ...launch,
      // A foreground spawn is interactive; print mode lets the same flags run without a terminal.
      args: [...launch.args, "-p"],
      stdin: "Say hello.",
    }));
    try {
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout.trim()).toBe("Hello from the foreground.");
      expect(systemText(out.double.mainRequests[0]!)).toContain(persona);
    } finally {
      await out.double.close();
    }
  }, 90_000);
});
