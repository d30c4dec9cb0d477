// Power for the cluster's stores: each node's JetStream store sits on a lazyfs mount (a FUSE layer
// that keeps writes in memory until fsync, testbed/lazyfs.ts). A power loss kills every node and
// every layer at once, so whatever was not fsynced is gone, as when a machine room loses power;
// restoring mounts the layers again on what they kept and starts the nodes.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { mountLazyFs, type LazyMount } from "../lazyfs.js";
import type { HostProcess } from "./host-process.js";

export class PowerSupply {
  private layers: LazyMount[] = [];

  private constructor(
    private readonly dir: string,
    private readonly nodes: readonly string[],
    private readonly backing: (node: string) => string,
  ) {}

  /**
   * Mount one layer per node under `dir`, over `backing(node)` (what the node's disk keeps);
   * `storeDir(node)` is where that node's store goes.
   */
  static async on(dir: string, nodes: readonly string[], backing: (node: string) => string): Promise<PowerSupply> {
    const p = new PowerSupply(dir, nodes, backing);
    for (const n of nodes) mkdirSync(p.backing(n), { recursive: true });
    for (const n of nodes) mkdirSync(p.storeDir(n), { recursive: true });
    await p.mountAll();
    return p;
  }

  storeDir(node: string): string {
    return join(this.dir, `power-${node}`);
  }

  private async mountAll(): Promise<void> {
    this.layers = await Promise.all(this.nodes.map((n) => mountLazyFs(this.backing(n), this.storeDir(n))));
  }

  /** kill -9 every node, then cut every layer: unsynced writes are lost. */
  async cut(servers: readonly HostProcess[]): Promise<void> {
    await Promise.all(servers.map((s) => s.kill()));
    await Promise.all(this.layers.map((l) => l.cutPower()));
  }

  /** Mount the layers again on what they kept and start the nodes. */
  async restore(servers: readonly HostProcess[]): Promise<void> {
    await this.mountAll();
    for (const s of servers) s.start();
  }

  /** Unmount every layer (their unsynced writes are dropped). */
  async off(): Promise<void> {
    await Promise.all(this.layers.map((l) => l.unmount().catch(() => undefined)));
  }
}
