import { Argument, type Command } from "commander";
import { COTAL_VERSION } from "../../schemas/index.js";
import { bashScript } from "../completion/bash.js";
import { fishScript } from "../completion/fish.js";
import { meshNames } from "../completion/names.js";
import { completionSpec, NAME_SOURCES, type CommandNode, type NameSource } from "../completion/spec.js";
import { zshScript } from "../completion/zsh.js";
import { meshOptions, resolveTarget } from "../mesh-client/mesh-target.js";

const SHELLS = {
  bash: bashScript,
  zsh: zshScript,
  fish: fishScript,
} as const satisfies Record<string, (nodes: readonly CommandNode[], version: string) => string>;
type Shell = keyof typeof SHELLS;

/**
 * How long `cotal __complete` may take to find names, from start to the last name printed: a
 * tab that waits longer than this is worse than one that completes nothing.
 */
export const COMPLETE_TIMEOUT_MS = 1_500;

/** A name a script may offer: what Cotal's own names are made of (anything else is left out, never quoted). */
const PLAIN_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/** `cotal completion <shell>` and the hidden `cotal __complete <source>` its scripts call. */
export function registerCompletion(program: Command): void {
  program
    .command("completion")
    .summary("print a tab-completion script for bash, zsh or fish")
    .description(
      "Print a script that completes cotal's commands and flags (read from this very command's definition) and, when " +
        "the mesh answers within 1.5 s, seat, channel and manager names. Load it with `source <(cotal completion bash)` " +
        "(zsh: `source <(cotal completion zsh)`; fish: `cotal completion fish | source`), or save it where your shell " +
        "loads completions (docs/cli.md).",
    )
    .addArgument(new Argument("<shell>", "bash, zsh or fish").choices(Object.keys(SHELLS)))
    .action((shell: Shell) => {
      process.stdout.write(SHELLS[shell](completionSpec(program), COTAL_VERSION));
    });

  // The scripts' source of names: one per line on stdout, nothing at all when the mesh cannot say in time.
  meshOptions(program.command("__complete", { hidden: true }).argument("<source>", NAME_SOURCES.join(", "))).action(
    async (source: string, raw: Record<string, unknown>) => {
      const timer = setTimeout(() => process.exit(0), COMPLETE_TIMEOUT_MS);
      let names: string[] = [];
      try {
        if ((NAME_SOURCES as readonly string[]).includes(source)) names = await meshNames(source as NameSource, resolveTarget(raw));
      } catch {
        // Silent: a completion that cannot ask the mesh offers no names.
      }
      clearTimeout(timer);
      const out = names.filter((n) => PLAIN_NAME.test(n)).join("\n");
      // Exit at once (a lingering handle would hold the shell's tab for seconds), once stdout is written.
      process.stdout.write(out ? `${out}\n` : "", () => process.exit(0));
    },
  );
}
