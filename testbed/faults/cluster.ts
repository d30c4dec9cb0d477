// The lab's brokers: a three-node JetStream cluster (one node per host, streams at R3) and, on each
// leaf host, a nats-server without JetStream that joins the cluster as a leaf node. Configs are
// rendered here; `syncAlways` is the durability fix a switched-off run turns off.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Lab } from "./hosts.js";
import { HostProcess } from "./host-process.js";

export const CLIENT_PORT = 4222;
const ROUTE_PORT = 6222;
const MONITOR_PORT = 8222;
const LEAF_PORT = 7422;
/** Where a leaf host's own server listens (its manager and seats on loopback, the runner's channel member on its address). */
export const LEAF_LOCAL_PORT = 4300;

export interface BrokerOptions {
  /** nats-server binary (≥ 2.10). */
  bin: string;
  /** Run directory: configs, stores, logs. */
  dir: string;
  /** Cluster hosts (each runs one node). */
  nodes: readonly string[];
  leaves: readonly string[];
  /** `jetstream { sync_interval: always }` (default true); false leaves the server's 2-minute default. */
  syncAlways?: boolean;
  /** Each node's JetStream store directory (default `<dir>/store-<node>`). */
  storeDir?: (node: string) => string;
}

export interface Brokers {
  readonly nodes: ReadonlyMap<string, HostProcess>;
  readonly leaves: ReadonlyMap<string, HostProcess>;
  /** Client URLs of the cluster nodes, as the runner dials them. */
  readonly urls: readonly string[];
  /** A node's monitoring base URL. */
  monitorUrl(node: string): string;
}

export function startBrokers(lab: Lab, o: BrokerOptions): Brokers {
  const addr = (h: string) => lab.host(h).address;
  const routes = o.nodes.map((n) => `"nats-route://${addr(n)}:${ROUTE_PORT}"`).join(", ");
  const nodes = new Map<string, HostProcess>();
  for (const n of o.nodes) {
    const store = o.storeDir?.(n) ?? join(o.dir, `store-${n}`);
    mkdirSync(store, { recursive: true });
    const conf = join(o.dir, `${n}.conf`);
    writeFileSync(
      conf,
      [
        `server_name: "${n}"`,
        `listen: "${addr(n)}:${CLIENT_PORT}"`,
        `http: "${addr(n)}:${MONITOR_PORT}"`,
        `jetstream {`,
        `  store_dir: "${store}"`,
        // Larger than the node's small disk (disks.ts): the space's streams reserve their limits
        // against this figure, and the disk itself is what fills.
        `  max_file_store: 8G`,
        o.syncAlways === false ? "" : `  sync_interval: always`,
        `}`,
        `cluster {`,
        `  name: "${lab.id}"`,
        `  listen: "${addr(n)}:${ROUTE_PORT}"`,
        `  routes: [${routes}]`,
        `}`,
        `leafnodes { listen: "${addr(n)}:${LEAF_PORT}" }`,
        // The leaf hosts have no JetStream: the cluster's is the default domain for the global
        // account on both ends (as deploy/leaf/render.mjs does for a space's clients account).
        `default_js_domain: { $G: "" }`,
        "",
      ].join("\n"),
    );
    nodes.set(n, new HostProcess(lab, { label: `${n} nats-server`, host: n, argv: [o.bin, "-c", conf], logFile: join(o.dir, `${n}.log`) }));
  }
  const hubs = o.nodes.map((n) => `"nats-leaf://${addr(n)}:${LEAF_PORT}"`).join(", ");
  const leaves = new Map<string, HostProcess>();
  for (const l of o.leaves) {
    const conf = join(o.dir, `${l}.conf`);
    writeFileSync(
      conf,
      [
        `server_name: "${l}"`,
        `listen: "0.0.0.0:${LEAF_LOCAL_PORT}"`,
        `default_js_domain: { $G: "" }`,
        `leafnodes {`,
        `  reconnect: 1`,
        `  remotes: [{ urls: [${hubs}] }]`,
        `}`,
        "",
      ].join("\n"),
    );
    leaves.set(l, new HostProcess(lab, { label: `${l} nats-server (leaf)`, host: l, argv: [o.bin, "-c", conf], logFile: join(o.dir, `${l}.log`) }));
  }
  for (const p of [...nodes.values(), ...leaves.values()]) p.start();
  return {
    nodes,
    leaves,
    urls: o.nodes.map((n) => `nats://${addr(n)}:${CLIENT_PORT}`),
    monitorUrl: (n) => `http://${addr(n)}:${MONITOR_PORT}`,
  };
}
