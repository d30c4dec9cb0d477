// What durability costs: the same Cotal DM throughput and fan-out measured on two private
// servers in one run, one syncing before every acknowledgement (`sync_interval: always`, what
// `cotal up` renders) and one on nats-server's own 2-minute timer (`cotal up --sync 2m`).
// Each side also runs the raw client, so the ratio to raw is shown under both settings.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { MeshService } from "../broker/index.js";
import { NatsServer } from "../testbed/nats-server.js";
import { Scope } from "./context.js";
import { dmThroughput, type DmThroughputOptions, type DmThroughputResult } from "./dm-throughput.js";
import { fanout, type FanoutOptions, type FanoutResult } from "./fanout.js";

export interface SyncCostOptions {
  throughput: DmThroughputOptions;
  fanout: FanoutOptions;
}

export interface SyncSide {
  sync: string;
  throughput: DmThroughputResult;
  fanout: FanoutResult;
}

export interface SyncCostResult {
  always: SyncSide;
  timer: SyncSide;
}

/** The timer setting compared against: nats-server's own default. */
export const TIMER_SYNC = "2m";

async function measure(space: string, sync: string, opts: SyncCostOptions): Promise<SyncSide> {
  const server = await NatsServer.start({ jetstream: { maxMemoryStore: "256MB", maxFileStore: "16GB", syncInterval: sync } });
  let nc: NatsConnection | undefined;
  let service: MeshService | undefined;
  const scope = new Scope(server.url, space, server.pid ? [server.pid] : []);
  try {
    nc = await connect({ servers: server.url, name: `bench-sync-${sync}`, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    service = await MeshService.start(nc, space);
    const throughput = await dmThroughput(scope, opts.throughput);
    const fan = await fanout(scope, opts.fanout);
    return { sync, throughput, fanout: fan };
  } finally {
    await scope.close();
    await service?.stop().catch(() => undefined);
    await nc?.close().catch(() => undefined);
    await server.cleanup();
  }
}

/** Measure `always` first, then the 2-minute timer, each on a fresh server and store. */
export async function syncCost(space: string, opts: SyncCostOptions): Promise<SyncCostResult> {
  const always = await measure(space, "always", opts);
  const timer = await measure(space, TIMER_SYNC, opts);
  return { always, timer };
}
