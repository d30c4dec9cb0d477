// One runtime's e2e file's mesh, as its user starts it: a fresh folder, the model double the
// runtime's CLI talks to, the user's own configuration of that CLI under the folder's home, agent
// files, and `cotal up -d` from their shell, in a space of the file's own; after the file's tests,
// `cotal down`, the double closed and the folder removed. A file says what differs (its double and
// the user's configuration of its CLI) and drives the mesh through `cotal`.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { findNatsServer } from "../../broker/index.js";
import { buildCli, cleanEnv, exitedOk, freePort, runCotal, type CliResult } from "./cli.js";
import { writeAgentFile, type AgentFile } from "./user-path.js";

export interface RuntimeMeshOptions<D> {
  /** Names the folder: `cotal-<name>-…` in the temp directory. */
  name: string;
  /**
   * The space, suffixed with this process's id. A space of its own: a connector's custody is per
   * host and principal, and other meshes on this host may seat the same names.
   */
  space: string;
  /** Start the model double the CLI talks to. */
  double: () => Promise<D>;
  /**
   * Write the user's own configuration of the CLI under `home`, naming `double`, and return what
   * their shell sets beside HOME (the key, the double's URL, the CLI's own switches).
   */
  shell: (home: string, double: D) => Record<string, string>;
  /** Agent files written to `.cotal/agents/<persona>.md` before `cotal up`. */
  agents?: Record<string, AgentFile>;
  /** How long a `cotal` call may take unless the call says otherwise. */
  timeoutMs: number;
}

/** The mesh a file drives; its fields are set once the file's `beforeAll` has run. */
export interface RuntimeMesh<D> {
  readonly project: string;
  /** The user's HOME, under the project folder. */
  readonly home: string;
  readonly model: D;
  readonly shell: NodeJS.ProcessEnv;
  /** `cotal <args>` in the project folder, from the user's shell. */
  readonly cotal: (args: string[], timeoutMs?: number) => Promise<CliResult>;
}

/** Start the mesh before the calling file's tests and take it down after them (registers `beforeAll` and `afterAll`). */
export function runtimeMesh<D extends { close(): Promise<void> }>(o: RuntimeMeshOptions<D>): RuntimeMesh<D> {
  let project: string | undefined;
  let model: D | undefined;
  let shell: NodeJS.ProcessEnv | undefined;
  const started = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`the ${what} of ${o.name}'s mesh is read before its beforeAll ran`);
    return v;
  };
  const cotal = (args: string[], timeoutMs = o.timeoutMs) => runCotal(args, { cwd: started(project, "project"), env: started(shell, "shell"), timeoutMs });
  beforeAll(async () => {
    await buildCli();
    project = await mkdtemp(join(tmpdir(), `cotal-${o.name}-`));
    model = await o.double();
    const home = join(project, "home");
    for (const [persona, a] of Object.entries(o.agents ?? {})) writeAgentFile(project, persona, a);
    shell = cleanEnv({ HOME: home, NATS_SERVER_BIN: findNatsServer(), ...o.shell(home, model), COTAL_SPACE: `${o.space}-${process.pid}` });
    exitedOk(await cotal(["up", "-d", "--port", String(await freePort())]));
  }, 180_000);
  afterAll(async () => {
    if (project && shell) await cotal(["down"]).catch(() => undefined);
    await model?.close();
    if (project) await rm(project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  });
  return {
    get project() {
      return started(project, "project");
    },
    get home() {
      return join(started(project, "project"), "home");
    },
    get model() {
      return started(model, "model double");
    },
    get shell() {
      return started(shell, "shell");
    },
    cotal,
  };
}
