import type { NatsConnection } from "@nats-io/transport-node";
import { isAtLeast, parseNatsServerVersion } from "./nats-binary.js";
import { clusterReplicas } from "./provision.js";

/**
 * From this minor on, a cluster node whose store cannot write (its disk is full) switches
 * JetStream off, so its stream and consumer leaders move to the nodes that can still write. Before
 * it, the node keeps leading its consumers, and each steps past every message the node failed to
 * store: messages the cluster acknowledged are never handed over (docs/reliability.md, the fault
 * suite's disk-full).
 */
export const STORE_WRITE_ERRORS_HANDLED = { major: 2, minor: 14 } as const;

/** Whether a server (its `--version` or INFO version) switches JetStream off on a store write error. */
export function handlesStoreWriteErrors(version: string): boolean {
  const v = parseNatsServerVersion(version.startsWith("v") ? version : `v${version}`);
  return v !== undefined && isAtLeast(v, STORE_WRITE_ERRORS_HANDLED);
}

/** What to do about it: said by `cotal doctor` and logged by the mesh service. */
export const FULL_DISK_REMEDY =
  `Run nats-server ${STORE_WRITE_ERRORS_HANDLED.major}.${STORE_WRITE_ERRORS_HANDLED.minor} or newer on every node ` +
  "(Debian sid's 2.15: `COTAL_NATS_SUITE=sid bash scripts/install-nats-server.sh DIR`, then NATS_SERVER_BIN=DIR/nats-server), " +
  "and keep each node's store from filling (`cotal doctor`'s disk check; `cotal up --max-disk` caps what the space stores).";

/**
 * The risk, in a sentence, when `nc` is connected to a replicated cluster whose node runs a server
 * before STORE_WRITE_ERRORS_HANDLED; undefined on a single server (a full disk refuses its writes:
 * nothing is acknowledged that it did not store) or a server that handles write errors.
 */
export function fullDiskRisk(nc: NatsConnection): string | undefined {
  const version = nc.info?.version;
  if (!version || clusterReplicas(nc) < 3 || handlesStoreWriteErrors(version)) return undefined;
  const node = nc.info?.server_name ? `node ${nc.info.server_name}` : "node";
  return (
    `this cluster's ${node} runs nats-server ${version}: before ` +
    `${STORE_WRITE_ERRORS_HANDLED.major}.${STORE_WRITE_ERRORS_HANDLED.minor}, a node whose disk fills keeps serving its ` +
    "consumers and they skip what it could not store, so messages the cluster acknowledged can be lost"
  );
}
