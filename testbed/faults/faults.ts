// The fault injectors. Each fault is injected on one target and healed later; healing restores
// what a recovered network or an operator would (rules lifted, a process continued or started
// again). Network faults are firewall rules inside the hosts' namespaces (hosts.ts).
import type { Lab } from "./hosts.js";
import type { Brokers } from "./cluster.js";
import type { HostProcess } from "./host-process.js";
import type { SmallDisks } from "./disks.js";
import type { PowerSupply } from "./power.js";

export const FAULT_KINDS = [
  "isolate-node",
  "split",
  "one-way-loss",
  "cut-leaf",
  "pause-node",
  "kill-node",
  "pause-manager",
  "kill-manager",
  "pause-seat",
  "kill-seat",
  "power-loss",
  "disk-full",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/**
 * A disk-full's target: the node leading the sender's inbox consumer when the fault starts (the
 * consumer that must not step past what a full disk failed to store), named as it is injected.
 */
export const INBOX_LEADER = "inbox-leader";

/** What each fault does, in a user's words (the report's legend and docs/reliability.md). */
export const FAULT_MEANING: Record<FaultKind, string> = {
  "isolate-node": "one cluster node loses the network (every packet to and from it dropped)",
  split: "a clean split: one node and the leaf host on one side, the other two nodes and the sender on the other",
  "one-way-loss": "one node receives nothing but can still send",
  "cut-leaf": "the leaf host (manager and seats) is cut off from everything",
  "pause-node": "one node's nats-server is frozen (SIGSTOP), then continued",
  "kill-node": "one node's nats-server is killed (kill -9), then started again on its store",
  "pause-manager": "the leaf host's manager is frozen (SIGSTOP), then continued",
  "kill-manager": "the leaf host's manager is killed (kill -9), then started again (it adopts its seats)",
  "pause-seat": "one seat's process (an echo seat's, or the Claude seat's `claude`) is frozen, then continued",
  "kill-seat": "one seat's process (an echo seat's, or the Claude seat's `claude`) is killed (kill -9); its manager restarts it",
  "power-loss": "every cluster node loses power at once: killed, and every write its disk had not synced is gone",
  "disk-full": "the disk of the node that leads the sender's inbox fills up; healing frees it and restarts that node, as an operator would",
};

/** What an injector needs of the running lab. */
export interface FaultContext {
  lab: Lab;
  brokers: Brokers;
  nodes: readonly string[];
  leaf: string;
  manager: HostProcess;
  /** Pids of the seat named `name` (a kill-seat or pause-seat target). */
  seatPids(name: string): number[];
  /** The nodes' small disks. */
  disks: SmallDisks;
  /** The cluster's power (stores on lazyfs), when the lab has it. */
  power?: PowerSupply;
  /** The node that leads the sender's inbox consumer now. */
  inboxLeader(): Promise<string>;
}

export interface Injected {
  heal(): Promise<void>;
  /** The node a symbolic target (INBOX_LEADER) named when the fault was injected. */
  resolved?: string;
}

/** Inject `kind` on `target` (a node, the leaf host, or a seat name). */
export async function inject(ctx: FaultContext, kind: FaultKind, target: string): Promise<Injected> {
  const { lab } = ctx;
  switch (kind) {
    case "isolate-node":
    case "cut-leaf":
      await lab.block(target, lab.othersOf(target), "both");
      return { heal: () => lab.unblockAll(target) };
    case "one-way-loss":
      await lab.block(target, lab.othersOf(target), "in");
      return { heal: () => lab.unblockAll(target) };
    case "split": {
      const minority = [target, ctx.leaf];
      const majority = [...ctx.nodes.filter((n) => n !== target).map((n) => lab.host(n).address), lab.runnerAddress];
      for (const h of minority) await lab.block(h, majority, "both");
      return {
        heal: async () => {
          for (const h of minority) await lab.unblockAll(h);
        },
      };
    }
    case "pause-node": {
      const p = node(ctx, target);
      p.pause();
      return { heal: async () => p.resume() };
    }
    case "kill-node": {
      const p = node(ctx, target);
      await p.kill();
      return { heal: async () => p.start() };
    }
    case "pause-manager":
      ctx.manager.pause();
      return { heal: async () => ctx.manager.resume() };
    case "kill-manager":
      await ctx.manager.kill();
      return { heal: async () => ctx.manager.start() };
    case "pause-seat": {
      const pids = ctx.seatPids(target);
      for (const pid of pids) signal(pid, "SIGSTOP");
      return { heal: async () => pids.forEach((pid) => signal(pid, "SIGCONT")) };
    }
    case "power-loss": {
      const power = ctx.power;
      if (!power) throw new Error("power-loss needs the stores on lazyfs (the lab was built without)");
      const servers = [...ctx.brokers.nodes.values()];
      await power.cut(servers);
      return { heal: () => power.restore(servers) };
    }
    case "disk-full": {
      const resolved = target === INBOX_LEADER ? await ctx.inboxLeader() : target;
      const p = node(ctx, resolved);
      ctx.disks.fill(resolved);
      return {
        resolved,
        heal: async () => {
          ctx.disks.free(resolved);
          // A node whose writes failed may have switched JetStream off; a restart brings it back.
          await p.stop();
          p.start();
        },
      };
    }
    case "kill-seat":
      for (const pid of ctx.seatPids(target)) signal(pid, "SIGKILL");
      return { heal: async () => undefined };
  }
}

function node(ctx: FaultContext, name: string): HostProcess {
  const p = ctx.brokers.nodes.get(name);
  if (!p) throw new Error(`no cluster node ${name}`);
  return p;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Gone already: nothing to freeze or kill.
  }
}
