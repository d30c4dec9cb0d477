// Agent files: YAML frontmatter validated by the schema (unknown keys refused with file and
// line), markdown body = persona.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { AgentFileError, loadAgentFile, parseAgentFile } from "../../runtime/index.js";

const root = mkdtempSync(path.join(os.tmpdir(), "cotal-agents-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function writeAgent(name: string, text: string): string {
  const file = path.join(root, ".cotal", "agents", `${name}.md`);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

function refusal(fn: () => unknown): AgentFileError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AgentFileError);
    return err as AgentFileError;
  }
  throw new Error("expected an AgentFileError");
}

describe("agent files", () => {
  it("loads frontmatter and persona from .cotal/agents/<name>.md", () => {
    const file = writeAgent(
      "reviewer",
      [
        "---",
        "name: reviewer",
        "role: review",
        "description: Reviews pull requests",
        "tags: [code, review]",
        "subscribe: [team.backend]",
        "model: opus",
        "agent: code-reviewer",
        "launchOptions:",
        "  max-turns: 20",
        "  effort: high",
        "  verbose: true",
        "capabilities: [spawn]",
        "---",
        "",
        "You are the reviewer.",
        "",
        "Be kind, be precise.",
        "",
      ].join("\n"),
    );
    const agent = loadAgentFile(root, "reviewer");
    expect(agent.file).toBe(file);
    expect(agent.frontmatter).toEqual({
      name: "reviewer",
      role: "review",
      description: "Reviews pull requests",
      tags: ["code", "review"],
      subscribe: ["team.backend"],
      allowSubscribe: [],
      allowPublish: [],
      model: "opus",
      agent: "code-reviewer",
      launchOptions: { "max-turns": 20, effort: "high", verbose: true },
      allowedTools: [],
      capabilities: ["spawn"],
      allowSpawn: [],
    });
    expect(agent.persona).toBe("You are the reviewer.\n\nBe kind, be precise.");
  });

  it("refuses an unknown key with the file and the key's line", () => {
    const file = writeAgent("typo", ["---", "name: typo", "role: review", "", "subscibe: [general]", "---", "Body."].join("\n"));
    const err = refusal(() => loadAgentFile(root, "typo"));
    expect(err).toMatchObject({ file, line: 5, key: "subscibe", code: "bad-agent-file" });
    expect(err.message).toContain(`${file}:5: unknown key "subscibe"`);
    expect(err.message).toContain("subscribe");
  });

  it("finds the line of an unknown key after a multi-line value, with CRLF line ends", () => {
    const text = ["---", "name: crlf", "description: |", "  line one", "  line two", "launchOptions:", "  effort: high", "persona: nope", "---", "x"].join(
      "\r\n",
    );
    expect(refusal(() => parseAgentFile(text, "crlf.md"))).toMatchObject({ line: 8, key: "persona" });
  });

  it("refuses a wrong value type with the key's line", () => {
    const err = refusal(() => parseAgentFile(["---", "name: ok", "tags: not-a-list", "---"].join("\n"), "types.md"));
    expect(err).toMatchObject({ line: 3, key: "tags" });
  });

  it("refuses a missing name, invalid YAML, a duplicate key and a file without frontmatter", () => {
    expect(refusal(() => parseAgentFile(["---", "role: x", "---", "body"].join("\n"), "a.md")).message).toContain("name");
    expect(refusal(() => parseAgentFile(["---", "name: [unclosed", "---"].join("\n"), "b.md"))).toMatchObject({ file: "b.md" });
    expect(refusal(() => parseAgentFile(["---", "name: a", "role: x", "name: b", "---"].join("\n"), "c.md"))).toMatchObject({ line: 4 });
    expect(refusal(() => parseAgentFile("Just a persona.\n", "d.md"))).toMatchObject({ line: 1 });
    expect(refusal(() => parseAgentFile(["---", "name: a", "body without a close"].join("\n"), "e.md")).message).toContain("not closed");
  });

  it("an empty body means no persona", () => {
    expect(parseAgentFile(["---", "name: quiet", "---", "", "  ", ""].join("\n"), "q.md").persona).toBeUndefined();
  });

  it("refuses agent names that are not one plain path segment, and says when the file is missing", () => {
    expect(refusal(() => loadAgentFile(root, "../etc/passwd")).message).toContain("not an agent name");
    expect(refusal(() => loadAgentFile(root, "nobody")).message).toContain("no such agent file");
  });
});
