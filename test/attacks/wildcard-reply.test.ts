// The crash this guards against: one request through a service import with a *wildcard reply subject* (`_INBOX.local.olga.>`)
// sent nats-server 2.9.10 into endless recursion in its reverse reply tracking (checkForReverseEntries
// ↔ checkForReverseEntry, accounts.go) until `fatal error: stack overflow`: any credential, an
// observer's included, took the mesh down with one message. 2.10 guards the recursion. For every
// profile this file aims requests with a `*` or `>` in every position of the reply at the control
// rail, every JetStream API and bucket subject the clients account imports, and `$JS.ACK`, and then
// asks whether the server is still up and `cotal status` still answers. Whether the profile's
// permissions let a request through is recorded, not asserted: the point is that the server survives.
import { createUser } from "@nats-io/nkeys";
import { tmpdir } from "node:os";
import { jetstream, type JsMsg } from "@nats-io/jetstream";
import { headers, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  callControl,
  clientServices,
  isTimeout,
  jetStreamConnection,
  JS_OPTIONS,
  permissionViolation,
  SERVICE_PRINCIPALS,
  setLogDestination,
} from "../../broker/internal.js";
import type { Endpoint, MintRequest } from "../../broker/index.js";
import {
  beatSubject,
  chatSubject,
  controlSubject,
  dmSubject,
  durables,
  JS_API,
  localPrincipal,
  names,
  principalId,
  type Principal,
} from "../../schemas/index.js";
import { buildCli, cleanEnv, runCotal } from "../harness/cli.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const SPACE = "wild";
let mesh: TestMesh;
let carol: Endpoint;

