// Agent files: `.cotal/agents/<name>.md`, YAML frontmatter (validated by AgentFrontmatter,
// unknown keys refused with file and line) and a markdown body, the persona.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { isMap, isScalar, LineCounter, parseDocument } from "yaml";
import { AgentFrontmatter, CotalError } from "../schemas/index.js";

/** A parsed, validated agent file. */
export interface AgentFile {
  /** The file it came from (as given). */
  file: string;
  frontmatter: AgentFrontmatter;
  /** The markdown body without surrounding blank lines; undefined when empty. */
  persona: string | undefined;
  /** `sha256:` and the hex digest of the file's bytes as read (set by loadAgentFile): what a spawn grant pins. */
  digest?: string;
}

/** Agent file names: one path segment, no dot files. */
const AGENT_NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/;

/** Where the agent file `name` lives under a project root. */
export function agentFilePath(root: string, name: string): string {
  if (!AGENT_NAME.test(name)) {
    throw new AgentFileError(path.join(root, ".cotal", "agents", `${name}.md`), undefined, `${JSON.stringify(name)} is not an agent name.`, {
      remedy: "Agent names use letters, digits, '_' and '-' (the file is .cotal/agents/<name>.md).",
    });
  }
  return path.join(root, ".cotal", "agents", `${name}.md`);
}

/** Read and validate `.cotal/agents/<name>.md` under `root`. */
export function loadAgentFile(root: string, name: string): AgentFile {
  const file = agentFilePath(root, name);
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    throw new AgentFileError(file, undefined, code === "ENOENT" ? "no such agent file." : `cannot be read (${code ?? String(cause)}).`, {
      remedy: code === "ENOENT" ? `Create it (\`cotal setup\` seeds .cotal/agents/default.md), or pick another agent.` : undefined,
      cause,
    });
  }
  // Parsed from the very bytes it hashes: a file changed between the two cannot pass as the pinned one.
  return { ...parseAgentFile(bytes.toString("utf8"), file), digest: `sha256:${createHash("sha256").update(bytes).digest("hex")}` };
}

/**
 * The digest of each persona's agent file under `root`, read and validated now: what a credential
 * with the spawn right is minted with, so the helpers it spawns are the personas as the minter saw
 * them (docs/manager.md, Helpers). A missing or invalid file throws its AgentFileError.
 */
export function personaDigests(root: string, personas: readonly string[]): Record<string, string> {
  return Object.fromEntries(personas.map((p) => [p, loadAgentFile(root, p).digest!]));
}

const KEYS = Object.keys(AgentFrontmatter.shape);

/** Parse agent file text; `file` names it in errors. */
export function parseAgentFile(source: string, file: string): AgentFile {
  const text = source.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  const lines = text.split("\n");
  if (lines[0]?.trim() !== "---") {
    throw new AgentFileError(file, 1, "the file does not start with a YAML frontmatter block (a line `---`).", {
      remedy: "Start the file with `---`, the frontmatter (at least `name:`), and `---`; the markdown after it is the persona.",
    });
  }
  const close = lines.findIndex((l, i) => i > 0 && l.trim() === "---");
  if (close < 0) throw new AgentFileError(file, 1, "the frontmatter block is not closed by a line `---`.");
  // Frontmatter line n (1-based) is file line n + 1.
  const fileLine = (fmLine: number): number => fmLine + 1;

  const lineCounter = new LineCounter();
  const doc = parseDocument(lines.slice(1, close).join("\n"), { lineCounter, prettyErrors: false });
  const yamlError = doc.errors[0];
  if (yamlError) {
    const at = lineCounter.linePos(yamlError.pos[0]).line;
    throw new AgentFileError(file, fileLine(at), `invalid YAML in the frontmatter (${yamlError.code}): ${yamlError.message.split("\n")[0]}`, {
      cause: yamlError,
    });
  }
  const contents = doc.contents;
  if (!isMap(contents)) {
    throw new AgentFileError(file, 2, "the frontmatter is not a map of keys (name, role, …).", { remedy: `Use the keys ${KEYS.join(", ")}.` });
  }
  const keyLines = new Map<string, number>();
  for (const pair of contents.items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : undefined;
    const offset = isScalar(pair.key) ? pair.key.range?.[0] : undefined;
    if (key !== undefined && offset !== undefined) keyLines.set(key, fileLine(lineCounter.linePos(offset).line));
  }

  const parsed = AgentFrontmatter.safeParse(doc.toJS());
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    if (issue.code === "unrecognized_keys") {
      const key = issue.keys[0]!;
      throw new AgentFileError(file, keyLines.get(key), `unknown key ${JSON.stringify(key)} in the frontmatter.`, {
        key,
        remedy: `Agent file keys are ${KEYS.join(", ")}.`,
      });
    }
    const top = issue.path[0];
    const key = typeof top === "string" ? top : undefined;
    throw new AgentFileError(file, key !== undefined ? keyLines.get(key) : 2, `${issue.path.length ? `${issue.path.join(".")}: ` : ""}${issue.message}.`, {
      ...(key !== undefined ? { key } : {}),
    });
  }
  const body = lines
    .slice(close + 1)
    .join("\n")
    .replace(/^\s*\n/, "")
    .trimEnd();
  return { file, frontmatter: parsed.data, persona: body.trim() === "" ? undefined : body };
}

/** An agent file (`.cotal/agents/<name>.md`) that cannot be used; `line` is 1-based within the file. */
export class AgentFileError extends CotalError {
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    detail: string,
    options: { remedy?: string; cause?: unknown; key?: string } = {},
  ) {
    super("bad-agent-file", `${file}${line !== undefined ? `:${line}` : ""}: ${detail}`, options);
    this.key = options.key;
  }
  /** The offending frontmatter key, when the problem is one key. */
  readonly key: string | undefined;
}
