// The lab's mesh: namespaces for three cluster nodes and one leaf host, the brokers, the mesh
// service (here, in the runner), the leaf host's `cotal manager` with echo seats, a sender on the
// cluster side and a channel member connected through the leaf host. Built once per run; the
// schedules run one after another on it.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { promisify } from "node:util";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ControlCallError, controlCaller, Endpoint, FIX_OFF_ENV, MeshService, MeshServiceUnavailableError, type SwitchableFix } from "../../broker/index.js";
import { jetstreamManager } from "@nats-io/jetstream";
import { durables, localPrincipal, MANAGER_COMMANDS, names } from "../../schemas/index.js";
import { tmuxSocketPath } from "../../manager/index.js";
import { until } from "../until.js";
import { LEAF_LOCAL_PORT, startBrokers, type Brokers } from "./cluster.js";
import type { FaultContext } from "./faults.js";
import { HostProcess } from "./host-process.js";
import { Lab, sweepStaleLabs } from "./hosts.js";
import { unhealthy } from "./health.js";
import { SmallDisks } from "./disks.js";
import { PowerSupply } from "./power.js";
import { seatRuns, type SeatState, type SpawnRecord } from "./records.js";
import { seatProcesses } from "./seat-processes.js";
import { MODEL_SEAT, ModelWitness, type ModelHandOver } from "./model-witness.js";

const run = promisify(execFile);

export const SPACE = "faults";
export const CHANNEL = "faults";
/** The echo seats' role (the workload's anycasts go to it). */
export const ROLE = "echoer";
const NODES = ["n1", "n2", "n3"] as const;
const LEAF = "leaf1";

/** How long a node may stay not current in the meta group before it counts as stalled, ms. */
const STALL_MS = 45_000;

/** Each node's disk, MiB: room for a run's streams, small enough to fill at once. */
const DISK_MIB = 64;
const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");

export interface FaultMeshOptions {
  /** nats-server binary (≥ 2.10). */
  natsServer: string;
  /** `dist/cotal.mjs` (the manager is the shipped CLI). */
  cotal: string;
  seats?: number;
  /** The durability fix (default on); the switched-off run turns it off. */
  syncAlways?: boolean;
  /** A fix of the product switched off (broker/fix-off.ts): set in the environment of the manager and so of its seats. */
  fixOff?: SwitchableFix;
  /** Put the nodes' stores on lazyfs, so power losses can be injected (needs FUSE). */
  power?: boolean;
  /** How long a handed-out, unacked message waits before redelivery, ms (default 3 000: rounds are short). */
  ackWaitMs?: number;
  /** Keep the run directory (logs, configs) after close. */
  keepDir?: boolean;
  /**
   * Run a real Claude Code seat (MODEL_SEAT) beside the echo seats, its model the runner's double;
   * `handed` is told each message its model was shown (default: none runs).
   */
  modelSeat?: { handed: (h: ModelHandOver) => void };
  say?: (line: string) => void;
}

export class FaultMesh {
  readonly nodes = NODES;
  readonly leaf = LEAF;
  readonly seats: string[];
  private service: MeshService | undefined;
  private nc: NatsConnection | undefined;
  manager!: HostProcess;
  sender!: Endpoint;
  member!: Endpoint;
  private closed = false;
  private witness: ModelWitness | undefined;
  /** What the lab did to heal that no fault asked for (a stalled node restarted), in order. */
  readonly remedies: string[] = [];

  private constructor(
    readonly lab: Lab,
    readonly brokers: Brokers,
    readonly dir: string,
    private readonly o: FaultMeshOptions,
    readonly power: PowerSupply | undefined,
    readonly disks: SmallDisks,
  ) {
    this.seats = [...Array.from({ length: o.seats ?? 3 }, (_, i) => `e${i + 1}`), ...(o.modelSeat ? [MODEL_SEAT] : [])];
  }

  static async start(o: FaultMeshOptions): Promise<FaultMesh> {
    const dir = mkdtempSync(join(tmpdir(), "cotal-faults-"));
    const swept = await sweepStaleLabs();
    if (swept.length) o.say?.(`removed what stopped runs left behind: labs ${swept.join(", ")}`);
    const lab = await Lab.create([...NODES, LEAF], dir);
    let mesh: FaultMesh | undefined;
    let power: PowerSupply | undefined;
    let disks: SmallDisks | undefined;
    try {
      disks = await SmallDisks.mount(dir, NODES, DISK_MIB);
      const onDisk = disks;
      power = o.power ? await PowerSupply.on(dir, NODES, (n) => onDisk.path(n)) : undefined;
      const powered = power;
      const storeDir = powered ? (n: string) => powered.storeDir(n) : (n: string) => onDisk.path(n);
      const brokers = startBrokers(lab, { bin: o.natsServer, dir, nodes: NODES, leaves: [LEAF], syncAlways: o.syncAlways ?? true, storeDir });
      mesh = new FaultMesh(lab, brokers, dir, o, power, disks);
      await mesh.boot();
      return mesh;
    } catch (err) {
      if (mesh) await mesh.close();
      else {
        await power?.off();
        await disks?.unmount();
        await lab.teardown();
      }
      throw err;
    }
  }

