// cotal.yaml parsing (cli/team-file/team-file.ts): the file as the issue writes it parses; every problem —
// bad YAML, an unknown key, a value that does not fit, an undeclared channel, a persona file that
// is missing or invalid — names the file, its line and the key.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { parseTeamFile, TeamFileError, type TeamFileProblem } from "../../../cli/team-file/team-file.js";
import { wireValidators } from "../../harness/wire-schemas.js";

const dir = mkdtempSync(join(tmpdir(), "cotal-team-file-"));
const FILE = join(dir, "cotal.yaml");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ISSUE_FILE = `space: team
channels:
  general: {}
  ops: { class: live }
seats:
  e1: { agent: echo, channels: [general] }
  e2: { agent: echo, channels: [general, ops] }
  e3: { agent: echo, channels: [ops] }
`;

/** The problems parsing `text` reports (fails the test when it parses). */
function problems(text: string): TeamFileProblem[] {
  try {
    parseTeamFile(text, FILE);
  } catch (err) {
    expect(err).toBeInstanceOf(TeamFileError);
    const e = err as TeamFileError;
    // The message names the file and line of each problem, and its key.
    for (const p of e.problems) expect(e.message).toContain(`${FILE}:${p.line}: ${p.key ? `${p.key}: ` : ""}`);
    return e.problems;
  }
  throw new Error("it parsed");
}

