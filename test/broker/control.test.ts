// The control rail's refusals, each with its code and outcome: a caller's name comes from the
// subject and the body must agree, a late request is not run, unknown commands and malformed
// requests are not run, and a handler's failure says whether it may have run.
import { randomUUID } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { z } from "zod";
import { controlCaller, ControlCallError, logger, MeshServiceUnavailableError, serveControl } from "../../broker/index.js";
import { controlSubject, CotalError, localPrincipal, MESH_COMMANDS } from "../../schemas/index.js";
import { NatsServer } from "../../testbed/nats-server.js";
import { connect } from "@nats-io/transport-node";

const alice = localPrincipal("alice");

/** The rail's test commands: `ep1` echoes and fails on purpose; `fake` and `absent` are served by nobody real. */
const anyReply = z.unknown();
const RAIL = {
  echo: {
    endpoint: "ep1",
    summary: "echo",
    args: z.object({ x: z.number().optional() }),
    reply: z.object({ echoed: z.record(z.string(), z.unknown()), caller: z.object({ owner: z.string(), actor: z.string() }) }),
  },
  refuse: { endpoint: "ep1", summary: "refuse", args: z.object({}), reply: anyReply },
  crash: { endpoint: "ep1", summary: "crash", args: z.object({}), reply: anyReply },
  crashOdd: { endpoint: "ep1", summary: "crash oddly", args: z.object({}), reply: anyReply },
} as const;
const FAKE = {
  notjson: { endpoint: "fake", summary: "", args: z.object({}), reply: anyReply },
  shape: { endpoint: "fake", summary: "", args: z.object({}), reply: anyReply },
  absent: { endpoint: "absent", summary: "", args: z.object({}), reply: anyReply },
} as const;
const callControl = controlCaller(RAIL);
const callFake = controlCaller(FAKE);
// The rail itself, on an open server in both suite modes (who may publish what is test/auth's).
let nats: NatsServer;
beforeAll(async () => {
  nats = await NatsServer.start();
});
afterAll(async () => {
  await nats?.cleanup();
});
const conns: NatsConnection[] = [];
afterEach(async () => {
  await Promise.all(conns.splice(0).map((c) => c.close().catch(() => undefined)));
});

async function conn(nats: NatsServer): Promise<NatsConnection> {
  const nc = await connect({ servers: nats.url });
  conns.push(nc);
  return nc;
}

/** Serve an echo endpoint `ep` in space `rail`; `ran` counts handler runs. */
async function echo(nats: NatsServer) {
  const nc = await conn(nats);
  const ran: Array<{ args: { x?: number | undefined }; caller: string }> = [];
  serveControl(
    nc,
    "rail",
    "ep1",
    RAIL,
    {
      echo: async (args, caller) => {
        ran.push({ args, caller: `${caller.owner}.${caller.actor}` });
        return { echoed: args, caller };
      },
      refuse: async () => {
        throw new CotalError("nope", "Refused for a reason.");
      },
      crash: async () => {
        throw new Error("boom");
      },
      crashOdd: async () => {
        throw "a string";
      },
    },
    logger("rail-test"),
  );
  await nc.flush();
  return { ran };
}

/** Send a raw request body to a control subject and parse the reply. */
async function raw(nc: NatsConnection, subject: string, body: string): Promise<Record<string, unknown>> {
  const msg = await nc.request(subject, new TextEncoder().encode(body), { timeout: 3_000 });
  return JSON.parse(new TextDecoder().decode(msg.data)) as Record<string, unknown>;
}

const subject = (command: string, caller = alice) => controlSubject("rail", "ep1", "one", command, caller);
const body = (over: Record<string, unknown> = {}) => JSON.stringify({ id: "r1", deadline: Date.now() + 5_000, caller: "local.alice", args: {}, ...over });

