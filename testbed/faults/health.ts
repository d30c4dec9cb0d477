// When the lab has healed: the cluster's meta group agrees on a leader with every node current,
// each of the space's streams has a leader with every replica current, and the leaf host is
// connected. Read from the nodes' monitoring endpoints and JetStream's stream info.
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Brokers } from "./cluster.js";

interface Jsz {
  meta_cluster?: { leader?: string; replicas?: { name: string; current: boolean }[] };
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

/** What is still unhealthy, as short phrases (empty when healed), and the nodes the meta group finds not current. */
export async function unhealthy(
  b: Brokers,
  nodes: readonly string[],
  nc: NatsConnection | undefined,
  streams: readonly string[],
): Promise<{ problems: string[]; behind: string[] }> {
  const problems: string[] = [];
  let behind: string[] = [];
  const views = await Promise.all(nodes.map((n) => getJson<Jsz>(`${b.monitorUrl(n)}/jsz`).catch(() => undefined)));
  const leaders = new Set(views.map((v) => v?.meta_cluster?.leader));
  const leader = views[0]?.meta_cluster?.leader;
  if (views.some((v) => v === undefined)) problems.push("a node does not answer /jsz");
  else if (!leader || leaders.size !== 1) problems.push(`no agreed meta leader (${[...leaders].join(", ")})`);
  else {
    const lv = views[nodes.indexOf(leader)];
    behind = (lv?.meta_cluster?.replicas ?? []).filter((r) => !r.current).map((r) => r.name);
    if (behind.length) problems.push(`meta group: ${behind.join(", ")} not current`);
  }
  const leafs = await Promise.all(nodes.map((n) => getJson<{ leafs?: number }>(`${b.monitorUrl(n)}/leafz`).catch(() => ({ leafs: 0 }))));
  if (leafs.reduce((a, l) => a + (l.leafs ?? 0), 0) < b.leaves.size) problems.push("a leaf host is not connected");
  if (nc && problems.length === 0) {
    const jsm = await jetstreamManager(nc, { timeout: 3_000, checkAPI: false });
    for (const s of streams) {
      const info = await jsm.streams.info(s).catch((err: Error) => err);
      if (info instanceof Error) problems.push(`stream ${s}: ${info.message}`);
      else if (!info.cluster?.leader) problems.push(`stream ${s} has no leader`);
      else if ((info.cluster.replicas ?? []).some((r) => !r.current)) problems.push(`stream ${s}: a replica is not current`);
    }
  }
  return { problems, behind };
}