  /** The switch of the fix this run turns off, for the product's processes (empty: every fix on). */
  private fixEnv(): NodeJS.ProcessEnv {
    return { [FIX_OFF_ENV]: this.o.fixOff ?? "" };
  }

  get stateDir(): string {
    return join(this.dir, "leaf1-manager");
  }

  private async boot(): Promise<void> {
    const say = this.o.say ?? (() => undefined);
    say(`lab ${this.lab.id}: nodes ${NODES.map((n) => this.lab.host(n).address).join(", ")}, leaf host ${this.lab.host(LEAF).address}; run dir ${this.dir}`);
    await this.waitHealthy(60_000, false);
    this.nc = await connect({ servers: [...this.brokers.urls], maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    await this.provision();
    mkdirSync(this.stateDir, { recursive: true });
    if (this.o.modelSeat) this.witness = await ModelWitness.start(this.lab.runnerAddress, this.dir, this.o.modelSeat.handed);
    this.manager = new HostProcess(this.lab, {
      label: `${LEAF} manager`,
      host: LEAF,
      argv: [process.execPath, this.o.cotal, "manager", "--instance", LEAF, "--state-dir", this.stateDir],
      env: {
        ...process.env,
        ...this.witness?.managerEnv(this.o.cotal),
        COTAL_SERVER: `nats://127.0.0.1:${LEAF_LOCAL_PORT}`,
        COTAL_SPACE: SPACE,
        COTAL_LOG_LEVEL: process.env.COTAL_LAB_LOG_LEVEL ?? "info",
        ...this.fixEnv(),
      },
      cwd: this.dir,
      logFile: join(this.dir, `${LEAF}-manager.log`),
      // As deploy/systemd/cotal-manager.service: a manager that exits (it does when it starts while
      // the cluster is unreachable) is started again.
      restartMs: 2_000,
    });
    this.manager.start();
    await until(() => this.ps().then(() => true), 60_000, `the manager on ${LEAF} to answer ps`, 500);
    for (const seat of this.seats)
      await callManager(this.nc, SPACE, "spawn", operator, seat === MODEL_SEAT ? { agent: "claude", name: seat } : { agent: "echo", name: seat, role: ROLE }, {
        target: LEAF,
        timeoutMs: 60_000,
      });
    this.sender = await Endpoint.connect({ server: this.brokers.urls.join(","), space: SPACE, name: "sender" });
    await this.sender.join();
    this.member = await Endpoint.connect({ server: `nats://${this.lab.host(LEAF).address}:${LEAF_LOCAL_PORT}`, space: SPACE, name: "member" });
    await this.member.join();
    await this.member.joinChannel(CHANNEL);
    await this.waitHealthy(60_000, true);
    say(`mesh up: ${this.seats.length} seats on ${LEAF} (${this.seats.join(", ")})`);
  }

  /**
   * Provision the space at R3. A fresh cluster may agree on a meta leader and still refuse to place
   * a replicated stream ("no suitable peers for placement"), now and then for good (as
   * test/harness/cluster.ts sees on loopback): after 30 s of refusals every node is restarted on its
   * store, at most twice.
   */
  private async provision(): Promise<void> {
    let lastRefusal = "";
    for (let attempt = 1; ; attempt += 1) {
      try {
        await until(
          async () => {
            this.service = await MeshService.start(this.nc!, SPACE, { ackWaitMs: this.o.ackWaitMs ?? 3_000 }).catch((err: Error) => {
              lastRefusal = err.message;
              return undefined;
            });
            return this.service !== undefined;
          },
          30_000,
          () => `the space to be provisioned at R3 (last refusal: ${lastRefusal})`,
          1_000,
        );
        return;
      } catch (err) {
        if (attempt === 3) throw err;
        this.o.say?.(`the cluster cannot place R3 streams (${lastRefusal}); restarting its nodes`);
        for (const node of this.brokers.nodes.values()) await node.restart();
        await this.waitHealthy(60_000, false);
      }
    }
  }

  /** Ask the leaf host's manager to spawn an echo seat, and say what its answer promised. */
  async spawn(seat: string): Promise<Pick<SpawnRecord, "outcome" | "detail">> {
    try {
      const r = await callManager(this.nc!, SPACE, "spawn", operator, { agent: "echo", name: seat, role: ROLE }, { target: LEAF, timeoutMs: 20_000 });
      return { outcome: "started", detail: `state ${r.state}` };
    } catch (err) {
      const e = err as Error;
      if (err instanceof ControlCallError) return { outcome: err.outcome === "not-executed" ? "not-executed" : "unknown", detail: e.message };
      if (err instanceof MeshServiceUnavailableError && err.reason === "no-responders") return { outcome: "not-executed", detail: e.message };
      return { outcome: "unknown", detail: e.message };
    }
  }

  /** Stop (retire) a seat and wait until no process runs as it. */
  async retire(seat: string): Promise<void> {
    await until(
      async () => {
        const ended = (st: SeatState | undefined) => st === undefined || st.state === "retired" || st.state === "fenced";
        if (!ended((await this.seatStates()).get(seat)))
          await callManager(this.nc!, SPACE, "stop", operator, { name: seat }, { target: LEAF, timeoutMs: 20_000 });
        return !this.running().has(seat) && ended((await this.seatStates()).get(seat));
      },
      60_000,
      `seat ${seat} to be stopped`,
      500,
    );
  }

  /** The seats the manager reports running (not retired). */
  async ps(): Promise<string[]> {
    return [...(await this.seatStates())].filter(([, v]) => seatRuns(v)).map(([name]) => name);
  }

  /** Every seat the manager knows, retired ones too: its state and why it ended. */
  async seatStates(): Promise<Map<string, SeatState>> {
    const r = await callManager(this.nc!, SPACE, "ps", operator, { all: true }, { target: LEAF, timeoutMs: 5_000 });
    return new Map(r.seats.map((v) => [v.name, { state: v.state, ...(v.reason ? { reason: v.reason } : {}) }]));
  }

  running(): Map<string, number[]> {
    return seatProcesses(this.stateDir);
  }

  faultContext(): FaultContext {
    return {
      lab: this.lab,
      brokers: this.brokers,
      nodes: this.nodes,
      leaf: this.leaf,
      manager: this.manager,
      seatPids: (name) => this.running().get(name) ?? [],
      ...(this.power ? { power: this.power } : {}),
      disks: this.disks,
      inboxLeader: () => this.inboxLeader(),
    };
  }

  /** The node leading the sender's inbox consumer (it answers while one node's store cannot write). */
  private async inboxLeader(): Promise<string> {
    const jsm = await jetstreamManager(this.nc!);
    const info = await jsm.consumers.info(names.dmStream(SPACE), durables.dm(this.sender.me));
    const leader = info.cluster?.leader;
    if (!leader || !this.brokers.nodes.has(leader)) throw new Error(`the sender's inbox consumer names no leader among the nodes (${leader ?? "none"})`);
    return leader;
  }

  /** Wait until the lab healed (healthy cluster, streams current, leaf connected, manager and every seat running). */
  async waitHealthy(timeoutMs: number, withMesh = true): Promise<void> {
    let last: string[] = [];
    const behindSince = new Map<string, number>();
    const restarted = new Set<string>();
    await until(
      async () => {
        const look = await unhealthy(this.brokers, this.nodes, withMesh ? this.nc : undefined, [names.dmStream(SPACE), names.chatStream(SPACE)]);
        last = look.problems;
        await this.restartStalled(look.behind, behindSince, restarted);
        if (withMesh && last.length === 0) {
          const run = this.running();
          const missing = this.seats.filter((s) => (run.get(s)?.length ?? 0) !== 1);
          if (missing.length) last.push(`seats not running once: ${missing.join(", ")}`);
          else await this.ps().catch((err: Error) => last.push(`manager ps: ${err.message}`));
        }
        return last.length === 0;
      },
      timeoutMs,
      () => `the lab to heal; still: ${last.join("; ")}`,
      250,
    );
  }

  /**
   * A node the meta group has found not current for STALL_MS is stalled, not slow: nats-server 2.10
   * has catch-ups that never finish until the node restarts (test/harness/cluster.ts meets the
   * same). It is restarted, once per wait, as an operator would; the round's report names it.
   */
  private async restartStalled(behind: readonly string[], since: Map<string, number>, restarted: Set<string>): Promise<void> {
    for (const n of [...since.keys()]) if (!behind.includes(n)) since.delete(n);
    for (const n of behind) {
      const first = since.get(n) ?? Date.now();
      since.set(n, first);
      const node = this.brokers.nodes.get(n);
      if (!node || restarted.has(n) || Date.now() - first < STALL_MS) continue;
      restarted.add(n);
      this.remedies.push(`restarted ${n}: not current in the meta group for ${STALL_MS / 1000} s (a stalled catch-up)`);
      this.o.say?.(this.remedies.at(-1)!);
      await node.restart();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.sender?.close().catch(() => undefined);
    await this.member?.close().catch(() => undefined);
    // Seats first (the manager would otherwise keep them running after it stops).
    for (const pids of this.running().values()) for (const pid of pids) killQuietly(pid);
    await this.manager?.close().catch(() => undefined);
    // The manager's tmux server (the Claude seat's terminal) outlives it by design.
    await run("tmux", ["-S", tmuxSocketPath(this.stateDir), "kill-server"]).catch(() => undefined);
    await this.witness?.stop().catch(() => undefined);
    await this.service?.stop().catch(() => undefined);
    await this.nc?.close().catch(() => undefined);
    for (const p of [...this.brokers.leaves.values(), ...this.brokers.nodes.values()]) await p.close().catch(() => undefined);
    await this.power?.off();
    await this.disks.unmount();
    await this.lab.teardown();
    if (!this.o.keepDir) rmSync(this.dir, { recursive: true, force: true });
  }
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}
