// A user's JSON configuration file as an adapter reads it: a plain JSON object, or why it is not
// (a CLI may accept comments or trailing commas Cotal does not read; it then leaves the file alone).
import { readFileSync } from "node:fs";

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** `text` as a JSON object (empty or absent: an empty object), or why it is not one. */
export function jsonObjectOf(text: string | undefined): { doc: Record<string, unknown> } | { error: string } {
  if (text === undefined || text.trim() === "") return { doc: {} };
  try {
    const doc: unknown = JSON.parse(text);
    return isObject(doc) ? { doc } : { error: "not a JSON object" };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** A JSON object file's content, or why not, naming the file (an empty file is an empty object). */
export function readJsonObjectFile(file: string): { doc: Record<string, unknown> } | { error: string } {
  const r = jsonObjectOf(readFileSync(file, "utf8"));
  return "error" in r ? { error: `${file}: ${r.error}` } : r;
}
