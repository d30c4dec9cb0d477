// Reading `cotal.yaml` (docs/team-file.md): YAML through the `yaml` package's document API, so
// every problem — bad YAML, a key the schema refuses, a value that does not fit, a channel a seat
// names that is not declared — is reported with the file, its line and the key.
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { isMap, isScalar, isSeq, LineCounter, parseDocument, stringify, type Document, type Node } from "yaml";
import type { z } from "zod";
import { parseAgentFile, RUNTIMES } from "../../runtimes/index.js";
import { EVERY_SEAT, OLD_TERMINAL_KEY, parseDuration, TEAM_FILE_LIMITS, TeamFile, TeamPersonaFile, type TeamAudience } from "../../schemas/index.js";
import { UsageError } from "../terminal/errors.js";

/** One problem of a team file: where (1-based line, dotted key) and what. */
export interface TeamFileProblem {
  line: number;
  key: string;
  message: string;
}

/** A team file that cannot be used: each problem names the file, its line and the key. Exit code 2. */
export class TeamFileError extends UsageError {
  constructor(
    readonly file: string,
    readonly problems: TeamFileProblem[],
  ) {
    super(problems.map((p) => `${file}:${p.line}: ${p.key ? `${p.key}: ` : ""}${p.message}${/[.!?)]$/.test(p.message) ? "" : "."}`).join("\n"), {
      remedy: `Fix ${problems.length === 1 ? "it" : "them"} and run the command again (docs/team-file.md describes every key).`,
    });
  }
}

/** A persona as `cotal up -f` writes it: the agent file's text and its digest. */
export interface PersonaText {
  text: string;
  digest: string;
  /** The channels its seats join when the seat names none (the agent file's `subscribe`). */
  subscribe: string[];
}

/** A parsed, checked team file. */
export interface TeamDoc {
  /** The file, absolute. */
  file: string;
  /** Its folder: relative paths in it (persona files, cwd, storeDir) are resolved against it. */
  dir: string;
  spec: TeamFile;
  /** Each declared persona's agent file text. */
  personas: Map<string, PersonaText>;
  /** What the file still says in an old way that is read all the same (`file:line: key: …`), for a warning. */
  notes: string[];
  /** A problem at a key path (its line and key), for a TeamFileError. */
  at(path: ReadonlyArray<string | number>, message: string): TeamFileProblem;
}

/** Read and check a team file. */
export function loadTeamFile(path: string, cwd: string = process.cwd()): TeamDoc {
  const file = resolve(cwd, path);
  let text: string;
  try {
    // Refused before it is read: a file this large is not a team file (a log, a dump, a wrong path).
    const size = statSync(file).size;
    if (size > TEAM_FILE_LIMITS.bytes)
      throw new UsageError(
        `Invalid input: --file: ${JSON.stringify(path)} is ${size} bytes, over the limit of ${TEAM_FILE_LIMITS.bytes} bytes (1 MiB) for a team file.`,
        { remedy: "Check that it is the cotal.yaml you meant; move long persona texts into agent files (`personas.<name>.file`, docs/team-file.md)." },
      );
    text = readFileSync(file, "utf8");
  } catch (cause) {
    if (cause instanceof UsageError) throw cause;
    const code = (cause as NodeJS.ErrnoException).code;
    throw new UsageError(
      `Invalid input: --file: ${JSON.stringify(path)} ${code === "ENOENT" ? "does not exist" : `cannot be read (${code ?? String(cause)})`}.`,
      {
        remedy: "Pass the path of a cotal.yaml (docs/team-file.md).",
        cause,
      },
    );
  }
  return parseTeamFile(text, file);
}

