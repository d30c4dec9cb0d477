// An in-process manager whose Claude is the real CLI (node_modules/.bin/claude) against a model
// double: its seats and runs talk to the double, with an isolated HOME per manager.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetStreamConnection, logger } from "../../broker/index.js";
import { ManagerService, type ManagerOptions } from "../../manager/index.js";
import type { RuntimeHost } from "../../runtime/index.js";
import { claudeBin, claudeEnv, projectRoot } from "./claude-runner.js";
import type { TestMesh } from "./mesh.js";

/** A Claude host as `cotal manager` builds it (cli/commands/manager.ts): `seedConfig: false` starts seats with an empty config dir. */
export interface ClaudeHostOptions {
  executable: string;
  connectorEntry: string;
  pluginDir: string;
  parentEnv: RuntimeHost["parentEnv"];
  authMode?: string;
  screenTimeoutMs?: number;
  seedConfig?: boolean;
}

/** The Claude entry of a manager's `runtimes`. */
export function claudeHost(o: ClaudeHostOptions): { claude: RuntimeHost } {
  const { pluginDir, seedConfig, ...host } = o;
  return { claude: { ...host, settings: { pluginDir, ...(seedConfig === undefined ? {} : { seedConfig }) } } };
}

/** What the manager's Claude runs: the real CLI, the built connector and plugin tree, the double's URL (a HOME of its own). */
export function claudeOptions(baseUrl: string, home: string, over: Partial<ClaudeHostOptions> = {}): { claude: RuntimeHost } {
  mkdirSync(home, { recursive: true });
  return claudeHost({
    executable: claudeBin(),
    connectorEntry: join(projectRoot, "plugin", "bin", "connector.mjs"),
    pluginDir: join(projectRoot, "plugin"),
    parentEnv: claudeEnv({ baseUrl, home }),
    ...over,
  });
}

/**
 * Start a ManagerService on `mesh` (static: it mints with the operator's credential), its state in
 * `<root>/<instance>` and its Claude's HOME in `<root>/<instance>-home`. Echo seats are not what
 * these tests run: their command exits at once.
 */
export async function startClaudeManager(
  mesh: TestMesh,
  nc: NatsConnection,
  o: { root: string; instance: string; baseUrl: string; claude?: Partial<ClaudeHostOptions>; over?: Partial<ManagerOptions> },
): Promise<{ m: ManagerService; stateDir: string }> {
  const stateDir = join(o.root, o.instance);
  mkdirSync(stateDir, { recursive: true });
  const m = await ManagerService.start(nc, {
    space: mesh.space,
    server: mesh.server.url,
    stateDir,
    instance: o.instance,
    mints: true,
    jsConnection: jetStreamConnection(nc, mesh.cliCreds),
    agentCommand: () => [process.execPath, "-e", "process.exit(1)"],
    seatEnv: (extra) => extra,
    runtimes: claudeOptions(o.baseUrl, join(o.root, `${o.instance}-home`), o.claude),
    log: logger("test-manager"),
    ...o.over,
  });
  return { m, stateDir };
}
