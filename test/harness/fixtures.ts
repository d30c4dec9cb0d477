// Vitest fixtures for real-broker tests: `nats` (one server) and `natsCluster` (three nodes),
// each torn down after its test; a failed test prints the servers' last log lines to stderr.
import { test as base, expect } from "vitest";
import type { TestContext } from "vitest";
import { cluster, type ClusterOptions, type NatsCluster } from "./cluster.js";
import { NatsServer, type NatsServerOptions } from "../../testbed/nats-server.js";

export { expect };
export { cluster, type ClusterOptions, type NatsCluster } from "./cluster.js";
export {
  NatsServer,
  NatsServerNotFoundError,
  NatsServerStartError,
  NatsServerTooOldError,
  findNatsServer,
  type NatsServerOptions,
} from "../../testbed/nats-server.js";
export { until, Latch } from "../../testbed/until.js";
import { startModeServer } from "./mesh-mode.js";

/** How test brokers are provided; chosen by `COTAL_TEST_BROKER`, default `process`. */
export const BrokerBackend = { process: "process", container: "container" } as const;
export type BrokerBackend = (typeof BrokerBackend)[keyof typeof BrokerBackend];

/** The selected broker backend cannot run here; the message says what it needs. */
export class BrokerBackendUnavailableError extends Error {
  override readonly name = "BrokerBackendUnavailableError";
}

/**
 * Resolve `COTAL_TEST_BROKER`. Only the process backend (a local nats-server child process)
 * is built in; `container` throws a BrokerBackendUnavailableError explaining its needs.
 */
export function brokerBackend(env: NodeJS.ProcessEnv = process.env): typeof BrokerBackend.process {
  const chosen = env.COTAL_TEST_BROKER?.trim() || BrokerBackend.process;
  if (chosen === BrokerBackend.process) return BrokerBackend.process;
  if (chosen === BrokerBackend.container) {
    throw new BrokerBackendUnavailableError(
      "COTAL_TEST_BROKER=container selects the Testcontainers backend, which requires a running Docker daemon " +
        "and the `testcontainers` npm package; Cotal does not depend on it and this tree has no container backend. " +
        "Unset COTAL_TEST_BROKER to use the default process backend, which needs only a nats-server binary " +
        "(`apt-get install nats-server`, or set NATS_SERVER_BIN).",
    );
  }
  throw new BrokerBackendUnavailableError(
    `COTAL_TEST_BROKER=${chosen} is not a broker backend; use "${BrokerBackend.process}" (default) or "${BrokerBackend.container}".`,
  );
}

export interface NatsFixtures {
  /** Options for the `nats` fixture; override per suite with `test.override({ natsOptions })`. */
  natsOptions: NatsServerOptions;
  /** Options for the `natsCluster` fixture, plus its size (default 3). */
  clusterOptions: ClusterOptions & { size?: number };
  /** A started nats-server, cleaned up (stopped, temp dirs removed) after the test. */
  nats: NatsServer;
  /** A formed JetStream cluster with a meta leader, cleaned up after the test. */
  natsCluster: NatsCluster;
}

export const test = base.extend<NatsFixtures>({
  natsOptions: {},
  clusterOptions: {},
  nats: async ({ natsOptions, onTestFailed }, use) => {
    brokerBackend();
    // In static mode (COTAL_TEST_MODE=static) the server runs in operator mode.
    const server = await startModeServer(natsOptions);
    onTestFailed(({ task }) => printLogs(`nats-server ${server.url}`, task.name, server.logs()));
    try {
      await use(server);
    } finally {
      await server.cleanup();
    }
  },
  natsCluster: async ({ clusterOptions, onTestFailed }, use) => {
    brokerBackend();
    const { size, ...opts } = clusterOptions;
    const c = await cluster(size ?? 3, opts);
    onTestFailed(({ task }) => printLogs(`nats cluster ${c.name}`, task.name, c.logs()));
    try {
      await use(c);
    } finally {
      await c.cleanup();
    }
  },
});

/** Start a server, run `fn`, always clean up; print the server's logs if `fn` throws. */
export async function withServer<T>(opts: NatsServerOptions, fn: (server: NatsServer) => Promise<T>): Promise<T> {
  brokerBackend();
  const server = await NatsServer.start(opts);
  try {
    return await fn(server);
  } catch (err) {
    printLogs(`nats-server ${server.url}`, "withServer", server.logs());
    throw err;
  } finally {
    await server.cleanup();
  }
}

/** Form a cluster, run `fn`, always clean up; print every node's logs if `fn` throws. */
export async function withCluster<T>(n: number, opts: ClusterOptions, fn: (c: NatsCluster) => Promise<T>): Promise<T> {
  brokerBackend();
  const c = await cluster(n, opts);
  try {
    return await fn(c);
  } catch (err) {
    printLogs(`nats cluster ${c.name}`, "withCluster", c.logs());
    throw err;
  } finally {
    await c.cleanup();
  }
}

/** Register a dump of `logs()` to stderr for when the current test fails. */
export function dumpLogsOnFailure(ctx: Pick<TestContext, "onTestFailed">, label: string, logs: () => string): void {
  ctx.onTestFailed(({ task }) => printLogs(label, task.name, logs()));
}

function printLogs(label: string, testName: string, logs: string): void {
  process.stderr.write(`\n----- ${label} log (test failed: ${testName}) -----\n${logs}\n----- end of ${label} log -----\n`);
}
