import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { z } from "zod";
import { StorageLimitsInput } from "../../broker/index.js";
import { describeIssues, SpaceName } from "../../schemas/index.js";
import { CommandFailedError } from "../terminal/errors.js";
import { LeafListener } from "./leaf-listener.js";
import { MeshMode } from "./mode.js";
import { SyncInterval } from "./sync-interval.js";

/** The background processes of a mesh, by the names of their log and pid files. */
export type ServiceLog = "nats-server" | `nats-server-n${number}` | "mesh-service" | "manager" | "web";

/** `cotal up --cluster N`: the nodes' ports, fixed at the first start so restarts keep the routes. */
export const ClusterInfo = z.object({
  name: z.string().min(1),
  nodes: z.array(z.object({ port: z.number().int().min(1).max(65535), routePort: z.number().int().min(1).max(65535) })).min(2),
  /**
   * Routes between the nodes authenticate with the secret in `.cotal/cluster-route.secret`. Unset
   * in clusters started before routes were authenticated: those keep open routes until re-created.
   */
  routeAuth: z.boolean().optional(),
});
export type ClusterInfo = z.infer<typeof ClusterInfo>;

/** The folder that holds a mesh's state, found by walking up from the working directory. */
export const ROOT_DIR = ".cotal";

/** `.cotal/mesh.json`: where the mesh is and how it was started. */
export const MeshInfo = z.object({
  /** Client URL, `nats://host:port`; on a cluster every node's, comma-separated. */
  server: z.string().min(1),
  space: SpaceName,
  mode: MeshMode,
  host: z.string().min(1),
  port: z.number().int().min(1).max(65535),
  /** Absolute JetStream store directory. */
  storeDir: z.string().min(1),
  /** When the current nats-server was started, ISO 8601. */
  startedAt: z.iso.datetime({ offset: true }),
  /** Storage limits set with `cotal up --…-bytes/--dm-backlog` (unset: the defaults). */
  limits: StorageLimitsInput.optional(),
  /** Set when the mesh runs as a local cluster (`cotal up --cluster N`). */
  cluster: ClusterInfo.optional(),
  /** The leaf-node listener for remote hosts (`cotal up --leaf-port`). */
  leaf: LeafListener.optional(),
  /** `cotal up --sync`: when JetStream syncs to disk (unset in meshes from before it: `always`, cli/mesh-host/sync-interval.ts). */
  sync: SyncInterval.optional(),
});
export type MeshInfo = z.infer<typeof MeshInfo>;

/** The files of one mesh root. Nothing is created until `ensure()`. */
export class MeshRoot {
  /** The `.cotal` folder itself. */
  readonly dir: string;
  constructor(/** The project folder that contains `.cotal/`. */ readonly project: string) {
    this.dir = join(project, ROOT_DIR);
  }

  get meshJson(): string {
    return join(this.dir, "mesh.json");
  }
  get serverConfig(): string {
    return join(this.dir, "nats-server.conf");
  }
  get logsDir(): string {
    return join(this.dir, "logs");
  }
  get runDir(): string {
    return join(this.dir, "run");
  }
  get defaultStoreDir(): string {
    return join(this.dir, "jetstream");
  }
  log(name: ServiceLog): string {
    return join(this.logsDir, `${name}.log`);
  }
  pidFile(name: ServiceLog): string {
    return join(this.runDir, `${name}.json`);
  }
  /** Secrets of a static mesh (0700): operator, accounts, signing keys, service credentials. */
  get authDir(): string {
    return join(this.dir, "auth");
  }
  /** Public account JWTs the server's resolver keeps. */
  get resolverDir(): string {
    return join(this.dir, "resolver");
  }
  /** The password a cluster's nodes present to each other's route port (0600). */
  get routeSecretFile(): string {
    return join(this.dir, "cluster-route.secret");
  }
  /** A service credential of a space (`cli`: the operator's own, used by commands on this host). */
  credsFile(space: string, who: "cli" | "mesh"): string {
    return join(this.authDir, "creds", space, `${who}.creds`);
  }
  /** A credential `cotal mint` (or `cotal up`, for the person here) wrote for a name: `.cotal/creds/<name>.creds`. */
  mintedCredsFile(name: string): string {
    return join(this.dir, "creds", `${name}.creds`);
  }
  /** Who the person at the mesh host is (cli/identity/person.ts). */
  get personFile(): string {
    return join(this.dir, "person.json");
  }
  get lockFile(): string {
    return join(this.runDir, "up.lock");
  }

  /** Create the folders (and a .gitignore, so mesh state never lands in a repository). */
  ensure(): void {
    for (const d of [this.dir, this.logsDir, this.runDir]) mkdirSync(d, { recursive: true, mode: 0o700 });
    const ignore = join(this.dir, ".gitignore");
    if (!existsSync(ignore)) writeFileSync(ignore, "# Cotal mesh state (server data, logs, pids): never commit it.\n*\n");
  }

  /** mesh.json, or undefined when the mesh was never started here. */
  readInfo(): MeshInfo | undefined {
    if (!existsSync(this.meshJson)) return undefined;
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(this.meshJson, "utf8"));
    } catch (cause) {
      throw new CommandFailedError(`${this.meshJson} is not valid JSON.`, { remedy: "Delete it and run `cotal up` again.", cause });
    }
    const r = MeshInfo.safeParse(json);
    if (!r.success) {
      throw new CommandFailedError(`${this.meshJson} is not a mesh description: ${describeIssues(r.error).join("; ")}.`, {
        remedy: "Delete it and run `cotal up` again.",
      });
    }
    return r.data;
  }

  /** Write mesh.json atomically. */
  writeInfo(info: MeshInfo): void {
    const tmp = `${this.meshJson}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(MeshInfo.parse(info), null, 2) + "\n");
    renameSync(tmp, this.meshJson);
  }
}

/** The nearest folder at or above `from` whose `.cotal/` holds a mesh.json. */
export function findMeshRoot(from: string = process.cwd()): MeshRoot | undefined {
  let dir = resolve(from);
  for (;;) {
    const root = new MeshRoot(dir);
    if (existsSync(root.meshJson)) return root;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}
