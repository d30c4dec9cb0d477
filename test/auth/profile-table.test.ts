// docs/security.md's profile table, checked row by row against a real operator-mode server (issue
// 25: "states, per profile, what it may publish, subscribe and call, and the tests check that
// table against the broker"). The table is read from the doc itself, so a row the broker
// disagrees with fails here, either way: the doc says `yes` and the broker or the mesh service
// refuses, or it says `no` and the operation goes through. Every refusal is observed as the
// server's permission error or the service's typed error code, never as a timeout.
import { readFileSync } from "node:fs";
import { createUser } from "@nats-io/nkeys";
import { PermissionViolationError, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, describe, expect, test } from "vitest";
import { ControlCallError, type MintRequest, permissionViolation, requestControl, SERVICE_PRINCIPALS } from "../../broker/internal.js";
import { durables, localPrincipal, parsePrincipal, principalDashed, principalId, type Principal } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const SPACE = "ptable";
const DOC = new URL("../../docs/security.md", import.meta.url);

/** The identity minted for each profile column of the table (the names its legend uses). */
const COLUMNS: Record<string, Omit<MintRequest, "provision">> = {
  // An event plane's name in --allow-publish grants nothing (a plane is written by its own seat only).
  agent: { name: "ann", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general", "events.local.alice"], role: "reviewer" },
  // The same agent with the spawn right: the manager rail's spawn, despawn, personas and handover as itself.
  spawner: {
    name: "sam",
    profile: "agent",
    allowSubscribe: ["general"],
    allowPublish: ["general", "events.local.alice"],
    role: "reviewer",
    allowSpawn: ["helper"],
  },
  // An agent that may post nowhere: it still DMs, anycasts, beats and writes its presence key.
  "agent, no publish": { name: "quinn", profile: "agent", allowSubscribe: ["events.local.alice"] },
  // The scoped reader: it publishes nothing; a channel in its scope may be read durably.
  reader: { name: "watcher", profile: "reader", allowSubscribe: ["events.local.alice", "general"] },
  observer: { name: "olga", profile: "observer" },
  // A person (docs/security.md, People): speaks as itself everywhere, reads what an observer reads and its own DMs.
  person: { name: "pat", profile: "person" },
  admin: { name: "adam", profile: "admin" },
  manager: { name: "hostb", profile: "manager" },
  leaf: { name: "hostb_leaf", profile: "leaf" },
};

/**
 * A leaf acts as the identities of its host: its column's `<me>` is the seat its host's manager
 * minted through it, as `ann` (and `<seat>` that seat's own seat, minted there too, so the table's
 * mint as local.hostb widens nothing mid-run).
 */
const LEAF_SEATS: Array<Omit<MintRequest, "provision">> = [
  { ...COLUMNS.agent!, name: "hostb_seat" },
  { name: "hostb_seat_seat", profile: "agent" },
];

/** Error codes with which the mesh service refuses a call (any other error answers it: bad arguments, an unknown artifact). */
const REFUSALS = new Set(["not-allowed", "read-denied", "role-not-granted"]);

type Action = "publish" | "subscribe" | "call";
interface Row {
  action: Action;
  /** The subject or call as written in the doc, with its placeholders. */
  what: string;
  /** By column: `yes`, `no` (the broker refuses) or the code the mesh service refuses with. */
  expected: Record<string, string>;
}

/** The rows between the doc's `<!-- profile-table -->` markers: `| action | subject or call | <profile> … |`. */
function readTable(): { columns: string[]; rows: Row[] } {
  const doc = readFileSync(DOC, "utf8");
  const block = /<!-- profile-table -->([\s\S]*?)<!-- \/profile-table -->/.exec(doc)?.[1];
  if (!block) throw new Error("docs/security.md has no <!-- profile-table --> block");
  const lines = block.split("\n").filter((l) => l.startsWith("|"));
  const cells = (l: string) =>
    l
      .slice(1, -1)
      .split("|")
      .map((c) => c.trim().replace(/^`|`$/g, ""));
  const [head, , ...body] = lines.map(cells);
  const columns = head!.slice(2);
  const rows = body.map((c) => {
    const action = c[0] as Action;
    if (!["publish", "subscribe", "call"].includes(action)) throw new Error(`profile table: unknown action ${c[0]}`);
    return { action, what: c[1]!, expected: Object.fromEntries(columns.map((p, i) => [p, c[i + 2]!])) };
  });
  return { columns, rows };
}

const table = readTable();

let mesh: TestMesh | undefined;

/** The mesh with the table's other names, and a stand-in for every manager: it answers each request on the manager rail, so a call the broker lets through is answered. */
async function start(): Promise<TestMesh> {
  const m = (mesh = await TestMesh.startStatic(SPACE));
  await m.mint({ name: "alice", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"] });
  await m.mint({ name: "hostc", profile: "manager" });
  const cli = await m.connection(m.cliCreds);
  cli.subscribe(`cotal.${SPACE}.ep.manager.>`, {
    callback: (_err, msg) => {
      const { id } = JSON.parse(new TextDecoder().decode(msg.data)) as { id: string };
      msg.respond(JSON.stringify({ id, ok: true }));
    },
  });
  await cli.flush();
  return m;
}

/** The leaf credential, once its host's manager has minted LEAF_SEATS through it and the hub carries them. */
async function leafWithSeats(m: TestMesh): Promise<string> {
  const creds = await m.mint(COLUMNS.leaf!);
  const hostb = localPrincipal("hostb");
  // Each mint widens the leaf's scope: the hub remakes its connection, so the next waits for that.
  for (const spec of LEAF_SEATS) {
    const nc = await m.connection(creds, `_INBOX.${principalId(hostb)}`);
    await requestControl(nc, SPACE, "mesh", "mint", hostb, { ...spec, userPub: createUser().getPublicKey() });
    const seat = localPrincipal(spec.name);
    const probe = await m.connection(creds, `_INBOX.${principalId(seat)}`);
    await until(
      () =>
        requestControl(probe, SPACE, "mesh", "ping", seat, {}, { timeoutMs: 500 }).then(
          () => true,
          () => false,
        ),
      15_000,
      `the hub to carry the leaf's seat ${spec.name}`,
    );
    // A leaf credential may hold only a few client connections at once (PROFILE_LIMITS.leaf).
    await Promise.all([nc.close(), probe.close()]);
  }
  return creds;
}

afterAll(async () => {
  await mesh?.close();
});

/**
 * The doc's placeholders for one identity: `<space>`, `<me>`, `<me-dashed>`, `<seat>` (a name it
 * mints), `<ch:channel>` (its durable membership of that channel).
 */
function fill(text: string, me: Principal): string {
  return text
    .replaceAll("<space>", SPACE)
    .replace(/<ch:([^>]+)>/g, (_m, ch: string) => durables.channel(me, fill(ch, me)))
    .replaceAll("<me-dashed>", principalDashed(me))
    .replaceAll("<me>", principalId(me))
    .replaceAll("<seat>", `${me.actor}_seat`);
}

/**
 * The broker's permission errors on one connection. A refusal arrives before the answer to a PING
 * sent after the operation; the second round trip lets the client hand that error on first.
 */
function permissionErrors(nc: NatsConnection): { refused: (op: "publish" | "subscription", subject: string) => Promise<boolean> } {
  const seen: PermissionViolationError[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === "error" && s.error instanceof PermissionViolationError) seen.push(s.error);
  })();
  return {
    refused: async (op, subject) => {
      await nc.flush();
      await nc.flush();
      return seen.some((e) => e.operation === op && e.subject === subject);
    },
  };
}

/** `<endpoint>[@<target>].<command> [<json args>] as <caller>`. */
const CALL = /^(\w+)(?:@(\w+))?\.([\w-]+)(?: (\{.*\}))? as (\S+)$/;

/** What the broker and the mesh service did with one row: `yes`, `no` (the broker) or the service's refusal code. */
async function outcome(nc: NatsConnection, errors: ReturnType<typeof permissionErrors>, row: Row, me: Principal): Promise<string> {
  const what = fill(row.what, me);
  if (row.action === "publish") {
    nc.publish(what, "{}");
    return (await errors.refused("publish", what)) ? "no" : "yes";
  }
  if (row.action === "subscribe") {
    const sub = nc.subscribe(what);
    const refused = await errors.refused("subscription", what);
    if (!sub.isClosed()) sub.unsubscribe();
    return refused ? "no" : "yes";
  }
  const m = CALL.exec(what);
  if (!m) throw new Error(`profile table: a call must read '<endpoint>[@<target>].<command> [{args}] as <caller>', not '${what}'`);
  const [, endpoint, target, command, json, as] = m;
  const args = json ? (JSON.parse(json) as Record<string, unknown>) : {};
  if (command === "mint") Object.assign(args, { userPub: createUser().getPublicKey() });
  try {
    await requestControl(nc, SPACE, endpoint!, command!, parsePrincipal(as!), args, { timeoutMs: 5_000, ...(target ? { target } : {}) });
    return "yes";
  } catch (err) {
    if (permissionViolation(err)) return "no";
    if (err instanceof ControlCallError) return REFUSALS.has(err.code) ? err.code : "yes";
    // A timeout or "no responders" is neither answer: the row cannot be judged.
    return `neither answered nor refused (${String(err)})`;
  }
}

describe("docs/security.md's profile table holds against the broker", () => {
  test("the table names every profile and rows of every kind", () => {
    expect(table.columns).toEqual(Object.keys(COLUMNS));
    for (const action of ["publish", "subscribe", "call"]) expect(table.rows.filter((r) => r.action === action).length).toBeGreaterThan(5);
    for (const r of table.rows) for (const c of table.columns) expect(r.expected[c], `${r.what} / ${c}`).toMatch(/^(yes|no|[a-z-]+)$/);
  });

  // One test for every profile, its mesh started inside it rather than in a hook: a mutant (npm run
  // test:mutation) that breaks a mint or the mesh service's start then fails the test (a failing
  // hook only skips tests, which Stryker counts as survived), and every mutant the table reaches
  // is tried against every row (Stryker runs only the tests that reached a mutant).
  test("every profile, every row; and whoami names the profile minted", async () => {
    const m = await start();
    const wrong: string[] = [];
    for (const [column, spec] of Object.entries(COLUMNS)) {
      const me = localPrincipal(column === "leaf" ? LEAF_SEATS[0]!.name : spec.name);
      const nc = await m.connection(column === "leaf" ? await leafWithSeats(m) : await m.mint(spec), `_INBOX.${principalId(me)}`);
      const errors = permissionErrors(nc);
      for (const row of table.rows) {
        const got = await outcome(nc, errors, row, me);
        const want = row.expected[column]!;
        if (got !== want) wrong.push(`${column}: ${row.action} ${fill(row.what, me)}: the doc says ${want}, got ${got}`);
      }
      // The mesh service names the profile each credential was minted with (a leaf's own calls are refused above).
      if (spec.profile !== "leaf") expect(await requestControl(nc, SPACE, "mesh", "whoami", me)).toEqual({ principal: principalId(me), profile: spec.profile });
    }
    expect(wrong).toEqual([]);
    expect(await requestControl(await m.connection(m.cliCreds), SPACE, "mesh", "whoami", SERVICE_PRINCIPALS.cli)).toEqual({
      principal: "local.cotal_cli",
      profile: "cli",
    });
  });
});
