// A CLI's JSON-lines output (one event a line, as `codex exec --json` and `opencode run --format
// json` print it), read leniently: a line that is not a JSON object is passed over.

/** The JSON objects among the lines of `stdout`, in order. */
export function jsonObjectLines<T extends object>(stdout: string): T[] {
  return stdout.split("\n").flatMap((line) => {
    if (!line.trim().startsWith("{")) return [];
    try {
      const e: unknown = JSON.parse(line);
      return e && typeof e === "object" && !Array.isArray(e) ? [e as T] : [];
    } catch {
      return [];
    }
  });
}