/** Every profile `cotal mint` hands out, plus the operator's own tool; minted as a user would. */
const PROFILES: Record<string, (name: string) => MintRequest> = {
  agent: (name) => ({ name, profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"], role: "reviewer", provision: true }),
  observer: (name) => ({ name, profile: "observer" }),
  person: (name) => ({ name, profile: "person", provision: true }),
  "scoped reader": (name) => ({ name, profile: "agent", allowSubscribe: ["events.local.x"], provision: true }),
  admin: (name) => ({ name, profile: "admin" }),
  manager: (name) => ({ name, profile: "manager" }),
  leaf: (name) => ({ name: `${name}_leaf`, profile: "leaf" }),
};

beforeAll(async () => {
  // Live listeners drop each aimed presence write with a warning: kept out of the test output.
  setLogDestination({ write: () => undefined });
  await buildCli(); // the last test runs the built `cotal status`
  mesh = await TestMesh.startStatic(SPACE);
  carol = await mesh.joined("carol"); // sends the DMs attackers ack with a wildcard reply
}, 120_000);

afterAll(async () => {
  setLogDestination(undefined);
  await mesh?.close();
});

/**
 * Reply subjects with a wildcard in every position of `_INBOX.<owner>.<actor>.<tag>.x`: each token
 * replaced by `*`, and `>` from each position on, plus a bare `*`. Only the two whose wildcard comes
 * after `tag` land in the attacker's own inbox, so they tell which request was answered.
 */
function wildcardReplies(who: Principal, tag: string): string[] {
  const tokens = ["_INBOX", who.owner, who.actor, tag, "x"];
  const star = tokens.map((_, i) => tokens.map((t, j) => (i === j ? "*" : t)).join("."));
  const tail = tokens.map((_, i) => [...tokens.slice(0, i), ">"].join("."));
  return [...star, ...tail, "*"];
}

/** One request aimed at an import: subject, payload, and headers (a JetStream precondition that refuses the write). */
interface Target {
  subject: string;
  payload: string;
  refuseWrite?: boolean;
}

const request = (who: Principal, args: Record<string, unknown> = {}) =>
  JSON.stringify({ id: `wild-${Math.random().toString(36).slice(2)}`, deadline: Date.now() + 10_000, caller: principalId(who), args });

/** Control calls: every command some profile may make, each as the caller itself. */
function controlTargets(who: Principal): Target[] {
  const calls: Array<[endpoint: string, command: string, args?: Record<string, unknown>]> = [
    ["mesh", "ping"],
    ["mesh", "roster"],
    ["mesh", "channels"],
    ["mesh", "lookup", { name: "carol" }],
    ["mesh", "whoami"],
    ["mesh", "history", { channel: "general" }],
    ["mesh", "register", { role: "reviewer" }],
    ["artifact", "artifact-get", { digest: "0".repeat(64) }],
    ["manager", "run", {}],
    ["xfer", "xfer-remove", {}],
  ];
  return calls.map(([endpoint, command, args]) => ({ subject: controlSubject(SPACE, endpoint, "one", command, who), payload: request(who, args) }));
}

/**
 * Every other import of the clients account (broker/auth/space-accounts.ts), made concrete: the
 * wildcard of an API subject becomes each stream (or the caller's own durable) it may name, a
 * bucket's becomes the caller's key, `$JS.ACK` an ack of the caller's durable. Writes carry an
 * expected last sequence nothing has, so JetStream answers with a refusal and stores nothing.
 */
function importTargets(who: Principal): Target[] {
  const durableOf: Record<string, string> = {
    [names.chatStream(SPACE)]: durables.channel(who, "general"),
    [names.dmStream(SPACE)]: durables.dm(who),
    [names.taskStream(SPACE)]: durables.anycast("reviewer"),
  };
  const streams = [names.dmStream(SPACE), names.seatsStream(SPACE), `KV_${names.managersBucket(SPACE)}`, `KV_${names.channelsBucket(SPACE)}`];
  const pull = JSON.stringify({ batch: 1, no_wait: true });
  // Posts, DMs and beats are stored or read by the data account, which answers on the reply.
  const out: Target[] = [chatSubject(SPACE, who, "general"), dmSubject(SPACE, localPrincipal("carol"), who), beatSubject(SPACE, who)].map((subject) => ({
    subject,
    payload: "{}",
    refuseWrite: true,
  }));
  for (const { subject } of clientServices(SPACE)) {
    const [head, ...rest] = subject.split(/\.(?=[*>]$)/);
    const wild = rest[0];
    if (subject.startsWith(`cotal.${SPACE}.`)) {
      continue; // the space's own subjects: the control calls and the writes below
    } else if (subject.startsWith("$KV.")) {
      out.push({ subject: `${subject.slice(0, -2)}.${who.owner}.${who.actor}`, payload: "{}", refuseWrite: true });
    } else if (subject.startsWith("$JS.ACK.")) {
      const stream = subject.split(".")[2]!;
      out.push({ subject: `$JS.ACK.${stream}.${durableOf[stream]}.1.1.1.${Date.now()}000000.0`, payload: "+ACK" });
    } else if (wild === undefined) {
      out.push({ subject, payload: "{}" }); // STREAM.NAMES
    } else if (head!.startsWith(`${JS_API}.CONSUMER.`)) {
      const stream = head!.split(".").at(-1)!;
      out.push({ subject: `${head}.${durableOf[stream]}`, payload: head!.includes(".MSG.NEXT.") ? pull : "{}" });
    } else {
      const body = head!.endsWith(".MSG.GET") ? JSON.stringify({ seq: 1 }) : "{}";
      for (const s of streams) out.push({ subject: `${head}.${s}`, payload: body });
    }
  }
  return out;
}

/** What each request met: the broker's permission refusal, an answer on the wildcard reply, or neither. */
type Outcome = "refused" | "answered" | "silent";

/**
 * Whether the mesh service answers a ping from a new connection. One unanswered ping proves
 * little: on 2.10.27 an answer to a wildcard reply drops every in-flight reply through the
 * import that the wildcard covers (see the last test), so callers ask again.
 */
async function pingAnswered(): Promise<boolean> {
  const cli = await mesh.connection(mesh.cliCreds);
  try {
    return (await callControl(cli, SPACE, "ping", SERVICE_PRINCIPALS.cli, {}, { timeoutMs: 2_000 })).space === SPACE;
  } finally {
    await cli.close();
  }
}

/** The server process is alive and the mesh service answers a ping through it (a dead server fails at once, with its output). */
async function expectServerUp(after: string): Promise<void> {
  await until(async () => !mesh.server.running || (await pingAnswered()), 30_000, `the mesh service to answer a ping after ${after}`);
  expect(mesh.server.running, `nats-server exited after ${after}; its last output:\n${mesh.server.logs()}`).toBe(true);
}

describe.each(Object.keys(PROFILES))("%s: requests with wildcard reply subjects", (profile) => {
  test("to the control rail, every imported JetStream API and bucket, and $JS.ACK leave the server up", async ({ annotate }) => {
    const mint = PROFILES[profile]!(`w${profile.replace(/\W/g, "")}`);
    const creds = await mesh.mint(mint);
    // A leaf acts as its host's identities: its host's manager (`wleaf` for `wleaf_leaf`).
    const name = profile === "leaf" ? mint.name.slice(0, -"_leaf".length) : mint.name;
    const who = localPrincipal(name);
    const nc: NatsConnection = await mesh.connection(creds, `_INBOX.local.${name}`);
    const refused = new Set<string>();
    void (async () => {
      for await (const s of nc.status()) {
        const pv = s.type === "error" ? permissionViolation(s.error) : undefined;
        if (pv?.operation === "publish") refused.add(pv.subject);
      }
    })();
    const answered = new Set<string>();
    nc.subscribe(`_INBOX.local.${name}.>`, { callback: (err, m) => void (!err && answered.add(m.subject.split(".")[3]!)) });

    // Real acks of delivered DMs, confirmation asked on each wildcard reply (profiles with an inbox
    // durable). Fetched first, all at once: on 2.10.27 an answer to a wildcard reply drops the
    // caller's own requests then in flight (the last test), a pull's included.
    if (profile === "agent" || profile === "scoped reader") {
      const replies = wildcardReplies(who, "ack");
      for (const _ of replies) await carol.dm(name, "bait");
      const consumer = await jetstream(jetStreamConnection(nc, creds), { ...JS_OPTIONS, timeout: 30_000 }).consumers.get(
        names.dmStream(SPACE),
        durables.dm(who),
      );
      const baits: JsMsg[] = [];
      await until(
        async () => {
          for await (const m of await consumer.fetch({ max_messages: replies.length - baits.length, expires: 2_000 })) baits.push(m);
          return baits.length === replies.length;
        },
        30_000,
        `${replies.length} DMs to ack`,
      );
      baits.forEach((m, i) => nc.publish((m as unknown as { reply: string }).reply, "+ACK", { reply: replies[i] }));
    }
    const targets = [...controlTargets(who), ...importTargets(who)];
    const refuse = headers();
    refuse.set("Nats-Expected-Last-Subject-Sequence", "999999999");
    targets.forEach((t, i) => {
      for (const reply of wildcardReplies(who, `t${i}`)) nc.publish(t.subject, t.payload, { reply, ...(t.refuseWrite ? { headers: refuse } : {}) });
    });
    await nc.flush();
    // The mesh service answers in order: once it answers a ping sent now, it has answered the barrage.
    await expectServerUp(`the ${profile}'s requests`);
    // Closing the connection drops its inbox subscription: 2.9.10 ran the same reverse-entry check then.
    await nc.close();
    await expectServerUp(`the ${profile}'s connection closed`);

    const outcome = (t: Target, i: number): Outcome => (refused.has(t.subject) ? "refused" : answered.has(`t${i}`) ? "answered" : "silent");
    const table = targets.map((t, i) => `${outcome(t, i).padEnd(8)} ${t.subject}`);
    await annotate(`${profile}:\n${table.join("\n")}`);
    // The barrage was real: some of it crossed the imports and was answered on a wildcard reply.
    expect(answered.size, "no request of this profile was answered").toBeGreaterThan(0);
  });
});

test("afterwards `cotal status` answers: server reachable, mesh service answering, streams there", async () => {
  await expectServerUp("every profile's requests");
  const r = await runCotal(["status", "--server", mesh.server.url, "--space", SPACE, "--creds", mesh.cliCreds, "--json"], { cwd: tmpdir(), env: cleanEnv() });
  expect(r.code, r.stderr).toBe(0);
  const status = r.json<{ reachable: boolean; meshService?: { answering: boolean }; streams: Array<{ exists: boolean }> }>();
  expect(status).toMatchObject({ reachable: true, meshService: { answering: true } });
  expect(status.streams.length).toBeGreaterThan(0);
  expect(status.streams.every((s) => s.exists)).toBe(true);
});

/**
 * What 2.10.27 still does (docs/security.md, residual risks): when an answer to a wildcard reply
 * crosses back, the server's clean-up may drop in-flight replies through the import that the
 * wildcard covers, another client's included (seen here alone: that request timed out). Whether it
 * does depends on the order the server handles the two answers in, so under load the wildcard case
 * is not pinned; what is pinned is that a literal reply's answer never disturbs another's request.
 */
test.each([["_INBOX.local.whostb_leaf.x", "is answered"]])(
  "an answer to reply %s while the operator's request is in flight: the operator's %s",
  async (reply, fate) => {
    const held: Msg[] = [];
    const [victimBeat, attackerBeat] = ["victim", "attacker"].map((n) => beatSubject(SPACE, localPrincipal(n))) as [string, string];
    const subs = [victimBeat, attackerBeat].map((s) => mesh.serviceConnection.subscribe(s, { callback: (err, m) => void (!err && held.push(m)) }));
    await mesh.serviceConnection.flush();
    const victim = await mesh.connection(mesh.cliCreds);
    // The leaf acts as its host's seats: "attacker" is one, minted through it by its host's manager.
    const leafCreds = await mesh.mint({ name: "whostb_leaf", profile: "leaf" });
    await mesh.mint({ name: "whostb", profile: "manager" });
    const asHost = await mesh.connection(leafCreds, "_INBOX.local.whostb");
    await callControl(asHost, SPACE, "mint", localPrincipal("whostb"), { name: "attacker", profile: "agent", userPub: createUser().getPublicKey() });
    await asHost.close();
    const attacker = await mesh.connection(leafCreds, "_INBOX.local.attacker");
    await until(
      () =>
        callControl(attacker, SPACE, "ping", localPrincipal("attacker"), {}, { timeoutMs: 500 }).then(
          () => true,
          () => false,
        ),
      15_000,
      "the hub to carry the leaf's seat",
    );
    try {
      const answer = victim.request(victimBeat, "{}", { timeout: 5_000 }).then(
        (m) => m.string(),
        (err: unknown) => (isTimeout(err) ? "times out" : String(err)),
      );
      await until(() => held.length === 1, 10_000, "the operator's request to reach the data account");
      attacker.publish(attackerBeat, "{}", { reply });
      await until(() => held.length === 2, 10_000, "the wildcard-reply request to reach the data account");
      held[1]!.respond("to the attacker");
      await mesh.serviceConnection.flush(); // the server has handled that answer (and its clean-up)
      held[0]!.respond("is answered");
      expect(await answer).toBe(fate);
      expect(mesh.server.running).toBe(true);
    } finally {
      for (const sub of subs) sub.unsubscribe();
      await attacker.close();
      await victim.close();
    }
  },
);
