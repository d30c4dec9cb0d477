import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Endpoint, MeshService, type EndpointOptions, type MeshServiceOptions } from "../../broker/index.js";
import type { NatsServer } from "./nats-server.js";

/**
 * A provisioned space on a harness server with its mesh service running in-process, and a
 * factory for endpoints that are all closed by `close()`.
 */
export class TestMesh {
  private readonly endpoints: Endpoint[] = [];
  private constructor(
    readonly server: NatsServer,
    readonly space: string,
    readonly serviceConnection: NatsConnection,
    readonly service: MeshService,
  ) {}

  static async start(server: NatsServer, space = "test", opts: MeshServiceOptions = {}): Promise<TestMesh> {
    const nc = await connect({ servers: server.url, name: "mesh-service", maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    const service = await MeshService.start(nc, space, opts);
    return new TestMesh(server, space, nc, service);
  }

  /** Connect an endpoint (not joined). */
  async endpoint(name: string, opts: Partial<EndpointOptions> = {}): Promise<Endpoint> {
    const ep = await Endpoint.connect({ server: this.server.url, space: this.space, name, ...opts });
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
    await this.service.stop().catch(() => undefined);
    await this.serviceConnection.close().catch(() => undefined);
  }
}
