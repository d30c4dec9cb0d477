// What tab completion knows of the `cotal` command, read from its commander definition: every
// command and subcommand, each one's flags, which flags take a value and what that value is (a
// file, a folder, one of fixed choices, or names the mesh knows), and its positional arguments.
// The shell scripts (bash.ts, zsh.ts, fish.ts) are rendered from it, so a new command or flag
// completes without touching them.
import type { Argument, Command, Option } from "commander";

/** Names only the running mesh knows: `cotal __complete <source>` prints them. */
export const NAME_SOURCES = ["seats", "channels", "managers"] as const;
export type NameSource = (typeof NAME_SOURCES)[number];

/**
 * What a value completes to: nothing offered (free text), a file, a folder, one of fixed choices,
 * or names from the mesh.
 */
export type ValueKind = { kind: "text" } | { kind: "file" } | { kind: "dir" } | { kind: "choices"; values: string[] } | { kind: "names"; source: NameSource };

/** One command (the root has path []). */
export interface CommandNode {
  path: string[];
  subcommands: string[];
  /** Every flag, long and short, `--help` included. */
  flags: string[];
  /** The flags that take a value, and what the value is. */
  valued: Array<{ flag: string; value: ValueKind }>;
  /** Positional arguments, in order. */
  args: ValueKind[];
  /** The last positional argument takes any number of words. */
  variadic: boolean;
}

/** A declaration that some option's or argument's values are names from the mesh. */
export interface NameRule {
  /** The command path it applies to (`channels set`); unset: every command. */
  command?: string;
  option?: string;
  argument?: string;
  source: NameSource;
}

/**
 * Which values are names from the mesh. Commander says a value's name (`<name>`), not what it
 * names, so the mapping is declared here, by option or argument and, where the same name means
 * different things, by command. Each rule must match something: a renamed flag fails `cotal
 * completion` (and its test) instead of silently completing nothing.
 */
export const NAME_RULES: readonly NameRule[] = [
  { option: "--on", source: "managers" },
  { option: "--channel", source: "channels" },
  { argument: "channel", source: "channels" },
  { command: "channels set", argument: "name", source: "channels" },
  { command: "send dm", argument: "name", source: "seats" },
  { command: "deliver pending", argument: "name", source: "seats" },
  { command: "revoke", argument: "name", source: "seats" },
  { command: "stop", option: "--name", source: "seats" },
  { command: "attach", option: "--name", source: "seats" },
  { command: "handover", option: "--name", source: "seats" },
  { command: "console", option: "--agent", source: "seats" },
];

const VERSION_FLAGS = new Set(["-V", "--version"]);
const HELP_FLAGS = new Set(["-h", "--help"]);

/** Value names that are paths on this host (`--creds <file>`, `--store-dir <dir>`, `--dir <path>`). */
const FILE_VALUES = new Set(["file", "path"]);
const DIR_VALUES = new Set(["dir"]);

/** A rule matched nothing in the program: the rules and the commands disagree. */
export class StaleCompletionRuleError extends Error {}

