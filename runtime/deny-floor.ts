// The destructive-command deny floor, as shell-command patterns every runtime enforces in its
// own rule syntax (Claude: `Bash(<pattern>)` deny rules, claude/deny-floor.ts; OpenCode and Kilo
// Code: `bash` permission rules, opencode-family/posture.ts), or, for a CLI with no rule of its
// own for it (Codex), through `floorRuleFor` below in a pre-tool hook. A floor, not a sandbox: it
// stops the obvious spellings (`bash -c '…'`, `git -C dir push -f`, `find -delete` and friends
// still get through).
//
// Pattern syntax, the same in both CLIs (verified on Claude 2.1.332 and OpenCode 1.18.33): `*`
// matches any characters including spaces; a trailing ` *` also matches the bare command
// (`rm -rf`); each part of a compound command is checked (`echo x && sudo true` is denied).

/** `cmd flag…` at the start or after other arguments, with anything glued on (`-rfv`). */
function glued(cmd: string, flags: readonly string[]): string[] {
  return flags.flatMap((f) => [`${cmd} ${f}*`, `${cmd} * ${f}*`]);
}

/** `cmd flag` as a whole word, at the start or after other arguments, at the end or not. */
function word(cmd: string, flag: string): string[] {
  return [`${cmd} ${flag}`, `${cmd} ${flag} *`, `${cmd} * ${flag}`, `${cmd} * ${flag} *`];
}

/** `curl … | sh` and friends: a download piped into a shell. */
function pipedToShell(fetchers: readonly string[], shells: readonly string[]): string[] {
  return fetchers.flatMap((f) => shells.flatMap((sh) => [`| ${sh}`, `|${sh}`].flatMap((pipe) => [`${f} *${pipe}`, `${f} *${pipe} *`])));
}

/** The deny floor's shell-command patterns, in a stable order. */
export const DENY_FLOOR_COMMANDS: readonly string[] = Object.freeze([
  // rm -rf / rm -fr (and the capital-R and split spellings)
  ...glued("rm", ["-rf", "-fr", "-Rf", "-fR", "-r -f", "-f -r", "--recursive --force", "--force --recursive"]),
  // git push --force (also --force-with-lease / --force-if-includes: still a history rewrite) and -f
  ...glued("git push", ["--force"]),
  ...word("git push", "-f"),
  // git reset --hard
  ...glued("git reset", ["--hard"]),
  // git clean -f (and -fd, -fdx, -df, -xdf, …)
  ...glued("git clean", ["-f", "-df", "-xf", "-dxf", "-xdf", "--force"]),
  // sudo (bare or with arguments)
  "sudo *",
  // curl … | sh, wget … | sh
  ...pipedToShell(["curl", "wget"], ["sh", "bash"]),
]);

/**
 * The argument that has the hook command (`hook.mjs PreToolUse --deny-floor`) refuse a shell
 * command the floor matches, before anything reaches the connector: how a runtime whose CLI has
 * no rule syntax for the floor enforces it (Codex's PreToolUse hook on its shell tool).
 */
export const DENY_FLOOR_HOOK_FLAG = "--deny-floor";

/** A pattern as a whole-string RegExp: `*` is any characters (spaces too); a trailing ` *` also matches the bare command. */
function patternRegExp(pattern: string): RegExp {
  const bare = pattern.endsWith(" *");
  const body = (bare ? pattern.slice(0, -2) : pattern)
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${body}${bare ? "(?: .*)?" : ""}$`, "s");
}

const FLOOR: ReadonlyArray<readonly [string, RegExp]> = DENY_FLOOR_COMMANDS.map((p) => [p, patternRegExp(p)] as const);

/**
 * What a pattern is checked against, as the CLIs do: the whole command and each part of it
 * between `&&`, `||`, `;`, `&`, line breaks and pipes (a part with its pipes kept too, so
 * `curl … | sh` is seen whole), runs of blanks as one space. Quoting is not parsed: a separator
 * inside quotes splits too, which can only deny more.
 */
function commandParts(command: string): string[] {
  const norm = (s: string): string => s.replace(/\s+/g, " ").trim();
  const lists = command.split(/&&|\|\||[;&\n]/);
  return [...new Set([norm(command), ...lists.map(norm), ...lists.flatMap((l) => l.split("|").map(norm))])].filter((s) => s !== "");
}

/** The deny floor's pattern a shell command matches (the first, in the floor's order), or undefined when the floor lets it run. */
export function floorRuleFor(command: string): string | undefined {
  const parts = commandParts(command);
  return FLOOR.find(([, re]) => parts.some((part) => re.test(part)))?.[0];
}
