import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import {
  AuthStore,
  Endpoint,
  MeshService,
  mintCreds,
  requestCredential,
  SERVICE_PRINCIPALS,
  writeSecret,
  type EndpointOptions,
  type MintRequest,
} from "../../broker/index.js";
import { NatsServer } from "./nats-server.js";

/**
 * A static-auth mesh for tests: operator mode nats-server with a full resolver, the mesh
 * service running in-process with its own service credential, and helpers to mint real
 * credentials through it.
 */
export class AuthTestMesh {
  private readonly endpoints: Endpoint[] = [];
  private readonly conns: NatsConnection[] = [];
  private constructor(
    readonly server: NatsServer,
    readonly space: string,
    readonly store: AuthStore,
    readonly dir: string,
    readonly cliCreds: string,
    readonly service: MeshService,
    private readonly serviceNc: NatsConnection,
  ) {}

  static async start(space = "sec"): Promise<AuthTestMesh> {
    const dir = mkdtempSync(join(tmpdir(), "cotal-auth-"));
    const store = await AuthStore.open(join(dir, "auth"));
    await store.ensureSpace(space);
    const server = await NatsServer.start({ config: await store.serverConfig() });
    const accountPub = store.accountKey(space).getPublicKey();
    const signing = store.signingKey(space);
    const meshCreds = join(dir, "auth", "creds", space, "mesh.creds");
    const cliCreds = join(dir, "auth", "creds", space, "cli.creds");
    writeSecret(meshCreds, (await mintCreds({ space, who: SERVICE_PRINCIPALS.mesh, profile: "mesh" }, signing, accountPub)).creds);
    writeSecret(cliCreds, (await mintCreds({ space, who: SERVICE_PRINCIPALS.cli, profile: "cli" }, signing, accountPub)).creds);
    const nc = await connect({ servers: server.url, authenticator: credsAuthenticator(readFileSync(meshCreds)), name: "mesh-service" });
    const service = await MeshService.start(nc, space, { auth: { store, server: server.url } });
    return new AuthTestMesh(server, space, store, dir, cliCreds, service, nc);
  }

  /** A connection with a creds file (or none). */
  async connection(creds?: string, inboxPrefix?: string): Promise<NatsConnection> {
    const nc = await connect({
      servers: this.server.url,
      ...(creds ? { authenticator: credsAuthenticator(readFileSync(creds)) } : {}),
      ...(inboxPrefix ? { inboxPrefix } : {}),
      maxReconnectAttempts: 0,
    });
    this.conns.push(nc);
    return nc;
  }

  /** Mint a credential through the mesh service (as `cotal mint` does); returns the creds path. */
  async mint(req: MintRequest): Promise<string> {
    const nc = await this.connection(this.cliCreds);
    const { creds } = await requestCredential(nc, this.space, req);
    const file = join(this.dir, "minted", `${req.name}-${Date.now()}-${Math.random().toString(36).slice(2)}.creds`);
    writeSecret(file, creds);
    return file;
  }

  /** An endpoint using a minted credential. */
  async endpoint(name: string, creds: string, opts: Partial<EndpointOptions> = {}): Promise<Endpoint> {
    const ep = await Endpoint.connect({ server: this.server.url, space: this.space, name, creds, ...opts });
    this.endpoints.push(ep);
    return ep;
  }

  async close(): Promise<void> {
    await Promise.all(this.endpoints.map((e) => e.close().catch(() => undefined)));
    await Promise.all(this.conns.map((c) => c.close().catch(() => undefined)));
    await this.service.stop().catch(() => undefined);
    await this.serviceNc.close().catch(() => undefined);
    await this.server.cleanup();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

