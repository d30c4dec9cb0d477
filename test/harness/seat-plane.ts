// A seat's event plane as a user reads it through the shipped CLI (`cotal history events.<owner>.<actor>
// --json`): its AG-UI frames, oldest first.
import type { AgUiFrame, CotalMessage } from "../../schemas/index.js";
import { frameOf } from "../../schemas/index.js";
import { exitedOk, type CliResult } from "./cli.js";

/** The frames on `events.local.<name>`, read with `cotal` (the project's own CLI runner). */
export async function seatFrames(cotal: (args: string[]) => Promise<CliResult>, name: string, extra: string[] = []): Promise<AgUiFrame[]> {
  const r = exitedOk(await cotal(["history", `events.local.${name}`, "--json", ...extra]));
  return r.json<Array<{ message: CotalMessage }>>().flatMap((h) => {
    const f = frameOf(h.message.parts);
    return f ? [f] : [];
  });
}
