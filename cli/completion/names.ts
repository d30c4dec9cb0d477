// The names tab completion asks the mesh for (`cotal __complete <source>`): who is on the roster,
// which channels exist, which managers run. Read with the command's own credential, so each
// credential completes only what it may see.
import { postCounts } from "../../web/index.js";
import type { MeshTarget } from "../mesh-client/mesh-target.js";
import { listManagers } from "../mesh-client/manager-calls.js";
import { MeshSession } from "../mesh-client/session.js";
import type { NameSource } from "./spec.js";

/** The names of one source, sorted, each once. Throws when the mesh cannot say (the caller stays silent). */
export async function meshNames(source: NameSource, target: MeshTarget): Promise<string[]> {
  const session = await MeshSession.open(target, false);
  try {
    return [...new Set(await namesFrom(session, source))].sort();
  } finally {
    await session.close();
  }
}

async function namesFrom(s: MeshSession, source: NameSource): Promise<string[]> {
  switch (source) {
    case "seats":
      // Everyone the roster knows (seats and people): what `send dm`, `stop --name` and the like take.
      return (await s.roster()).entries().map((e) => e.name);
    case "managers":
      return (await listManagers(s)).map((m) => m.instance);
    case "channels": {
      // What `cotal channels list` lists (configured channels, and channels with stored posts where
      // this credential may read stream state), and the ones members joined without a configuration.
      const [configured, posts, roster] = await Promise.all([
        s.configuredChannels().catch(() => []),
        s.mayReadStreams ? postCounts(s.jsm, s.target.space).catch(() => undefined) : undefined,
        s.roster().catch(() => undefined),
      ]);
      return [...configured.map((c) => c.name), ...(posts?.keys() ?? []), ...(roster?.entries().flatMap((e) => e.presence.channels) ?? [])];
    }
  }
}