describe("the control rail", () => {
  test("a call runs the handler with the caller from the subject and returns its data", async () => {
    const { ran } = await echo(nats);
    const nc = await conn(nats);
    const r = await callControl(nc, "rail", "echo", alice, { x: 1 });
    expect(r).toEqual({ echoed: { x: 1 }, caller: alice });
    expect(ran).toEqual([{ args: { x: 1 }, caller: "local.alice" }]);
  });

  test("refusals carry their code, the request id and outcome not-executed, and the handler never runs", async () => {
    const { ran } = await echo(nats);
    const nc = await conn(nats);
    const cases: Array<[string, string, { id: string; code: string }]> = [
      ["a body naming another caller", body({ caller: "local.mallory" }), { id: "r1", code: "forged-caller" }],
      ["a deadline already passed", body({ deadline: Date.now() - 1_000 }), { id: "r1", code: "deadline-passed" }],
      ["a body that is not JSON", "{nope", { id: "", code: "invalid-request" }],
      ["a body without a caller", JSON.stringify({ id: "r1", deadline: Date.now() + 5_000, args: {} }), { id: "", code: "invalid-request" }],
    ];
    for (const [what, b, expected] of cases) {
      const r = await raw(nc, subject("echo"), b);
      expect(r, what).toMatchObject({ id: expected.id, ok: false, error: { code: expected.code, outcome: "not-executed" } });
    }
    const unknown = await raw(nc, subject("nosuch"), body());
    expect(unknown).toMatchObject({ id: "r1", ok: false, error: { code: "unknown-command", message: "unknown command nosuch", outcome: "not-executed" } });
    expect(ran).toEqual([]);
  });

  test("a domain refusal keeps its code and says not-executed; a crash says the outcome is unknown", async () => {
    await echo(nats);
    const nc = await conn(nats);
    const refused = await callControl(nc, "rail", "refuse", alice).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ControlCallError);
    expect(refused).toMatchObject({ code: "nope", outcome: "not-executed", command: "refuse" });
    expect(String((refused as Error).message)).toContain("Refused for a reason.");
    const crashed = await callControl(nc, "rail", "crash", alice).catch((e: unknown) => e);
    expect(crashed).toMatchObject({ code: "internal", outcome: "unknown" });
    expect(String((crashed as Error).message)).toContain("boom");
    const odd = await callControl(nc, "rail", "crashOdd", alice).catch((e: unknown) => e);
    expect(odd).toMatchObject({ code: "internal", outcome: "unknown" });
    expect(String((odd as Error).message)).toContain("a string");
  });

  test("a reply that is not a control reply is a bad-reply with an unknown outcome", async () => {
    const nc = await conn(nats);
    const fake = await conn(nats);
    fake.subscribe("cotal.rail.ep.fake.one.*.*.*", {
      callback: (_e, m) => void m.respond(new TextEncoder().encode(m.subject.includes(".notjson.") ? "<html>" : JSON.stringify({ hello: randomUUID() }))),
    });
    await fake.flush();
    for (const command of ["notjson", "shape"] as const) {
      const err = await callFake(nc, "rail", command, alice).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ControlCallError);
      expect(err).toMatchObject({ code: "bad-reply", outcome: "unknown" });
    }
  });

  test("nobody serving the endpoint: the mesh service is unavailable, said at once", async () => {
    const nc = await conn(nats);
    const started = Date.now();
    const err = await callFake(nc, "rail", "absent", alice, {}, { timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MeshServiceUnavailableError);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe("a read lost on the way is asked again", () => {
  /** A service on `rail` that drops the first request of each id it sees and answers the rest; `seen` counts requests per command. */
  async function losesFirst(nats: NatsServer) {
    const nc = await conn(nats);
    const seen = new Map<string, number>();
    const ids = new Set<string>();
    nc.subscribe("cotal.rail.ep.mesh.one.*.*.*", {
      callback: (_err, msg) => {
        const command = msg.subject.split(".")[5]!;
        seen.set(command, (seen.get(command) ?? 0) + 1);
        const { id } = JSON.parse(msg.string()) as { id: string };
        if (!ids.has(id)) return void ids.add(id); // lost: a connection cut with it unread
        msg.respond(JSON.stringify({ id, ok: true, data: { space: "rail", pid: 1, revoked: 0, principal: "local.bob" } }));
      },
    });
    await nc.flush();
    return seen;
  }

  test("a read (ping) is sent once more, with the same id, when half its time passed unanswered: answered", async () => {
    const seen = await losesFirst(nats);
    const mesh = controlCaller(MESH_COMMANDS);
    await expect(mesh(await conn(nats), "rail", "ping", alice, {}, { timeoutMs: 1_000 })).resolves.toMatchObject({ space: "rail" });
    expect(seen.get("ping")).toBe(2);
  });

  test("a read that meets nobody serving it (the service's connection cut, not back yet) is asked again until it is served; a command is not", async () => {
    const mesh = controlCaller(MESH_COMMANDS);
    const nc = await conn(nats);
    const pinged = mesh(nc, "gap", "ping", alice, {}, { timeoutMs: 4_000 });
    const refused = await mesh(nc, "gap", "revoke", alice, { name: "bob" }, { timeoutMs: 4_000 }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ reason: "no-responders" });
    // The service comes back: its subscription is made again.
    await new Promise((r) => setTimeout(r, 300));
    const back = await conn(nats);
    back.subscribe("cotal.gap.ep.mesh.one.*.*.*", {
      callback: (_err, msg) => {
        const { id } = JSON.parse(msg.string()) as { id: string };
        msg.respond(JSON.stringify({ id, ok: true, data: { space: "gap", pid: 1, revoked: 0, principal: "local.bob" } }));
      },
    });
    await back.flush();
    await expect(pinged).resolves.toMatchObject({ space: "gap" });
  });

  test("a command that changes something (revoke) is never sent twice: it times out", async () => {
    const seen = await losesFirst(nats);
    const mesh = controlCaller(MESH_COMMANDS);
    await expect(mesh(await conn(nats), "rail", "revoke", alice, { name: "bob" }, { timeoutMs: 1_000 })).rejects.toBeInstanceOf(MeshServiceUnavailableError);
    expect(seen.get("revoke")).toBe(1);
  });
});
