// The command table bash and zsh scripts share (their `case` syntax is the same): one branch per
// command path, setting what that command offers.
import { encodeKind, type CommandNode } from "./spec.js";

/**
 * `_cotal_node PATH`: sets `_cotal_subs`, `_cotal_flags`, `_cotal_valued` (`flag=kind` words),
 * `_cotal_args` (one kind per positional) and `_cotal_variadic` for the command at PATH (its
 * words joined by spaces); returns 1 for a path that is no command.
 */
export function posixNodeFunction(nodes: readonly CommandNode[]): string {
  const branches = nodes.map((n) => {
    const valued = n.valued.map((v) => `${v.flag}=${encodeKind(v.value)}`);
    const args = n.args.map(encodeKind);
    const set = [
      `_cotal_subs='${n.subcommands.join(" ")}'`,
      `_cotal_flags='${n.flags.join(" ")}'`,
      `_cotal_valued='${valued.join(" ")}'`,
      `_cotal_args='${args.join(" ")}'`,
      `_cotal_variadic=${n.variadic ? 1 : 0}`,
    ];
    return `    '${n.path.join(" ")}')\n      ${set.join("\n      ")} ;;`;
  });
  return ["_cotal_node() {", '  case "$1" in', ...branches, "    *) return 1 ;;", "  esac", "}"].join("\n");
}
