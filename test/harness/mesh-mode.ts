import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
// The product's authenticator: it signs the nonce with node:crypto, not nats.js's tweetnacl in JavaScript
// (4 s of a worker's CPU over test/mesh, test/attacks and test/connector).
import { credsBytesAuthenticator } from "../../broker/internal.js";
import { AuthStore, pushSpaceAccounts, serviceCreds, type AuthStoreOptions } from "../../broker/index.js";
import { NatsServer, type NatsServerOptions } from "../../testbed/nats-server.js";

/**
 * The security mode the mesh suites run in: `open` by default, `static` when
 * COTAL_TEST_MODE=static (the vitest project `mesh-static` runs the whole Mesh core suite so).
 */
export type MeshMode = "open" | "static";
export function meshMode(env: NodeJS.ProcessEnv = process.env): MeshMode {
  return env.COTAL_TEST_MODE === "static" ? "static" : "open";
}

const stores = new WeakMap<NatsServer, AuthStore>();

/** The auth store a static-mode server was started with, if any. */
export function authStoreOf(server: NatsServer): AuthStore | undefined {
  return stores.get(server);
}

/** Start a server for the current mode: in static mode, in operator mode with a fresh store. */
export async function startModeServer(opts: NatsServerOptions = {}): Promise<NatsServer> {
  return meshMode() === "open" ? NatsServer.start(opts) : startStaticServer(opts);
}

/** Start a server in operator mode with a fresh auth store (removed by the server's cleanup). */
export async function startStaticServer(opts: NatsServerOptions = {}, storeOpts: AuthStoreOptions = {}): Promise<NatsServer> {
  const dir = mkdtempSync(join(tmpdir(), "cotal-auth-"));
  const store = await AuthStore.open(join(dir, "auth"), storeOpts); // the resolver goes beside it, in dir
  const server = await NatsServer.start({ ...opts, config: `${opts.config ?? ""}\n${await store.serverConfig()}` });
  stores.set(server, store);
  const cleanup = server.cleanup.bind(server);
  server.cleanup = async () => {
    await cleanup();
    rmSync(dir, { recursive: true, force: true });
  };
  return server;
}

/**
 * A connection to `server` for `space` with service rights: plain on open servers; on
 * static-mode servers, with a freshly minted `mesh` profile credential (the space's account is
 * created and pushed to the server first when new).
 */
export async function serviceConnection(server: NatsServer, space: string): Promise<NatsConnection> {
  const store = authStoreOf(server);
  if (!store) return connect({ servers: server.url });
  const { created } = await store.ensureSpace(space);
  if (created) await pushSpaceAccounts(store, server.url, space);
  return connect({ servers: server.url, authenticator: credsBytesAuthenticator(await serviceCreds(store, space, "mesh")) });
}
