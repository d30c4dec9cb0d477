import type { ScreenState } from "./adapter.js";

/** A screen a TUI stops on before it takes input (first-run, trust, login), by name. */
export interface BlockingScreen {
  name: string;
  pattern: RegExp;
}

/**
 * An adapter's screen readers from its patterns: `classifyScreen` (a blocking screen first, then
 * the input screen) and `authFailureOnScreen` (the first line naming an auth failure, ≤ 200 chars).
 */
export function screenReaders(p: { input: RegExp; blocking: readonly BlockingScreen[]; authFailure: RegExp }): {
  classifyScreen(screen: string): ScreenState;
  authFailureOnScreen(screen: string): string | undefined;
} {
  return {
    classifyScreen(screen) {
      const b = p.blocking.find((x) => x.pattern.test(screen));
      if (b) return { kind: "blocked", name: b.name };
      return p.input.test(screen) ? { kind: "ready" } : { kind: "unknown" };
    },
    authFailureOnScreen(screen) {
      return screen
        .split("\n")
        .find((l) => p.authFailure.test(l))
        ?.trim()
        .slice(0, 200);
    },
  };
}
