import { readFile } from "node:fs/promises";
import { UsageError } from "./errors.js";

/**
 * The text of `cotal send`: the words on the command line joined with spaces, or the contents
 * of `--file F`, or standard input when the only word is `-`. Bytes are kept as they are
 * (UTF-8; no trailing newline is added or removed).
 */
export async function messageText(words: string[], file: string | undefined, stdin: NodeJS.ReadableStream = process.stdin): Promise<string> {
  if (file !== undefined) {
    if (words.length) throw new UsageError("Invalid input: give the text as words or with --file, not both.", { remedy: "Drop the words, or drop --file." });
    try {
      return await readFile(file, "utf8");
    } catch (cause) {
      throw new UsageError(`Invalid input: --file: cannot read ${JSON.stringify(file)} (${(cause as NodeJS.ErrnoException).code ?? "error"}).`, {
        remedy: "Name a readable text file, or pass the text as words (or `-` to read standard input).",
        cause,
      });
    }
  }
  if (words.length === 1 && words[0] === "-") {
    if ((stdin as { isTTY?: boolean }).isTTY) {
      throw new UsageError("Invalid input: `-` reads the message from standard input, which is a terminal.", {
        remedy: "Pipe the text in (`… | cotal send msg general -`), or use --file F.",
      });
    }
    const chunks: Buffer[] = [];
    for await (const c of stdin) chunks.push(typeof c === "string" ? Buffer.from(c) : (c as Buffer));
    return Buffer.concat(chunks).toString("utf8");
  }
  return words.join(" ");
}
