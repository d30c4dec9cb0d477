// nats-server behaviours the account layout and the credential bounds work around (docs/security.md, "Account
// isolation"), checked on the server the suite runs (2.10+): when one of these tests fails, the
// server changed and the workaround it names can be reconsidered.
import { encodeUser, fmtCreds } from "@nats-io/jwt";
import { createUser, fromPublic } from "@nats-io/nkeys";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { clientsAccount, credsBytesAuthenticator, jetStreamConnection } from "../../broker/internal.js";
import { names } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { NatsServer } from "../../testbed/nats-server.js";
import { until } from "../../testbed/until.js";

const SPACE = "quirks";

describe("a JetStream API request from the clients account (broker/js-access.ts)", () => {
  let mesh: TestMesh;
  beforeAll(async () => {
    mesh = await TestMesh.startStatic(SPACE);
  });
  afterAll(async () => {
    await mesh?.close();
  });

  test("gets two answers: the server's own 'not enabled' stand-in and the data account's, which jetStreamConnection keeps", async () => {
    const nc = await mesh.connection(mesh.cliCreds);
    const subject = `$JS.API.STREAM.INFO.${names.dmStream(SPACE)}`;
    const answers: Array<{ error?: { err_code?: number }; config?: { name?: string } }> = [];
    // Ends once two came (a third would be a surprise too, but need not be waited for).
    for await (const m of await nc.requestMany(subject, "", { strategy: "count", maxMessages: 2, maxWait: 10_000 })) answers.push(m.json());
    expect(answers.map((a) => a.error?.err_code ?? a.config?.name).sort()).toEqual([10039, names.dmStream(SPACE)].sort());
    const kept = await jetStreamConnection(nc, mesh.cliCreds).request(subject, "", { timeout: 10_000 });
    expect(kept.json<{ config?: { name?: string } }>().config?.name).toBe(names.dmStream(SPACE));
  });
});

describe("a remapped wildcard service import (why the clients account imports under the exporter's own subjects)", () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await NatsServer.start({
      config: [
        "accounts {",
        '  DATA: { jetstream: enabled, users: [{ user: d, password: d }], exports: [{ service: "$JS.API.STREAM.INFO.*" }] }',
        '  CLIENTS: { users: [{ user: c, password: c }], imports: [{ service: { account: DATA, subject: "$JS.API.STREAM.INFO.*" }, to: "data.INFO.*" }] }',
        "}",
      ].join("\n"),
      ready: async () => undefined,
    });
  });
  afterAll(async () => {
    await server?.cleanup();
  });

  test("answers aimed at the remapped import, literal or wildcard, leave the server up and the import working", async () => {
    const c = await connect({ servers: server.url, user: "c", pass: "c" });
    try {
      const info = async () => (await c.request("data.INFO.NOPE", "", { timeout: 10_000 })).json<{ error?: { err_code?: number } }>().error?.err_code;
      expect(await info()).toBe(10059); // stream not found: the import reaches the data account's JetStream
      for (const reply of ["data.INFO.OTHER", "data.INFO.*", "data.INFO.>", "data.>", ">"]) c.publish("data.INFO.NOPE", "", { reply });
      await c.flush();
      expect(await info()).toBe(10059);
      expect(server.running, server.logs()).toBe(true);
    } finally {
      await c.close();
    }
  });
});

// What a user JWT bounds on nats-server 2.10 (broker/auth/credential-limits.ts): its `subs` and
// `payload` are enforced per connection, its `data` is not, and nothing counts one user's
// connections, which is why the mesh service does (broker/auth/connection-warden.ts).
describe("a user JWT's limits", () => {
  let mesh: TestMesh;
  beforeAll(async () => {
    mesh = await TestMesh.startStatic("ulim");
  });
  afterAll(async () => {
    await mesh?.close();
  });

  /** A user of the clients account with these limits and no profile tag (which the warden goes by). */
  async function user(limits: { subs?: number; payload?: number; data?: number }): Promise<Uint8Array> {
    const kp = createUser();
    const account = mesh.store.accountKey(clientsAccount("ulim")).getPublicKey();
    const perms = { pub: { allow: ["x.>"] }, sub: { allow: ["x.>"] }, issuer_account: account, ...limits };
    const jwt = await encodeUser("plain", kp, fromPublic(account), perms, { signer: mesh.store.signingKey("ulim") });
    return fmtCreds(jwt, kp);
  }

  test("data is not enforced: 100 × 900 bytes on `data: 5000` all arrive", async () => {
    const nc = await connect({ servers: mesh.server.url, authenticator: credsBytesAuthenticator(await user({ data: 5_000 })) });
    try {
      let got = 0;
      const sub = nc.subscribe("x.data", {
        callback: () => {
          got++;
        },
      });
      for (let i = 0; i < 100; i++) nc.publish("x.data", new Uint8Array(900));
      await until(() => got === 100, 5_000, "100 messages of 900 bytes to arrive");
      sub.unsubscribe();
    } finally {
      await nc.close();
    }
  });

  test("nothing counts one user's connections: 20 of the same user all stay", async () => {
    const creds = await user({ subs: 10 });
    const conns = await Promise.all(Array.from({ length: 20 }, () => connect({ servers: mesh.server.url, authenticator: credsBytesAuthenticator(creds) })));
    try {
      await Promise.all(conns.map((c) => c.flush()));
      expect(conns.filter((c) => c.isClosed())).toEqual([]);
    } finally {
      await Promise.all(conns.map((c) => c.close()));
    }
  });
});
