// A real Codex rollout read for the event plane: `codex exec` against the Responses
// double writes a session with a prompt, text, a shell call and a final answer; the Codex reader
// turns its records into transcript records, and the event plane's own mapper (unchanged) makes
// a well-formed AG-UI stream of them: one run, the texts, the tool call by name, no tool
// arguments or results anywhere.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { codexTranscriptRecords, listRollouts } from "../../codex/index.js";
import { AgUiMapper, streamViolation } from "../../connector/internal.js";
import { codexProviderConfig, ResponsesDouble } from "../../testbed/responses-double.js";
import { projectRoot } from "../harness/cli.js";
import { ONE_TOOL_TURN } from "../harness/agui-shapes.js";

const SECRET_ARG = "echo SECRET-ARGUMENT";
let home: string;
let double: ResponsesDouble;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "cotal-codex-rollout-"));
  double = await ResponsesDouble.start();
  double.push({ reply: ["looking", { tool: "exec_command", arguments: { cmd: SECRET_ARG } }] }, { reply: ["all done"] });
  // Top-level keys first: after the provider's table they would belong to it.
  writeFileSync(join(home, "config.toml"), `approval_policy = "never"\nsandbox_mode = "workspace-write"\n${codexProviderConfig(double.baseUrl, "K")}`);
  const codex = join(projectRoot, "node_modules", ".bin", "codex");
  await new Promise<void>((resolve, reject) => {
    const c = spawn(codex, ["exec", "--json", "--skip-git-repo-check", "PROMPT-TEXT"], {
      cwd: home,
      env: { PATH: process.env.PATH, HOME: home, CODEX_HOME: home, K: "k" },
      stdio: "ignore",
    });
    c.once("error", reject);
    c.once("close", () => resolve());
  });
}, 120_000);

afterAll(async () => {
  await double?.close();
  rmSync(home, { recursive: true, force: true });
});

describe("Codex rollouts on the event plane", () => {
  it("map to one well-formed run: the prompt, the texts, the tool call by name; no arguments or results", () => {
    const [rollout] = listRollouts(home);
    expect(rollout, "a rollout under sessions/").toBeDefined();
    const mapper = new AgUiMapper({ threadId: rollout!.thread, openTools: [] });
    const events = readFileSync(rollout!.file, "utf8")
      .split("\n")
      .filter(Boolean)
      .flatMap((l) => codexTranscriptRecords(JSON.parse(l)))
      .flatMap((r) => mapper.map(r))
      .map((e) => e.event);
    expect(streamViolation(events as never)).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual([...ONE_TOOL_TURN]);
    const texts = events.flatMap((e) => ("delta" in e ? [e.delta] : []));
    expect(texts).toEqual(["PROMPT-TEXT", "looking", "all done"]);
    expect(events.find((e) => e.type === "TOOL_CALL_START")).toMatchObject({ toolCallName: "exec_command" });
    expect(JSON.stringify(events)).not.toContain("SECRET-ARGUMENT");
  });
});