/** Parse team file text; `file` (absolute) names it in errors and anchors its relative paths. */
export function parseTeamFile(source: string, file: string): TeamDoc {
  const lineCounter = new LineCounter();
  const doc = parseDocument(source, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const lineAt = (offset: number) => lineCounter.linePos(offset).line;
  if (doc.errors.length) {
    throw new TeamFileError(
      file,
      doc.errors.map((e) => ({ line: lineAt(e.pos[0]), key: "", message: `invalid YAML (${e.code}): ${e.message.split("\n")[0]}` })),
    );
  }
  const at = (path: ReadonlyArray<string | number>, message: string): TeamFileProblem => ({ line: lineOf(doc, path, lineAt), key: keyLabel(path), message });
  const raw: unknown = doc.toJS();
  // An empty or comment-only file (an editor crash, a bad redirect) is not "declare nothing": read
  // so, `up -f` would retire every seat it started. A file that means nothing says `{}`.
  if (raw === null || raw === undefined)
    throw new TeamFileError(file, [
      {
        line: 1,
        key: "",
        message:
          "the file declares nothing: it is empty or holds only comments (a file that was cut short?); nothing was changed. Declare the space's channels and seats, or write `{}` to declare none on purpose (it retires what `up -f` started)",
      },
    ]);
  const over = overLimits(raw);
  if (over.length)
    throw new TeamFileError(
      file,
      over.map((p) => at(p.path, p.message)),
    );
  const old = oldTerminalKeys(raw);
  const parsed = TeamFile.safeParse(raw);
  // Reported with the schema's problems, or after them all: which agents exist is not the contract's.
  const agents = unknownAgents(raw);
  if (!parsed.success || old.problems.length) {
    throw new TeamFileError(
      file,
      [...(parsed.success ? [] : flatten(parsed.error.issues, raw)), ...old.problems, ...agents].map((i) => at(i.path, i.message)),
    );
  }
  const notes = old.read.map((path) => {
    const p = at(path, "");
    return `${file}:${p.line}: ${p.key}: the old name of terminal, read as terminal; rename it (docs/team-file.md)`;
  });
  const spec = parsed.data;
  const dir = dirname(file);
  const problems: Array<{ path: Array<string | number>; message: string }> = [...agents];
  checkReferences(spec, problems);
  const personas = new Map<string, PersonaText>();
  for (const [name, persona] of Object.entries(spec.personas ?? {})) {
    try {
      personas.set(name, personaText(name, persona, (raw as { personas: Record<string, Record<string, unknown>> }).personas[name]!, dir));
    } catch (err) {
      problems.push({ path: ["personas", name, ...("file" in persona ? ["file"] : [])], message: (err as Error).message });
    }
  }
  checkReadable(spec, personas, problems);
  if (problems.length)
    throw new TeamFileError(
      file,
      problems.map((p) => at(p.path, p.message)),
    );
  return { file, dir, spec, personas, notes, at };
}

/** The keys of a section past TEAM_FILE_LIMITS, and seats past it once `count` is counted (checked before the schema: it is cheap). */
function overLimits(raw: unknown): Issue[] {
  if (!raw || typeof raw !== "object") return [];
  const section = (key: string) => {
    const v = (raw as Record<string, unknown>)[key];
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  };
  const out: Issue[] = [];
  for (const key of ["channels", "personas", "seats"] as const) {
    const n = Object.keys(section(key)).length;
    if (n > TEAM_FILE_LIMITS[key]) out.push({ path: [key], message: `${n} ${key} declared, over the limit of ${TEAM_FILE_LIMITS[key]} per file` });
  }
  const seats = Object.values(section("seats")).reduce<number>((sum, s) => {
    const count = s && typeof s === "object" ? (s as { count?: unknown }).count : undefined;
    return sum + (typeof count === "number" && Number.isInteger(count) && count > 0 ? count : 1);
  }, 0);
  if (!out.length && seats > TEAM_FILE_LIMITS.seats)
    out.push({ path: ["seats"], message: `the seats declared make ${seats} seats with their count, over the limit of ${TEAM_FILE_LIMITS.seats} per file` });
  return out;
}

/** The seats a channel's `read` or `write` list names (by key, by persona, or `"*"`) include the seat of `key`. */
export function audienceHas(audience: TeamAudience, key: string, persona: string | undefined): boolean {
  const names: readonly string[] = typeof audience === "string" ? [audience] : audience;
  return names.includes(EVERY_SEAT) || names.includes(key) || (persona !== undefined && names.includes(persona));
}

/**
 * A seat's `runtime`, the old name of its `terminal`, moved to `terminal` in `raw` (so the schema
 * reads it): where each was, and a problem where a seat gives both, differing.
 */
function oldTerminalKeys(raw: unknown): { read: Array<Array<string | number>>; problems: Issue[] } {
  const seats = (raw as { seats?: unknown } | null)?.seats;
  const out: { read: Array<Array<string | number>>; problems: Issue[] } = { read: [], problems: [] };
  if (!seats || typeof seats !== "object") return out;
  for (const [name, seat] of Object.entries(seats as Record<string, unknown>)) {
    if (!seat || typeof seat !== "object" || !(OLD_TERMINAL_KEY in seat)) continue;
    const s = seat as Record<string, unknown>;
    const path = ["seats", name, OLD_TERMINAL_KEY];
    const old = s[OLD_TERMINAL_KEY];
    delete s[OLD_TERMINAL_KEY];
    if (s.terminal !== undefined && s.terminal !== old) {
      out.problems.push({ path, message: `the old name of terminal, which says otherwise (${JSON.stringify(s.terminal)}); keep terminal only` });
      continue;
    }
    s.terminal = old;
    out.read.push(path);
  }
  return out;
}

/** Checks across keys: declared channels, durations in range, seat names that count does not make twice, who may read and write. */
/**
 * Seats whose `agent` is neither `echo` nor a runtime of the registry (runtimes/index.ts): the
 * contract takes any runtime name, the registry says which exist here.
 */
function unknownAgents(raw: unknown): Array<{ path: Array<string | number>; message: string }> {
  const seats = (raw as { seats?: unknown } | null)?.seats;
  if (!seats || typeof seats !== "object") return [];
  const agents = ["echo", ...RUNTIMES.map((r) => r.name)];
  return Object.entries(seats as Record<string, { agent?: unknown } | null>).flatMap(([name, seat]) =>
    typeof seat?.agent === "string" && !agents.includes(seat.agent)
      ? [{ path: ["seats", name, "agent"], message: `${JSON.stringify(seat.agent)} is not an agent Cotal runs (${agents.join(", ")})` }]
      : [],
  );
}

function checkReferences(spec: TeamFile, problems: Array<{ path: Array<string | number>; message: string }>): void {
  const channels = new Set(Object.keys(spec.channels ?? {}));
  const seats = Object.entries(spec.seats ?? {});
  // A read or write list names seats by key, or personas (of the file, or named by a seat).
  const nameable = new Set([...seats.map(([k]) => k), ...Object.keys(spec.personas ?? {}), ...seats.flatMap(([, s]) => (s?.persona ? [s.persona] : []))]);
  for (const [name, c] of Object.entries(spec.channels ?? {})) {
    if (c?.window !== undefined && parseDuration(c.window) < 1000) problems.push({ path: ["channels", name, "window"], message: "must be at least 1s" });
    for (const key of ["read", "write"] as const) {
      const list = c?.[key];
      if (!Array.isArray(list)) continue;
      for (const [i, who] of list.entries())
        if (who !== EVERY_SEAT && !nameable.has(who))
          problems.push({
            path: ["channels", name, key, i],
            message: `${JSON.stringify(who)} is not a seat or persona of this file (the seats: ${seats.map(([k]) => k).join(", ") || "none"}; "*" is every seat)`,
          });
    }
  }
  const taken = new Map<string, string>();
  for (const name of Object.keys(spec.seats ?? {})) taken.set(name, name);
  for (const [name, seat] of Object.entries(spec.seats ?? {})) {
    for (const [i, ch] of (seat?.channels ?? []).entries()) {
      if (!channels.has(ch))
        problems.push({
          path: ["seats", name, "channels", i],
          message: `channel ${JSON.stringify(ch)} is not declared under channels (add \`${ch}: {}\` there)`,
        });
    }
    const w = seat?.restart?.window;
    if (w !== undefined && (parseDuration(w) < 1000 || parseDuration(w) > 86_400_000))
      problems.push({ path: ["seats", name, "restart", "window"], message: "must be from 1s to 24h" });
    for (const extra of seatNames(name, seat?.count ?? 1).slice(1)) {
      const holder = taken.get(extra);
      if (holder !== undefined) {
        problems.push({
          path: ["seats", name, "count"],
          message: `makes a seat named ${extra}, which ${holder === extra ? "is declared too" : `seats.${holder} makes too`}`,
        });
      } else taken.set(extra, name);
    }
  }
}

/** The channels a seat joins: its own list, else its persona's `subscribe` (a persona of the file; one on another host is not known here), as the manager decides. */
export function seatJoins(spec: TeamFile, personas: ReadonlyMap<string, PersonaText>, key: string): string[] {
  const seat = spec.seats?.[key];
  if (seat?.channels?.length) return seat.channels;
  return (seat?.persona !== undefined ? personas.get(seat.persona)?.subscribe : undefined) ?? [];
}

/** A seat may not join a channel whose `read` list leaves it out: at its channel item, or at its persona when that is where the channel comes from. */
function checkReadable(spec: TeamFile, personas: ReadonlyMap<string, PersonaText>, problems: Array<{ path: Array<string | number>; message: string }>): void {
  for (const [name, seat] of Object.entries(spec.seats ?? {})) {
    const own = !!seat?.channels?.length;
    for (const [i, ch] of seatJoins(spec, personas, name).entries()) {
      const read = spec.channels?.[ch]?.read;
      if (read === undefined || audienceHas(read, name, seat?.persona)) continue;
      problems.push({
        path: own ? ["seats", name, "channels", i] : ["seats", name, "persona"],
        message: `the seat joins ${ch}${own ? "" : ` (its persona's subscribe)`}, but channels.${ch}.read does not let it read there (add ${name} to that list, or leave ${ch} out ${own ? "here" : "of its channels"})`,
      });
    }
  }
}

/** The seat names `count` seats of one key get: the key, then key_2, key_3… (the names a manager gives a taken name). */
export function seatNames(key: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => (i === 0 ? key : `${key}_${i + 1}`));
}

/** A persona's agent file text: the file's own (checked), or the inline keys rendered as one. */
function personaText(name: string, persona: NonNullable<TeamFile["personas"]>[string], raw: Record<string, unknown>, dir: string): PersonaText {
  let text: string;
  let source: string;
  if ("file" in persona && TeamPersonaFile.safeParse(persona).success) {
    source = resolve(dir, (persona as { file: string }).file);
    try {
      text = readFileSync(source, "utf8");
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code;
      throw new Error(`${source} ${code === "ENOENT" ? "does not exist" : `cannot be read (${code ?? String(cause)})`}`, { cause });
    }
  } else {
    source = `personas.${name}`;
    const { text: body, ...keys } = raw;
    text = `---\n${stringify({ name, ...keys }).trimEnd()}\n---\n${typeof body === "string" ? body.trimEnd() + "\n" : ""}`;
  }
  // An agent file the manager would refuse is refused here, naming its own line.
  const { frontmatter } = parseAgentFile(text, source);
  return { text, digest: createHash("sha256").update(text).digest("hex"), subscribe: frontmatter.subscribe };
}

type Issue = { path: Array<string | number>; message: string };

/**
 * zod's issues as one problem per key: unknown keys each at their own key, a record's bad key at
 * that key, and for a persona (a union) the issues of the form it was written in.
 */
function flatten(issues: readonly z.core.$ZodIssue[], raw: unknown, prefix: Array<string | number> = []): Issue[] {
  return issues.flatMap((issue): Issue[] => {
    const path = [...prefix, ...issue.path.map((p) => (typeof p === "number" ? p : String(p)))];
    switch (issue.code) {
      case "unrecognized_keys":
        return issue.keys.map((k) => ({ path: [...path, k], message: `unknown key; the keys here are ${keysAt(path).join(", ")}` }));
      case "invalid_key":
        return [{ path, message: `invalid name: ${issue.issues[0]?.message ?? issue.message}` }];
      case "invalid_union": {
        const value = valueAt(raw, path);
        const form = value && typeof value === "object" && "file" in value ? 0 : 1;
        const branch = issue.errors[form];
        return branch && branch.length ? flatten(branch, raw, path) : [{ path, message: issue.message }];
      }
      default:
        return [{ path, message: issue.message }];
    }
  });
}

function valueAt(raw: unknown, path: ReadonlyArray<string | number>): unknown {
  let v = raw;
  for (const p of path) v = v && typeof v === "object" ? (v as Record<string | number, unknown>)[p] : undefined;
  return v;
}

/** The keys the schema allows at a path (for "unknown key" problems). */
function keysAt(path: ReadonlyArray<string | number>): string[] {
  let schema: unknown = TeamFile;
  for (const p of path) {
    const s = unwrap(schema);
    const def = (s as { _zod: { def: Record<string, unknown> } })._zod.def;
    if (def.type === "object") schema = (def.shape as Record<string, unknown>)[String(p)];
    else if (def.type === "record") schema = def.valueType;
    else if (def.type === "array") schema = def.element;
    else return [];
    if (!schema) return [];
  }
  const s = unwrap(schema);
  const def = (s as { _zod: { def: Record<string, unknown> } })._zod.def;
  if (def.type === "object") return Object.keys(def.shape as object);
  if (def.type === "union")
    return [
      ...new Set((def.options as unknown[]).flatMap((o) => Object.keys(((unwrap(o) as { _zod: { def: { shape?: object } } })._zod.def.shape ?? {}) as object))),
    ];
  return [];
}

function unwrap(schema: unknown): unknown {
  let s = schema as { _zod: { def: { type: string; innerType?: unknown } } };
  while (["optional", "nullable", "default"].includes(s._zod.def.type) && s._zod.def.innerType) s = s._zod.def.innerType as typeof s;
  return s;
}

/** `seats.e1.channels[0]`. */
export function keyLabel(path: ReadonlyArray<string | number>): string {
  return path.reduce<string>((acc, p) => (typeof p === "number" ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), "") || "";
}

/** The line of the deepest node a key path reaches: a map key's own line, a list item's line. */
function lineOf(doc: Document, path: ReadonlyArray<string | number>, lineAt: (offset: number) => number): number {
  let node: Node | null | undefined = doc.contents;
  let line = node?.range ? lineAt(node.range[0]) : 1;
  for (const p of path) {
    if (isMap(node)) {
      const pair = node.items.find((it) => isScalar(it.key) && String(it.key.value) === String(p));
      if (!pair) break;
      const key = pair.key as Node;
      if (key.range) line = lineAt(key.range[0]);
      node = pair.value as Node | null;
    } else if (isSeq(node) && typeof p === "number") {
      const item = node.items[p] as Node | undefined;
      if (!item) break;
      if (item.range) line = lineAt(item.range[0]);
      node = item;
    } else break;
  }
  return line;
}