/** Every command of `program` (hidden ones left out), the root first. */
export function completionSpec(program: Command, rules: readonly NameRule[] = NAME_RULES): CommandNode[] {
  const used = new Set<number>();
  const nodes: CommandNode[] = [];
  const visit = (cmd: Command, path: string[]) => {
    const visible = cmd.commands.filter((c) => !isHidden(c));
    const command = path.join(" ");
    const options = cmd.options.filter((o) => !o.hidden);
    nodes.push({
      path,
      subcommands: visible.map((c) => c.name()),
      flags: [...options.flatMap((o) => [o.short, o.long].filter((f): f is string => !!f)), "-h", "--help"],
      valued: options
        .filter((o) => o.required || o.optional)
        .flatMap((o) => [o.short, o.long].filter((f): f is string => !!f).map((flag) => ({ flag, value: optionValue(o, command, rules, used) }))),
      args: cmd.registeredArguments.map((a) => argumentValue(a, command, rules, used)),
      variadic: cmd.registeredArguments.at(-1)?.variadic ?? false,
    });
    for (const sub of visible) visit(sub, [...path, sub.name()]);
  };
  visit(program, []);
  // The root's own options (--log-format, --debug; not --version) are taken after any command too.
  const root = nodes[0]!;
  const globalFlags = root.flags.filter((f) => !VERSION_FLAGS.has(f) && !HELP_FLAGS.has(f));
  const globalValued = root.valued.filter((v) => globalFlags.includes(v.flag));
  for (const n of nodes.slice(1)) {
    n.flags.push(...globalFlags.filter((f) => !n.flags.includes(f)));
    n.valued.push(...globalValued.filter((v) => !n.valued.some((w) => w.flag === v.flag)));
  }
  for (const n of nodes) {
    const choices = [...n.valued.map((v) => v.value), ...n.args].flatMap((v) => (v.kind === "choices" ? v.values : []));
    assertPlain([...n.path, ...n.subcommands, ...n.flags, ...choices]);
  }
  const stale = rules.filter((_, i) => !used.has(i));
  if (stale.length) throw new StaleCompletionRuleError(`completion rules match no command, option or argument: ${JSON.stringify(stale)}`);
  return nodes;
}

function isHidden(c: Command): boolean {
  // commander keeps `hidden` private; `command(name, { hidden: true })` sets `_hidden`.
  return (c as unknown as { _hidden?: boolean })._hidden === true;
}

function ruleFor(command: string, match: { option?: string; argument?: string }, rules: readonly NameRule[], used: Set<number>): NameSource | undefined {
  const i = rules.findIndex(
    (r) => (r.command === undefined || r.command === command) && (match.option !== undefined ? r.option === match.option : r.argument === match.argument),
  );
  if (i < 0) return undefined;
  used.add(i);
  return rules[i]!.source;
}

function optionValue(o: Option, command: string, rules: readonly NameRule[], used: Set<number>): ValueKind {
  const source = o.long ? ruleFor(command, { option: o.long }, rules, used) : undefined;
  if (source) return { kind: "names", source };
  if (o.argChoices?.length) return { kind: "choices", values: [...o.argChoices] };
  const name = /[<[]([^>\]]+)[>\]]/.exec(o.flags)?.[1]?.replace(/\.\.\.$/, "") ?? "";
  return pathKind(name);
}

function argumentValue(a: Argument, command: string, rules: readonly NameRule[], used: Set<number>): ValueKind {
  const source = ruleFor(command, { argument: a.name() }, rules, used);
  if (source) return { kind: "names", source };
  if (a.argChoices?.length) return { kind: "choices", values: [...a.argChoices] };
  return pathKind(a.name());
}

function pathKind(valueName: string): ValueKind {
  if (FILE_VALUES.has(valueName)) return { kind: "file" };
  if (DIR_VALUES.has(valueName)) return { kind: "dir" };
  return { kind: "text" };
}

/** A value kind as the scripts carry it: `text`, `file`, `dir`, `choices:a,b`, `names:seats` (plain words: nothing to quote). */
export function encodeKind(v: ValueKind): string {
  switch (v.kind) {
    case "choices":
      return `choices:${v.values.join(",")}`;
    case "names":
      return `names:${v.source}`;
    default:
      return v.kind;
  }
}

/**
 * The words the scripts embed (commands, flags, choices) must be plain, so no script quotes
 * anything: one that is not is refused here, never escaped.
 */
function assertPlain(words: readonly string[]): void {
  const bad = words.filter((w) => !/^[A-Za-z0-9_][A-Za-z0-9_.-]*$|^-{1,2}[A-Za-z0-9][A-Za-z0-9-]*$/.test(w));
  if (bad.length) throw new StaleCompletionRuleError(`completion cannot embed ${JSON.stringify(bad)}: not a plain command, flag or choice name`);
}
