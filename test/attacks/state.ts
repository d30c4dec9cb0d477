import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { expect } from "vitest";
import { names, type Principal } from "../../schemas/index.js";
import type { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

/** What an attack must not change: streams, their per-subject counts, consumers, identity records. */
export interface MeshState {
  streams: Record<string, Record<string, number>>;
  consumers: Record<string, string[]>;
  identities: Record<string, string>;
}

/** Streams compared subject by subject (presence is left out: heartbeats rewrite it). */
function watched(space: string): string[] {
  return [
    names.chatStream(space),
    names.dmStream(space),
    names.taskStream(space),
    names.seatsStream(space),
    `KV_${names.membersBucket(space)}`,
    `KV_${names.channelsBucket(space)}`,
  ];
}

/** The data account's view of everything an attack could touch. */
export async function snapshot(mesh: TestMesh): Promise<MeshState> {
  const jsm: JetStreamManager = await mesh.dataJsm();
  const state: MeshState = { streams: {}, consumers: {}, identities: {} };
  for (const stream of watched(mesh.space)) {
    const info = await jsm.streams.info(stream, { subjects_filter: ">" });
    state.streams[stream] = { ...(info.state.subjects ?? {}) };
    state.consumers[stream] = (await jsm.consumers.list(stream).next()).map((c) => c.name).sort();
  }
  const members = `KV_${names.membersBucket(mesh.space)}`;
  for (const subject of Object.keys(state.streams[members] ?? {}).filter((s) => s.includes(".id."))) {
    const m = await jsm.streams.getMessage(members, { last_by_subj: subject });
    state.identities[subject] = new TextDecoder().decode(m?.data);
  }
  return state;
}

/** Expect the mesh unchanged since `before`, but for the subjects the test itself wrote to. */
export async function expectUnchanged(mesh: TestMesh, before: MeshState, except: string[] = []): Promise<void> {
  const after = await snapshot(mesh);
  const strip = (s: MeshState) => ({
    ...s,
    streams: Object.fromEntries(
      Object.entries(s.streams).map(([k, v]) => [k, Object.fromEntries(Object.entries(v).filter(([subj]) => !except.includes(subj)))]),
    ),
  });
  expect(strip(after)).toEqual(strip(before));
}

/** After an attack, a revoke of the attacker still cuts its live connection. */
export async function revokeStillCuts(mesh: TestMesh, who: Principal, nc: NatsConnection): Promise<void> {
  let closed = false;
  void nc.closed().then(() => (closed = true));
  const { requestRevoke } = await import("../../broker/index.js");
  const cli = await mesh.connection(mesh.cliCreds);
  const r = await requestRevoke(cli, mesh.space, who.actor);
  expect(r.revoked).toBeGreaterThanOrEqual(1);
  await until(() => closed, 5_000, `the revoked ${who.actor}'s connection to be closed`);
}
