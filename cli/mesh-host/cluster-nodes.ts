import { createServer } from "node:net";
import { join } from "node:path";
import type { MeshInfo, MeshRoot, ServiceLog } from "./mesh-root.js";

/**
 * The files of one nats-server of a mesh. A single-node mesh keeps the names it always had
 * (`nats-server.conf`, `run/nats-server.json`, the store dir itself); node K of a local cluster
 * (`cotal up --cluster N`) has its own config, pid file, log, store and resolver folder, so
 * the nodes share nothing on disk, as three hosts would.
 */
export interface NodeFiles {
  /** 1-based; 0 for the single server. */
  index: number;
  /** Pid file and log name. */
  name: ServiceLog;
  serverName: string;
  config: string;
  pidFile: string;
  log: string;
  storeDir: string;
  /** Where the operator-mode resolver keeps account JWTs (static meshes). */
  resolverDir: string;
}

/** The single server's files. */
export function singleNode(root: MeshRoot, space: string, storeDir: string): NodeFiles {
  return {
    index: 0,
    name: "nats-server",
    serverName: `cotal_${space}`,
    config: root.serverConfig,
    pidFile: root.pidFile("nats-server"),
    log: root.log("nats-server"),
    storeDir,
    resolverDir: root.resolverDir,
  };
}

/**
 * Node `index` (1-based) of a local cluster. Its store is `<store dir>/cluster/n<index>`: a
 * single node's store next to it is never opened by a cluster node (their metadata differ).
 */
export function clusterNode(root: MeshRoot, space: string, storeDir: string, index: number): NodeFiles {
  const name: ServiceLog = `nats-server-n${index}`;
  return {
    index,
    name,
    serverName: `cotal_${space}_n${index}`,
    config: join(root.dir, `${name}.conf`),
    pidFile: root.pidFile(name),
    log: root.log(name),
    storeDir: join(storeDir, "cluster", `n${index}`),
    resolverDir: join(root.resolverDir, `n${index}`),
  };
}

/** The nodes a mesh description names: its cluster's, else the single server. */
export function meshNodes(root: MeshRoot, info: Pick<MeshInfo, "space" | "storeDir" | "cluster">): NodeFiles[] {
  if (!info.cluster) return [singleNode(root, info.space, info.storeDir)];
  return info.cluster.nodes.map((_, i) => clusterNode(root, info.space, info.storeDir, i + 1));
}

/** A port the OS says is free on `host` now (it may be taken again before it is used). */
export function ephemeralPort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen({ host, port: 0, exclusive: true }, () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => (port > 0 ? resolve(port) : reject(new Error(`no free port on ${host}`))));
    });
  });
}
