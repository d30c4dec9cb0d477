/**
 * Peer text made safe to print: the one definition of which characters never reach a terminal
 * or a log raw, used by the CLI's output (cli/terminal/output.ts) and at the log boundary (broker/log.ts).
 *
 * Unsafe: C0 controls, DEL, C1 controls (U+0080–U+009F, among them the 8-bit CSI U+009B), the
 * line and paragraph separators U+2028/U+2029, and the bidirectional controls (U+061C,
 * U+200E/U+200F, U+202A–U+202E, U+2066–U+2069) that can make a line read differently from what
 * it holds ("Trojan Source").
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
export const UNSAFE_CHARS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** The same set minus C0 controls: JSON.stringify already escapes those, and leaves these raw. */
export const UNSAFE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `\uXXXX` for one character. */
export const escapeChar = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

/**
 * Text on one line, safe for a terminal: newlines and tabs as \n, \r and \t, every other unsafe
 * character as \uXXXX.
 */
export function oneLine(text: string): string {
  return text.replace(UNSAFE_CHARS, (c) => {
    if (c === "\n") return "\\n";
    if (c === "\t") return "\\t";
    if (c === "\r") return "\\r";
    return escapeChar(c);
  });
}

/**
 * One JSON log line whose strings hold no unsafe character, not even after `JSON.parse`: each
 * one JSON leaves raw becomes the visible six characters `\u009b` (written `\\u009b` in the
 * JSON). Outside strings JSON has none of these characters, so only string contents change. A
 * log line quotes peers (a presence key, a subject, a card's name): whoever prints it later, raw
 * or parsed, prints no terminal escape.
 */
export function neutralizeLogLine(line: string): string {
  return line.replace(UNSAFE_IN_JSON, (c) => `\\${escapeChar(c)}`);
}
