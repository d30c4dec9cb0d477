// Asking a person at a terminal before something they may not have meant (a y/N question).
import { createInterface } from "node:readline/promises";

/** A person can be asked: standard input and the stream the question goes to are terminals. */
export function atTerminal(output: NodeJS.WriteStream = process.stderr): boolean {
  return !!process.stdin.isTTY && !!output.isTTY;
}

/** Ask a y/N question on `output`; anything but y or yes (an empty line, end of input) is no. */
export async function askYesNo(question: string, output: NodeJS.WriteStream = process.stderr): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } catch {
    return false; // input closed before an answer
  } finally {
    rl.close();
  }
}
