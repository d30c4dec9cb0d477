// `cotal doctor`: which runtimes this user's own configuration needs, and where it names each — an
// agent file in .cotal/agents, a seat of cotal.yaml, `doctor --runtime` — so a runtime nobody
// named is a warning and one that is needed is a failure when it cannot run. With none named, the
// default runtime (Claude) is needed: it is what a seat runs when nothing says otherwise.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { parseAgentFile } from "../../runtime/index.js";
import { DEFAULT_RUNTIME, RUNTIMES } from "../../manager/index.js";

/** Each needed runtime's name, with what names it (`.cotal/agents/r.md`, `cotal.yaml seats.e1`, `--runtime`, or the default). */
export type NeededRuntimes = Map<string, string[]>;

/** The runtimes the agent files and team file of `project`, and `flags`, name (the default runtime when none does). */
export function neededRuntimes(project: string, flags: readonly string[]): NeededRuntimes {
  const needed: NeededRuntimes = new Map();
  const add = (runtime: string, by: string) => {
    if (!RUNTIMES.some((r) => r.name === runtime)) return; // echo, or a name the manager would refuse anyway
    needed.set(runtime, [...(needed.get(runtime) ?? []), by]);
  };
  for (const r of flags) add(r, "--runtime");
  const agents = join(project, ".cotal", "agents");
  for (const f of existsSync(agents)
    ? readdirSync(agents)
        .filter((n) => n.endsWith(".md"))
        .sort()
    : []) {
    try {
      add(parseAgentFile(readFileSync(join(agents, f), "utf8"), f).frontmatter.runtime ?? DEFAULT_RUNTIME.name, `.cotal/agents/${f}`);
    } catch {
      // an agent file the manager would refuse names nothing it could run
    }
  }
  for (const [key, agent] of teamFileSeats(join(project, "cotal.yaml"))) add(agent, `cotal.yaml seats.${key}`);
  if (needed.size === 0) needed.set(DEFAULT_RUNTIME.name, ["the default runtime (no agent file, cotal.yaml seat or --runtime names one)"]);
  return needed;
}

/** The agent each seat of a team file runs (default claude); a file that cannot be read names none. */
function teamFileSeats(file: string): Array<[string, string]> {
  let doc: unknown;
  try {
    doc = parse(readFileSync(file, "utf8"));
  } catch {
    return [];
  }
  const seats = doc && typeof doc === "object" ? (doc as { seats?: unknown }).seats : undefined;
  if (!seats || typeof seats !== "object") return [];
  return Object.entries(seats as Record<string, unknown>).map(([key, seat]) => {
    const agent = seat && typeof seat === "object" ? (seat as { agent?: unknown }).agent : undefined;
    return [key, typeof agent === "string" ? agent : DEFAULT_RUNTIME.name];
  });
}
