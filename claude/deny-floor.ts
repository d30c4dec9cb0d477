// The destructive-command deny floor: Claude permission rules passed with `--disallowedTools` in
// every profile and mode. Deny rules win over allow rules and over bypassPermissions, so a
// launch option cannot lift them. A floor, not a sandbox: it stops the obvious spellings
// (`bash -c '…'`, `git -C dir push -f`, `find -delete` and friends still get through).
//
// Rule syntax verified on the real CLI 2.1.332 (see docs/claude-binding.md): `*` matches any
// characters including spaces; a trailing ` *` also matches the bare command (`rm -rf`); a
// rule is checked against each part of a compound command (`echo x && sudo true` is denied).

const bash = (pattern: string): string => `Bash(${pattern})`;

/** `cmd flag…` at the start or after other arguments, with anything glued on (`-rfv`). */
function glued(cmd: string, flags: readonly string[]): string[] {
  return flags.flatMap((f) => [bash(`${cmd} ${f}*`), bash(`${cmd} * ${f}*`)]);
}

/** `cmd flag` as a whole word, at the start or after other arguments, at the end or not. */
function word(cmd: string, flag: string): string[] {
  return [bash(`${cmd} ${flag}`), bash(`${cmd} ${flag} *`), bash(`${cmd} * ${flag}`), bash(`${cmd} * ${flag} *`)];
}

/** `curl … | sh` and friends: a download piped into a shell. */
function pipedToShell(fetchers: readonly string[], shells: readonly string[]): string[] {
  return fetchers.flatMap((f) => shells.flatMap((sh) => [`| ${sh}`, `|${sh}`].flatMap((pipe) => [bash(`${f} *${pipe}`), bash(`${f} *${pipe} *`)])));
}

/** The deny floor, in a stable order. */
export const DENY_FLOOR: readonly string[] = Object.freeze([
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
  bash("sudo *"),
  // curl … | sh, wget … | sh
  ...pipedToShell(["curl", "wget"], ["sh", "bash"]),
]);
