// Architectural guard: nothing outside the Claude binding (claude/, and the plugin installer in
// connector/claude/, which runs `claude plugin …`) builds a `claude` command line. Every
// start of Claude goes through buildClaudeLaunch, so the MCP wiring, the allow rule, the deny
// floor and persona privacy cannot drift (test/harness/claude-runner.ts is the test harness
// and is not scanned).
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../harness/claude-runner.js";

const SCANNED_DIRS = ["schemas", "broker", "claude", "connector", "manager", "cli"];
const EXEMPT_DIRS = ["claude" + path.sep, path.join("connector", "claude") + path.sep];

/** Flags only a Claude session command line has. */
const CLAUDE_FLAG =
  /(^|[\s"'=[(,])--(permission-mode|mcp-config|strict-mcp-config|append-system-prompt(-file)?|system-prompt(-file)?|dangerously-skip-permissions|allow-dangerously-skip-permissions|allowedTools|allowed-tools|disallowedTools|disallowed-tools|dangerously-load-development-channels)(?![\w-])/;
/** A shell command starting with claude and a flag or a claude subcommand. */
const CLAUDE_SHELL = /^\s*(\S*\/)?claude(\.exe)?\s+(-|plugin\b|mcp\b|auth\b|agents\b|setup-token\b|doctor\b|install\b|update\b)/;
/** A program path naming the claude executable. */
const CLAUDE_PROGRAM = /^(\S*\/)?claude(\.exe)?$/;
const SPAWNERS = new Set(["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork", "execa", "execaSync"]);

interface Finding {
  line: number;
  what: string;
}

/** Every place in `source` that builds a claude command line (comments are not code, so they do not count). */
function findClaudeCommandLines(source: string, fileName = "x.ts"): Finding[] {
  const sf = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const findings: Finding[] = [];
  const at = (node: ts.Node): number => sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      const text = node.text;
      const flag = CLAUDE_FLAG.exec(text);
      if (flag) findings.push({ line: at(node), what: `Claude flag --${flag[2]} in ${JSON.stringify(text.slice(0, 60))}` });
      else if (CLAUDE_SHELL.test(text)) findings.push({ line: at(node), what: `claude command ${JSON.stringify(text.slice(0, 60))}` });
    }
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const name = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) ? callee.name.text : undefined;
      const program = node.arguments[0];
      if (name && SPAWNERS.has(name) && program) {
        const literal = ts.isStringLiteralLike(program) ? program.text : undefined;
        const spawnsClaude =
          literal !== undefined ? CLAUDE_PROGRAM.test(literal) || /^\s*(\S*\/)?claude(\.exe)?(\s|$)/.test(literal) : /claude/i.test(program.getText(sf));
        if (spawnsClaude) findings.push({ line: at(node), what: `${name}(${program.getText(sf).slice(0, 60)}) starts claude` });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return findings;
}

function sourceFiles(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return []; // a folder that does not exist yet (e.g. manager/)
  }
  return entries.flatMap((entry) => {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return entry === "node_modules" ? [] : sourceFiles(full);
    return full.endsWith(".ts") && !full.endsWith(".test.ts") && !full.endsWith(".d.ts") ? [full] : [];
  });
}

describe("guard: only the Claude binding builds a claude command line", () => {
  it("no scanned source file constructs one", () => {
    const files = SCANNED_DIRS.flatMap((d) => sourceFiles(path.join(projectRoot, d))).filter(
      (f) => !EXEMPT_DIRS.some((d) => path.relative(projectRoot, f).startsWith(d)),
    );
    expect(files.length).toBeGreaterThan(0);
    const violations = files.flatMap((file) =>
      findClaudeCommandLines(readFileSync(file, "utf8"), file).map((f) => `${path.relative(projectRoot, file)}:${f.line}: ${f.what}`),
    );
    expect(violations, "build Claude command lines with buildClaudeLaunch (claude/) instead").toEqual([]);
  });

  it("the builder itself is where the flags live (so the scan would see them if they moved)", () => {
    const builder = readFileSync(path.join(projectRoot, "claude", "launch-builder.ts"), "utf8");
    expect(findClaudeCommandLines(builder).length).toBeGreaterThan(0);
  });

  it.each([
    [`spawn("claude", ["-p"])`, "spawn"],
    [`execFileSync("/usr/local/bin/claude", args)`, "execFileSync"],
    [`child_process.spawn(opts.claudePath, args)`, "spawn"],
    [`spawn(claudeBin(), args)`, "spawn"],
    [`exec("claude plugin install cotal@cotal")`, "claude command"],
    [`const args = ["--permission-mode", "bypassPermissions"]`, "--permission-mode"],
    ["args.push(`--mcp-config=${file}`)", "--mcp-config"],
    [`args.push("--append-system-prompt", persona)`, "--append-system-prompt"],
    [`const a = ["--append-system-prompt-file", f]`, "--append-system-prompt-file"],
    [`run(["--dangerously-skip-permissions"])`, "--dangerously-skip-permissions"],
    [`const deny = "--disallowedTools"`, "--disallowedTools"],
    ["const cmd = `claude --resume ${id} --fork-session`", "claude command"],
  ])("catches %s", (source, expected) => {
    const findings = findClaudeCommandLines(source);
    expect(findings.length, JSON.stringify(findings)).toBeGreaterThan(0);
    expect(findings.map((f) => f.what).join("\n")).toContain(expected);
  });

  it.each([
    `spawn(launch.command, launch.args, { env: launch.env })`,
    `const harness = "claude";`,
    `// claude --permission-mode bypassPermissions, see connector/claude`,
    `/* spawn("claude") */ const x = 1;`,
    `throw new Error("claude is not installed")`,
    `const hint = "cotal run reviewer --opt permission-mode=dontAsk";`,
    "const pairing = `claude-${pid}.json`;",
    `const flag = "--permission-modes-are-not-a-flag";`,
    `spawn("nats-server", ["-js"])`,
  ])("ignores %s", (source) => {
    expect(findClaudeCommandLines(source)).toEqual([]);
  });
});
