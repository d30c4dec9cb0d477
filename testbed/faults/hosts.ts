// Real hosts on one machine: each host is a Linux network namespace with one veth into a bridge
// that lives in a namespace of its own. The runner (this process) joins the same segment through
// one more veth in the root namespace, addressed inside the lab's own /24, so it reaches every
// host the way a client on the network would. Partitions are firewall rules inside the hosts'
// namespaces, never in the root namespace's.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { pidAlive } from "../pid-alive.js";

const run = promisify(execFile);

/** The lab could not be built or torn down; `detail` holds the failing command's stderr. */
export class LabError extends Error {
  override readonly name = "LabError";
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** Why this process cannot build a lab (a sentence naming the fix), or undefined when it can. */
export function labUnavailable(): string | undefined {
  if (process.platform !== "linux") return "the fault suite needs Linux network namespaces";
  if (process.getuid?.() !== 0) return "the fault suite needs root (ip netns, veth pairs, iptables inside the namespaces): run it as root";
  return undefined;
}

async function sh(cmd: string, args: readonly string[]): Promise<string> {
  try {
    return (await run(cmd, [...args], { encoding: "utf8" })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new LabError(`${cmd} ${args.join(" ")} failed: ${(e.stderr ?? e.message).trim()}`, { cause: err });
  }
}

/** One host of the lab: its namespace and its address on the lab's segment. */
export interface Host {
  /** Short name (`n1`, `leaf1`); unique in the lab. */
  readonly name: string;
  /** The namespace's name (unique per lab, so parallel labs never collide). */
  readonly netns: string;
  readonly address: string;
}

/** Traffic a block drops, seen from the blocked host: what it receives, what it sends, or both. */
export type Direction = "in" | "out" | "both";

/** A segment of namespaces joined by one bridge, and the runner's own veth on it. */
export class Lab {
  readonly hosts = new Map<string, Host>();
  /** The runner's address on the segment (root namespace, inside the lab's /24). */
  readonly runnerAddress: string;
  private readonly bridgeNs: string;
  private readonly rootVeth: string;
  private torn = false;

  private constructor(
    /** Unique per lab: namespace and interface names start with it. */
    readonly id: string,
    /** The lab's /24, as its first three octets (`10.77.123`). */
    readonly subnet: string,
  ) {
    this.bridgeNs = `${id}-br`;
    this.rootVeth = `${id}r`;
    this.runnerAddress = `${subnet}.254`;
  }

  /**
   * Build a lab with one host per name (addresses .1, .2, … in name order). `runDir` is the run's
   * directory (mounts under it are removed with a lab its runner left behind).
   */
  static async create(hostNames: readonly string[], runDir: string): Promise<Lab> {
    const why = labUnavailable();
    if (why) throw new LabError(why);
    const id = `cf${randomBytes(3).toString("hex")}`;
    const lab = new Lab(id, await freeSubnet());
    mkdirSync(REGISTRY, { recursive: true });
    writeFileSync(join(REGISTRY, `${id}.json`), JSON.stringify({ pid: process.pid, runDir }));
    try {
      await lab.build(hostNames);
    } catch (err) {
      await lab.teardown();
      throw err;
    }
    return lab;
  }

  private async build(hostNames: readonly string[]): Promise<void> {
    const br = this.bridgeNs;
    await sh("ip", ["netns", "add", br]);
    await sh("ip", ["-n", br, "link", "add", "br0", "type", "bridge"]);
    await sh("ip", ["-n", br, "link", "set", "br0", "up"]);
    await sh("ip", ["-n", br, "link", "set", "lo", "up"]);
    // The runner's leg: one end stays in the root namespace with the lab's .254.
    await this.leg(this.rootVeth, `${this.id}R`);
    await sh("ip", ["addr", "add", `${this.runnerAddress}/24`, "dev", this.rootVeth]);
    await sh("ip", ["link", "set", this.rootVeth, "up"]);
    for (const [i, name] of hostNames.entries()) {
      if (!/^[a-z][a-z0-9]{0,5}$/.test(name)) throw new LabError(`host name ${JSON.stringify(name)}: use 1–6 lowercase letters and digits`);
      const host: Host = { name, netns: `${this.id}-${name}`, address: `${this.subnet}.${i + 1}` };
      await sh("ip", ["netns", "add", host.netns]);
      const inner = `${this.id}${i}h`;
      await this.leg(inner, `${this.id}${i}b`);
      await sh("ip", ["link", "set", inner, "netns", host.netns]);
      await sh("ip", ["-n", host.netns, "link", "set", inner, "name", "eth0"]);
      await sh("ip", ["-n", host.netns, "addr", "add", `${host.address}/24`, "dev", "eth0"]);
      await sh("ip", ["-n", host.netns, "link", "set", "eth0", "up"]);
      await sh("ip", ["-n", host.netns, "link", "set", "lo", "up"]);
      this.hosts.set(name, host);
    }
  }

  /** A veth pair whose `bridgeEnd` goes into the bridge namespace, on br0. */
  private async leg(near: string, bridgeEnd: string): Promise<void> {
    await sh("ip", ["link", "add", near, "type", "veth", "peer", "name", bridgeEnd]);
    await sh("ip", ["link", "set", bridgeEnd, "netns", this.bridgeNs]);
    await sh("ip", ["-n", this.bridgeNs, "link", "set", bridgeEnd, "master", "br0"]);
    await sh("ip", ["-n", this.bridgeNs, "link", "set", bridgeEnd, "up"]);
  }

  host(name: string): Host {
    const h = this.hosts.get(name);
    if (!h) throw new LabError(`no host ${name} in lab ${this.id} (hosts: ${[...this.hosts.keys()].join(", ")})`);
    return h;
  }

  /** `ip netns exec` argv prefix that runs a command inside `host`. */
  execPrefix(host: string): string[] {
    return ["ip", "netns", "exec", this.host(host).netns];
  }

  /**
   * Drop traffic between `host` and each of `peers` (addresses), in `direction` as seen from
   * `host`: a rule in the host's own firewall. `unblockAll` lifts every rule.
   */
  async block(host: string, peers: readonly string[], direction: Direction): Promise<void> {
    const ns = this.host(host).netns;
    for (const peer of peers) {
      if (direction !== "out") await sh("ip", ["netns", "exec", ns, "iptables", "-I", "INPUT", "-s", peer, "-j", "DROP"]);
      if (direction !== "in") await sh("ip", ["netns", "exec", ns, "iptables", "-I", "OUTPUT", "-d", peer, "-j", "DROP"]);
    }
  }

  /** Lift every block on `host`. */
  async unblockAll(host: string): Promise<void> {
    const ns = this.host(host).netns;
    await sh("ip", ["netns", "exec", ns, "iptables", "-F", "INPUT"]);
    await sh("ip", ["netns", "exec", ns, "iptables", "-F", "OUTPUT"]);
  }

  /** Every address on the segment but `host`'s own (the runner's included). */
  othersOf(host: string): string[] {
    const own = this.host(host).address;
    return [...[...this.hosts.values()].map((h) => h.address), this.runnerAddress].filter((a) => a !== own);
  }

  /** Remove every namespace and interface of the lab; safe to call twice, never throws. */
  async teardown(): Promise<void> {
    if (this.torn) return;
    this.torn = true;
    await sh("ip", ["link", "del", this.rootVeth]).catch(() => undefined);
    for (const h of this.hosts.values()) await sh("ip", ["netns", "del", h.netns]).catch(() => undefined);
    await sh("ip", ["netns", "del", this.bridgeNs]).catch(() => undefined);
    rmSync(join(REGISTRY, `${this.id}.json`), { force: true });
  }
}

/** Where each live lab names its runner's pid and run directory (root's tmpfs: gone at reboot, as the namespaces are). */
const REGISTRY = "/run/cotal-faults";

/**
 * Remove what labs whose runner died (kill -9, a crash) left behind: the processes in their
 * namespaces, the namespaces, the runner's veth, FUSE and tmpfs mounts under their run directory. Returns
 * the ids of the labs removed.
 */
export async function sweepStaleLabs(): Promise<string[]> {
  let files: string[];
  try {
    files = readdirSync(REGISTRY).filter((f) => f.endsWith(".json"));
  } catch {
    return [];
  }
  const swept: string[] = [];
  for (const f of files) {
    const id = f.slice(0, -".json".length);
    let entry: { pid: number; runDir: string };
    try {
      entry = JSON.parse(readFileSync(join(REGISTRY, f), "utf8")) as { pid: number; runDir: string };
    } catch {
      continue;
    }
    if (pidAlive(entry.pid)) continue;
    const spaces = (await sh("ip", ["netns", "list"])).split("\n").map((l) => l.split(" ")[0] ?? "");
    for (const ns of spaces.filter((n) => n.startsWith(`${id}-`))) {
      const pids = (await sh("ip", ["netns", "pids", ns]).catch(() => "")).split("\n").filter(Boolean);
      for (const pid of pids) if (pidAlive(Number(pid))) process.kill(Number(pid), "SIGKILL");
      await sh("ip", ["netns", "del", ns]).catch(() => undefined);
    }
    await sh("ip", ["link", "del", `${id}r`]).catch(() => undefined);
    for (const line of readFileSync("/proc/mounts", "utf8").split("\n")) {
      const [, at, type] = line.split(" ");
      if (!at?.startsWith(`${entry.runDir}/`)) continue;
      if (type?.startsWith("fuse")) await sh("fusermount3", ["-uz", at]).catch(() => undefined);
      else if (type === "tmpfs") await sh("umount", ["-l", at]).catch(() => undefined);
    }
    rmSync(join(REGISTRY, f), { force: true });
    swept.push(id);
  }
  return swept;
}

/** A 10.77.x.0/24 no interface of this machine uses yet (labs running side by side each take one). */
async function freeSubnet(): Promise<string> {
  const used = await sh("ip", ["-o", "-4", "addr"]);
  for (let tries = 0; tries < 50; tries += 1) {
    const subnet = `10.77.${1 + (randomBytes(1)[0]! % 250)}`;
    if (!used.includes(`${subnet}.`)) return subnet;
  }
  throw new LabError("no free 10.77.x.0/24 for a lab: remove stale labs with `ip netns list | grep ^cf`");
}
