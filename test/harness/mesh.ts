import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
// The product's authenticator: it signs the nonce with node:crypto, not nats.js's tweetnacl in JavaScript
// (4 s of a worker's CPU over test/mesh, test/attacks and test/connector).
import { credsBytesAuthenticator } from "../../broker/internal.js";
import {
  ChannelRegistry,
  Endpoint,
  MeshService,
  jetStreamConnection,
  JS_OPTIONS,
  pushSpaceAccounts,
  requestCredential,
  serviceCreds,
  writeSecret,
  type AuthStore,
  type EndpointOptions,
  type MeshServiceOptions,
  type MintRequest,
  type StorageLimits,
} from "../../broker/index.js";
import { Kvm } from "@nats-io/kv";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { names, type ChannelConfig } from "../../schemas/index.js";
import { authStoreOf, startStaticServer } from "./mesh-mode.js";
import type { NatsServer } from "../../testbed/nats-server.js";

/**
 * Stream sizes of test spaces. JetStream reserves each stream's byte limit against the server's
 * storage, so the production defaults (about 1.9 GB a space) would let only a few spaces share
 * one test server. A test that needs more passes `limits`.
 */
export const TEST_STORAGE: Partial<StorageLimits> = {
  chatBytes: 64 * 1024 ** 2,
  dmBytes: 32 * 1024 ** 2,
  taskBytes: 16 * 1024 ** 2,
  seatsBytes: 16 * 1024 ** 2,
  eventsBytes: 16 * 1024 ** 2,
  artifactsBytes: 32 * 1024 ** 2,
};

/** Channels agents are minted for when the suite runs in static mode. */
export const STATIC_TEST_CHANNELS = ["general", "builds", "lobby", "notes", "empty"];

/**
 * A provisioned space on a harness server with its mesh service running in-process, and a
 * factory for endpoints that are all closed by `close()`. On a static-mode server (see
 * mesh-mode.ts) the service and every endpoint use real minted credentials.
 */
export class TestMesh {
  private readonly endpoints: Endpoint[] = [];
  private readonly conns: NatsConnection[] = [];
  /** Mesh services started after the first (a restart): stopped by close(). */
  private readonly laterServices: MeshService[] = [];
  private constructor(
    readonly server: NatsServer,
    readonly space: string,
    readonly serviceConnection: NatsConnection,
    readonly service: MeshService,
    private readonly auth?: { store: AuthStore; dir: string; cliCreds: string },
    /** Set when this mesh started its own server (and so removes it on close). */
    private ownsServer = false,
  ) {}

  /** A static-auth mesh on its own operator-mode server (for security tests). */
  static async startStatic(space = "sec", opts: MeshServiceOptions = {}): Promise<TestMesh> {
    const server = await startStaticServer();
    try {
      const mesh = await TestMesh.start(server, space, opts);
      mesh.ownsServer = true;
      return mesh;
    } catch (err) {
      await server.cleanup();
      throw err;
    }
  }

  /** The auth store of a static mesh. */
  get store(): AuthStore {
    return this.requireAuth().store;
  }

  /** The operator-side CLI credential of a static mesh. */
  get cliCreds(): string {
    return this.requireAuth().cliCreds;
  }

  private requireAuth(): NonNullable<typeof this.auth> {
    if (!this.auth) throw new Error("this TestMesh runs open: start it on a static-mode server");
    return this.auth;
  }

  /**
   * A plain connection with a credential (or none), never reconnecting. `dialTimeoutMs` bounds
   * the handshake (nats.js waits 20 s by default): see LEAF_PROBE_DIAL_MS in test/broker/auth/leaf-scope.test.ts.
   */
  async connection(creds?: string, inboxPrefix?: string, dialTimeoutMs?: number): Promise<NatsConnection> {
    const nc = await connect({
      servers: this.server.url,
      ...(creds ? { authenticator: credsBytesAuthenticator(readFileSync(creds)) } : {}),
      ...(inboxPrefix ? { inboxPrefix } : {}),
      ...(dialTimeoutMs ? { timeout: dialTimeoutMs } : {}),
      maxReconnectAttempts: 0,
      // A cut connection tries once more, and a revoked one is refused then: 100 ms, not nats.js's 2 s.
      reconnectTimeWait: 100,
    });
    this.conns.push(nc);
    return nc;
  }

  /** Mint a credential through the mesh service, as `cotal mint` does; returns the .creds path. */
  async mint(req: MintRequest): Promise<string> {
    const nc = await this.connection(this.cliCreds);
    const { creds } = await requestCredential(nc, this.space, req);
    const file = join(this.requireAuth().dir, `${req.name}-${this.minted++}.creds`);
    writeSecret(file, creds);
    return file;
  }
  private minted = 0;