describe("cotal.yaml", () => {
  it("the issue's file parses as written", () => {
    const t = parseTeamFile(ISSUE_FILE, FILE);
    expect(t.spec.space).toBe("team");
    expect(t.spec.channels).toEqual({ general: {}, ops: { class: "live" } });
    expect(Object.keys(t.spec.seats ?? {})).toEqual(["e1", "e2", "e3"]);
    expect(t.spec.seats?.e2).toEqual({ agent: "echo", channels: ["general", "ops"] });
    expect(t.dir).toBe(dir);
  });

  it("the exported JSON Schema (docs/schema/cotal-yaml.schema.json, for editors) accepts it and refuses an unknown key", () => {
    const validate = wireValidators();
    expect(validate("cotal-yaml", parse(ISSUE_FILE))).toEqual([]);
    expect(validate("cotal-yaml", parse(ISSUE_FILE.replace("agent: echo, channels: [ops]", "agent: echo, chanels: [ops]")))).not.toEqual([]);
  });

  it("a key the schema does not know: its own line and key, and the keys allowed there", () => {
    const p = problems(ISSUE_FILE.replace("e2: { agent: echo,", "e2: { agnet: echo,"));
    expect(p).toEqual([{ line: 7, key: "seats.e2.agnet", message: expect.stringContaining("unknown key; the keys here are agent, persona") }]);
    expect(problems("space: team\nseets: {}\n")).toEqual([{ line: 2, key: "seets", message: expect.stringContaining("the keys here are space, server") }]);
  });

  it("a seat's terminal host; runtime, its old name, is read as terminal with a note naming its line", () => {
    const now = parseTeamFile(ISSUE_FILE.replace("e1: { agent: echo,", "e1: { agent: echo, terminal: process,"), FILE);
    expect(now.spec.seats?.e1).toMatchObject({ terminal: "process" });
    expect(now.notes).toEqual([]);
    const old = parseTeamFile(ISSUE_FILE.replace("e2: { agent: echo,", "e2: { agent: echo, runtime: process,"), FILE);
    expect(old.spec.seats?.e2).toEqual({ agent: "echo", terminal: "process", channels: ["general", "ops"] });
    expect(old.notes).toEqual([`${FILE}:7: seats.e2.runtime: the old name of terminal, read as terminal; rename it (docs/team-file.md)`]);
    expect(problems(ISSUE_FILE.replace("e3: { agent: echo,", "e3: { agent: echo, terminal: process, runtime: tmux,"))).toEqual([
      { line: 8, key: "seats.e3.runtime", message: expect.stringContaining('the old name of terminal, which says otherwise ("process")') },
    ]);
  });

  it("a value that does not fit: the line of the key that holds it", () => {
    expect(problems(ISSUE_FILE.replace("class: live", "class: loud"))).toEqual([
      { line: 4, key: "channels.ops.class", message: expect.stringContaining('"live"') },
    ]);
    expect(problems("seats:\n  e1:\n    agent: echo\n    count: 0\n")).toEqual([
      { line: 4, key: "seats.e1.count", message: expect.stringMatching(/>0|too small/i) },
    ]);
    expect(problems("server:\n  port: 70000\n  cluster: 2\n")).toEqual([
      { line: 2, key: "server.port", message: expect.any(String) },
      { line: 3, key: "server.cluster", message: "must be 1, 3 or 5 (JetStream needs a majority of an odd number of nodes)" },
    ]);
    expect(problems("channels:\n  ops:\n    window: 5\n")).toEqual([{ line: 3, key: "channels.ops.window", message: expect.stringContaining("with a unit") }]);
  });

  it("a list item: its own line and index", () => {
    const text = "channels:\n  general: {}\nseats:\n  e1:\n    agent: echo\n    channels:\n      - general\n      - bad name\n";
    expect(problems(text)).toEqual([{ line: 8, key: "seats.e1.channels[1]", message: expect.stringContaining("dot-separated segments") }]);
  });

  it("a name with '.', '*', '>' or whitespace is refused, never rewritten", () => {
    expect(problems("seats:\n  e.1: { agent: echo }\n")).toEqual([{ line: 2, key: "seats.e.1", message: expect.stringContaining("invalid name") }]);
    expect(problems("space: te>am\n")).toEqual([{ line: 1, key: "space", message: expect.stringContaining("space must use only") }]);
  });

  it("a channel a seat joins must be declared", () => {
    expect(problems(ISSUE_FILE.replace("[general, ops]", "[general, opz]"))).toEqual([
      { line: 7, key: "seats.e2.channels[1]", message: expect.stringContaining('channel "opz" is not declared under channels') },
    ]);
  });

  it('read and write name seats or personas of the file, or "*"; a seat may not join a channel it may not read', () => {
    const acl = `${ISSUE_FILE.replace("ops: { class: live }", 'ops: { class: live, write: [e2], read: [e2, e3] }\n  news: { read: "*", write: [helper] }')}  h: { agent: echo, persona: helper }\n`;
    const t = parseTeamFile(acl, FILE);
    expect(t.spec.channels?.ops).toEqual({ class: "live", write: ["e2"], read: ["e2", "e3"] });
    expect(t.spec.channels?.news).toEqual({ read: "*", write: ["helper"] });
    expect(wireValidators()("cotal-yaml", parse(acl))).toEqual([]);
    // A name that is no seat or persona of the file: at its own list item.
    expect(problems(acl.replace("write: [e2]", "write: [e2, e9]"))).toEqual([
      { line: 4, key: "channels.ops.write[1]", message: expect.stringContaining('"e9" is not a seat or persona of this file (the seats: e1, e2, e3') },
    ]);
    // A name a subject could not hold: refused, at the item.
    expect(problems(acl.replace("write: [e2]", "write: [e.2]"))).toEqual([{ line: 4, key: "channels.ops.write[0]", message: expect.any(String) }]);
    // e3 joins ops but the read list leaves it out: at e3's channel item.
    expect(problems(acl.replace("read: [e2, e3]", "read: [e2]"))).toEqual([
      { line: 9, key: "seats.e3.channels[0]", message: expect.stringContaining("the seat joins ops, but channels.ops.read does not let it read there") },
    ]);
    // A seat that names no channels joins its persona's subscribe: checked the same, at its persona key.
    const viaPersona =
      "channels:\n  ops: { read: [e2] }\npersonas:\n  watcher: { subscribe: [ops] }\nseats:\n  e2: { agent: echo, channels: [ops] }\n  w: { agent: echo, persona: watcher }\n";
    expect(problems(viaPersona)).toEqual([
      { line: 7, key: "seats.w.persona", message: expect.stringContaining("the seat joins ops (its persona's subscribe), but channels.ops.read does not") },
    ]);
  });

  it("count may not make a name another seat has", () => {
    expect(problems("seats:\n  e: { agent: echo, count: 2 }\n  e_2: { agent: echo }\n")).toEqual([
      { line: 2, key: "seats.e.count", message: "makes a seat named e_2, which is declared too" },
    ]);
  });

  it("bad YAML: the line of the error", () => {
    const p = problems("space: team\nchannels:\n  general: {\n");
    expect(p[0]).toMatchObject({ line: expect.any(Number), key: "", message: expect.stringContaining("invalid YAML") });
    expect(problems("space: a\nspace: b\n")[0]).toMatchObject({ line: 2, message: expect.stringContaining("DUPLICATE_KEY") });
  });

  it("several problems are all reported, each on its line", () => {
    const p = problems("space: team\nchannels:\n  ops: { class: loud }\nseats:\n  e1: { agent: robot }\n");
    expect(p.map((x) => [x.line, x.key])).toEqual([
      [3, "channels.ops.class"],
      [5, "seats.e1.agent"],
    ]);
  });

  it("personas: inline keys are an agent file's; a file is read and checked, naming its own line", () => {
    writeFileSync(join(dir, "good.md"), "---\nname: reviewer\nrole: review\n---\nYou review.\n");
    writeFileSync(join(dir, "bad.md"), "---\nname: reviewer\ncolour: red\n---\n");
    const ok = parseTeamFile("personas:\n  helper:\n    role: helpers\n    text: You help.\n  reviewer:\n    file: good.md\n", FILE);
    expect(ok.personas.get("helper")?.text).toBe("---\nname: helper\nrole: helpers\n---\nYou help.\n");
    expect(ok.personas.get("reviewer")?.text).toContain("You review.");
    expect(problems("personas:\n  helper:\n    role: helpers\n    colour: red\n")).toEqual([
      { line: 4, key: "personas.helper.colour", message: expect.stringContaining("unknown key") },
    ]);
    expect(problems("personas:\n  r:\n    file: missing.md\n")).toEqual([
      { line: 3, key: "personas.r.file", message: expect.stringContaining(`${join(dir, "missing.md")} does not exist`) },
    ]);
    expect(problems("personas:\n  r:\n    file: bad.md\n")).toEqual([
      { line: 3, key: "personas.r.file", message: expect.stringContaining(`${join(dir, "bad.md")}:3: unknown key "colour"`) },
    ]);
    expect(problems("personas:\n  r:\n    file: good.md\n    role: x\n")).toEqual([
      { line: 4, key: "personas.r.role", message: expect.stringContaining("unknown key") },
    ]);
  });

  it("an empty or comment-only file is refused (it would retire every seat); `{}` is an empty space; a file that is not a map is refused at line 1", () => {
    for (const empty of ["", "\n\n", "# cotal.yaml\n# seats: none yet\n", "---\n"])
      expect(problems(empty)).toEqual([{ line: 1, key: "", message: expect.stringContaining("the file declares nothing") }]);
    expect(parseTeamFile("{}\n", FILE).spec).toEqual({});
    expect(problems("- a\n- b\n")).toEqual([{ line: 1, key: "", message: expect.stringContaining("expected object") }]);
  });
});
