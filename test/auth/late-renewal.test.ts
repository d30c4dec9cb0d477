// A credential file renewed only after its credential expired (a `cotal up` that ran late in the
// manager credential's last third, or a manager down while its seats' credentials lapsed): the
// server has already cut the connection, and the first reconnect presented the expired file. A
// connection made to wait for renewal (connectMesh `awaitRenewal`) goes on trying and comes back on
// the renewed file; a plain one gives up, as nats.js does after two refusals in a row. The
// attacker's side: a credential revoked while it has not expired is not waited on.
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { connectMesh, credsClaims, requestRevoke } from "../../broker/internal.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

let mesh: TestMesh;
const dir = mkdtempSync(join(tmpdir(), "cotal-late-renewal-"));

beforeAll(async () => {
  mesh = await TestMesh.startStatic("late");
}, 120_000);

afterAll(async () => {
  await mesh?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A 3 s credential of `name` copied to `file`; resolves once it is in place, with its expiry (ms). */
async function shortCredential(name: string, file: string): Promise<number> {
  copyFileSync(await mesh.mint({ name, profile: "agent", expiresInMs: 3_000 }), file);
  return credsClaims(readFileSync(file))!.exp! * 1000;
}

describe("a connection whose credential file is renewed after the credential expired", () => {
  test("comes back on the renewed file when it waits for renewal; a plain connection gives up", async () => {
    const waiting = join(dir, "waiting.creds");
    const plain = join(dir, "plain.creds");
    await shortCredential("latew", waiting);
    const exp = await shortCredential("latep", plain);
    const w = await connectMesh({ server: mesh.server.url, creds: waiting, awaitRenewal: true });
    const p = await connectMesh({ server: mesh.server.url, creds: plain });
    const plainClosed = p.closed();
    // Both are cut at the expiry and refused again on the expired file; only then is it renewed.
    await until(() => Date.now() > exp + 2_000, 10_000, "the credentials to have expired a while");
    expect(await plainClosed, "the plain connection gave up after its refusals").toBeInstanceOf(Error);
    expect(w.isClosed()).toBe(false);
    copyFileSync(await mesh.mint({ name: "latew", profile: "agent", expiresInMs: 600_000 }), waiting);
    await until(
      async () =>
        await w.rtt().then(
          () => true,
          () => false,
        ),
      15_000,
      "the waiting connection to come back on the renewed file",
    );
    expect(w.isClosed()).toBe(false);
    await w.close();
  });

  test("an unexpired credential that is refused (revoked) ends the connection: it is not waited on", async () => {
    const file = join(dir, "revoked.creds");
    copyFileSync(await mesh.mint({ name: "laterev", profile: "agent", expiresInMs: 600_000 }), file);
    const c = await connectMesh({ server: mesh.server.url, creds: file, awaitRenewal: true });
    const closed = c.closed();
    const nc = await mesh.rawConnection();
    await requestRevoke(nc, mesh.space, "laterev");
    // It ends (this test would time out if it were waited on), and is not tried again.
    await closed;
    expect(c.isClosed()).toBe(true);
  });
});
