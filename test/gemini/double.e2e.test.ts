// The Gemini API double (testbed/gemini-double.ts) against the real Gemini CLI, pinned
// at @google/gemini-cli 0.61.0: API-key auth selected in the user's ~/.gemini/settings.json, the
// key and GOOGLE_GEMINI_BASE_URL in the environment, the folder trusted. A headless `gemini -p`
// turn gets the double's scripted text; a scripted functionCall (0.61.0 names an MCP tool
// `mcp_<server>_<tool>`) makes the CLI call a trusted MCP
// server's tool and send its functionResponse back in the next streamed request.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contentTexts, functionResponses, GeminiDouble, offeredTools } from "../../testbed/gemini-double.js";

const root = mkdtempSync(join(tmpdir(), "cotal-gemini-double-"));
const calls = join(root, "tiny.calls");
let double: GeminiDouble;

/** `gemini -p <prompt> --output-format json` as a user runs it (asynchronously: the double is served from this process). */
function gemini(prompt: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const env = {
      PATH: process.env.PATH ?? "",
      HOME: root,
      GEMINI_API_KEY: "gemini-double-key",
      GOOGLE_GEMINI_BASE_URL: double.baseUrl,
      GEMINI_CLI_TRUST_WORKSPACE: "true",
    };
    const child = spawn(join(process.cwd(), "node_modules", ".bin", "gemini"), ["-p", prompt, "--output-format", "json"], {
      cwd: root,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s));
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  double = await GeminiDouble.start();
  mkdirSync(join(root, ".gemini"), { recursive: true });
  writeFileSync(
    join(root, ".gemini", "settings.json"),
    JSON.stringify({
      security: { auth: { selectedType: "gemini-api-key" } },
      mcpServers: {
        tiny: {
          command: process.execPath,
          args: [join(process.cwd(), "test", "fixtures", "tiny-mcp-server.mjs")],
          env: { TINY_MCP_CALLS: calls },
          trust: true,
        },
      },
    }),
  );
});

afterAll(async () => {
  await double?.close();
  rmSync(root, { recursive: true, force: true });
});

describe("the Gemini API double, with the real gemini CLI", () => {
  it("a headless turn gets the scripted text, streamed, with the key in the request", async () => {
    double.push({ when: (r) => contentTexts(r).some((t) => t.includes("HELLO-GEMINI")), reply: ["gemini double says hi"] });
    const r = await gemini("HELLO-GEMINI");
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ response: "gemini double says hi" });
    const turn = double.turns().find((t) => contentTexts(t).some((x) => x.includes("HELLO-GEMINI")))!;
    expect(turn.headers["x-goog-api-key"]).toBe("gemini-double-key");
    expect(r.stderr).not.toMatch(/Routing\] .* failed/);
  }, 180_000);

  it("a scripted functionCall makes the CLI call the MCP tool and send its functionResponse back", async () => {
    double.push(
      { when: (r) => contentTexts(r).some((t) => t.includes("CALL-TINY")), reply: [{ tool: "mcp_tiny_echo", args: { text: "from the double" } }] },
      { when: (r) => functionResponses(r).length > 0, reply: ["tiny answered"] },
    );
    const r = await gemini("CALL-TINY please");
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ response: "tiny answered" });
    expect(readFileSync(calls, "utf8")).toContain('"text":"from the double"');
    const offered = double.turns().find((t) => contentTexts(t).some((x) => x.includes("CALL-TINY")))!;
    expect(offeredTools(offered)).toContain("mcp_tiny_echo");
    const back = double.turns().find((t) => functionResponses(t).length > 0)!;
    expect(JSON.stringify(functionResponses(back))).toContain("echo: from the double");
  }, 180_000);
});