  static async start(server: NatsServer, space = "test", opts: MeshServiceOptions = {}): Promise<TestMesh> {
    const store = authStoreOf(server);
    let auth: { store: AuthStore; dir: string; cliCreds: string } | undefined;
    let meshCreds: string | undefined;
    if (store) {
      const { created } = await store.ensureSpace(space);
      if (created) await pushSpaceAccounts(store, server.url, space);
      const dir = mkdtempSync(join(tmpdir(), "cotal-creds-"));
      meshCreds = join(dir, "mesh.creds");
      const cliCreds = join(dir, "cli.creds");
      writeSecret(meshCreds, await serviceCreds(store, space, "mesh"));
      writeSecret(cliCreds, await serviceCreds(store, space, "cli"));
      auth = { store, dir, cliCreds };
    }
    const nc = await connect({
      servers: server.url,
      name: "mesh-service",
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      ...(meshCreds ? { authenticator: credsBytesAuthenticator(readFileSync(meshCreds)) } : {}),
    });
    const limits = { ...TEST_STORAGE, ...opts.limits };
    const service = await MeshService.start(nc, space, { ...opts, limits, ...(auth ? { auth: { store: auth.store, server: server.url } } : {}) });
    return new TestMesh(server, space, nc, service, auth);
  }

  /**
   * Start the space's mesh service again on the service connection (stop `service` first to
   * restart it), with the mesh's credentials in static mode; close() stops it.
   */
  async startService(opts: MeshServiceOptions = {}): Promise<MeshService> {
    const limits = { ...TEST_STORAGE, ...opts.limits };
    const auth = this.auth ? { auth: { store: this.auth.store, server: this.server.url } } : {};
    const service = await MeshService.start(this.serviceConnection, this.space, { ...opts, limits, ...auth });
    this.laterServices.push(service);
    return service;
  }

  /**
   * JetStream management as the data account sees it (the mesh service's own connection):
   * for assertions on streams, consumers and stored counts that no client credential may make.
   */
  async dataJsm(): Promise<JetStreamManager> {
    return jetstreamManager(this.serviceConnection);
  }

  /** A connection that may do anything a test needs to set up (the CLI credential when static). */
  async rawConnection(): Promise<NatsConnection> {
    const nc = await connect({
      servers: this.server.url,
      ...(this.auth ? { authenticator: credsBytesAuthenticator(readFileSync(this.auth.cliCreds)) } : {}),
    });
    this.conns.push(nc);
    return nc;
  }

  /** Configure a channel as an operator would (`cotal channels set`). */
  async setChannel(channel: string, patch: Partial<ChannelConfig>): Promise<void> {
    const nc = await this.rawConnection();
    const kv = await new Kvm(jetstream(jetStreamConnection(nc, this.auth?.cliCreds), JS_OPTIONS)).open(names.channelsBucket(this.space), { bindOnly: true });
    await new ChannelRegistry(kv).set(channel, patch);
  }

  /**
   * Connect an endpoint (not joined). In static mode, with `opts.creds`, or else a freshly
   * minted agent credential for the suite's channels.
   */
  async endpoint(name: string, opts: Partial<EndpointOptions> = {}): Promise<Endpoint> {
    let creds = opts.creds;
    if (this.auth && !creds) {
      creds = await this.mint({
        name,
        profile: "agent",
        allowSubscribe: STATIC_TEST_CHANNELS,
        allowPublish: STATIC_TEST_CHANNELS,
        ...(opts.role ? { role: opts.role } : {}),
      });
    }
    const ep = await Endpoint.connect({ server: this.server.url, space: this.space, name, ...(creds ? { creds } : {}), ...opts });
    this.endpoints.push(ep);
    return ep;
  }

  /** Connect and join an endpoint. */
  async joined(name: string, opts: Partial<EndpointOptions> = {}): Promise<Endpoint> {
    const ep = await this.endpoint(name, opts);
    await ep.join();
    return ep;
  }

  async close(): Promise<void> {
    await Promise.all(this.endpoints.map((e) => e.close().catch(() => undefined)));
    await Promise.all(this.conns.map((c) => c.close().catch(() => undefined)));
    await this.service.stop().catch(() => undefined);
    for (const s of this.laterServices) await s.stop().catch(() => undefined);
    await this.serviceConnection.close().catch(() => undefined);
    if (this.auth) rmSync(this.auth.dir, { recursive: true, force: true });
    if (this.ownsServer) await this.server.cleanup();
  }
}
