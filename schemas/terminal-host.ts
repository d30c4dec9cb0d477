import { z } from "zod";

/**
 * The terminal host a seat runs in (docs/manager.md, Terminal hosts): a headless `process`, a
 * `tmux` window, or a `pty` the manager holds. Not the agent CLI it runs: that is its runtime.
 */
export const TerminalHost = z.enum(["process", "tmux", "pty"]);
export type TerminalHost = z.infer<typeof TerminalHost>;

/**
 * The key that named the terminal host before it was called `terminal`. Still read where older
 * writers may have used it (a spawn from an older CLI, seat-log records and `ps` replies of an
 * older manager, `.cotal/team.json`); never written.
 */
export const OLD_TERMINAL_KEY = "runtime";

/**
 * `schema`, reading an object that names its terminal host by the old key (where `applies` says
 * the old key meant it) as if it said `terminal`. Both keys with different values is an issue:
 * nothing says which one was meant.
 */
export function readingOldTerminalKey<T extends z.ZodType>(schema: T, applies: (o: Record<string, unknown>) => boolean = () => true) {
  return z.preprocess<unknown, T, z.input<T>>((value, ctx) => {
    if (!value || typeof value !== "object" || Array.isArray(value)) return value;
    const o = value as Record<string, unknown>;
    if (o[OLD_TERMINAL_KEY] === undefined || !applies(o)) return value;
    const { [OLD_TERMINAL_KEY]: old, ...rest } = o;
    if (rest.terminal !== undefined && rest.terminal !== old) {
      ctx.addIssue({
        code: "custom",
        path: [OLD_TERMINAL_KEY],
        message: `\`${OLD_TERMINAL_KEY}\` is the old name of \`terminal\`, and the two differ (${JSON.stringify(old)}, ${JSON.stringify(rest.terminal)}): give \`terminal\` only`,
      });
      return value;
    }
    return { ...rest, terminal: old };
  }, schema);
}
