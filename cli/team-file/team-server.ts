// The `space` and `server` keys of cotal.yaml as `cotal up`'s flags (docs/team-file.md): the file
// gives what the command line does not, and a mesh that already runs with other settings is
// refused at the file's line (a running nats-server cannot change its port, store or limits;
// `cotal down` first).
import { resolve } from "node:path";
import type { MeshInfo } from "../mesh-host/mesh-root.js";
import { DEFAULT_SYNC } from "../mesh-host/sync-interval.js";
import { TeamFileError, type TeamDoc, type TeamFileProblem } from "./team-file.js";

type Path = Array<string | number>;

/** The up flags the file sets (as the command line would give them), and the key each came from. */
export interface ServerFlags {
  flags: Record<string, string | boolean>;
  paths: Record<string, Path>;
}

/** `space` and `server.*` as `cotal up` flags (the limits keys are named as the flags are). */
export function teamServerFlags(doc: TeamDoc): ServerFlags {
  const flags: Record<string, string | boolean> = {};
  const paths: Record<string, Path> = {};
  const set = (flag: string, value: string | number | boolean | undefined, path: Path) => {
    if (value === undefined) return;
    flags[flag] = typeof value === "number" ? String(value) : value;
    paths[flag] = path;
  };
  const s = doc.spec.server;
  set("space", doc.spec.space, ["space"]);
  set("open", s?.open, ["server", "open"]);
  set("host", s?.host, ["server", "host"]);
  set("port", s?.port, ["server", "port"]);
  set("cluster", s?.cluster, ["server", "cluster"]);
  set("sync", s?.sync, ["server", "sync"]);
  set("storeDir", s?.storeDir !== undefined ? resolve(doc.dir, s.storeDir) : undefined, ["server", "storeDir"]);
  for (const [k, v] of Object.entries(s?.limits ?? {})) set(k, v, ["server", "limits", k]);
  return { flags, paths };
}

/** What `cotal up` parsed from the merged flags (the keys compared with a running mesh). */
export interface ParsedServer {
  space?: string | undefined;
  open?: boolean | undefined;
  host?: string | undefined;
  port?: number | undefined;
  cluster?: number | undefined;
  sync?: string | undefined;
  storeDir?: string | undefined;
  chatBytes?: number | undefined;
  dmBytes?: number | undefined;
  taskBytes?: number | undefined;
  seatLogBytes?: number | undefined;
  artifactBytes?: number | undefined;
  eventsBytes?: number | undefined;
  chatPerSender?: number | undefined;
  chatMaxAge?: number | undefined;
  dmBacklog?: number | undefined;
}

/** mesh.json's storage limit of each limits key. */
const LIMIT_KEYS = {
  chatBytes: "chatBytes",
  dmBytes: "dmBytes",
  taskBytes: "taskBytes",
  seatLogBytes: "seatsBytes",
  artifactBytes: "artifactsBytes",
  eventsBytes: "eventsBytes",
  chatPerSender: "chatPerSender",
  chatMaxAge: "chatMaxAgeMs",
  dmBacklog: "backlogPerSender",
} as const;

/**
 * Refuse, at the file's lines, settings the file gives (and the command line does not override)
 * that a running mesh does not have. `open`, and the account's maxDisk/maxMemory, are left to
 * `cotal up`'s own check, which names them.
 */
export function refuseServerDrift(doc: TeamDoc, server: ServerFlags, given: ReadonlySet<string>, parsed: ParsedServer, info: MeshInfo): void {
  const problems: TeamFileProblem[] = [];
  const check = (flag: string, want: unknown, has: unknown, what: string) => {
    const path = server.paths[flag];
    if (!path || given.has(flag) || want === undefined || JSON.stringify(want) === JSON.stringify(has)) return;
    problems.push(
      doc.at(
        path,
        `the running mesh has ${what} ${String(has ?? "the default")}; it changes only when the mesh starts again (\`cotal down\`, then \`cotal up -f\`)`,
      ),
    );
  };
  check("space", parsed.space, info.space, "space");
  check("host", parsed.host, info.host, "host");
  check("port", parsed.port, info.port, "port");
  check("cluster", parsed.cluster, info.cluster?.nodes.length ?? 1, "cluster size");
  check("sync", parsed.sync, info.sync ?? DEFAULT_SYNC, "sync");
  check("storeDir", parsed.storeDir, info.storeDir, "store");
  for (const [flag, key] of Object.entries(LIMIT_KEYS)) check(flag, parsed[flag as keyof ParsedServer], info.limits?.[key], flag);
  if (problems.length) throw new TeamFileError(doc.file, problems);
}
