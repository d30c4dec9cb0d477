// A mesh whose clients account was signed before the control rail's import shared who asks (issue
// 25, route 2) is signed again by the next `cotal up` (AuthStore.ensureSpace): without the share the
// mesh service could not tell a leaf host from the operator, and refuses mint and revoke. A store
// that is up to date is left alone (a re-signing re-mints the host's service credentials).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeAccount, type Import } from "@nats-io/jwt";
import { afterAll, expect, test } from "vitest";
import { AuthStore, clientsAccount, DEFAULT_CLIENT_CONNECTIONS, PROFILE_LIMITS, writeSecret } from "../../broker/index.js";

const dir = mkdtempSync(join(tmpdir(), "cotal-upgrade-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a clients account signed with the old imports is signed again on up; an up-to-date one is not", async () => {
  const store = await AuthStore.open(join(dir, "auth"));
  expect((await store.ensureSpace("default")).created).toBe(true);
  expect((await store.ensureSpace("default")).created).toBe(false);
  // What earlier versions signed: one import of the whole space, sharing nothing.
  const old: Import = { name: "cotal", subject: "cotal.default.>", account: store.accountKey("default").getPublicKey(), type: "service" } as Import;
  const jwt = await encodeAccount("clients:default", store.accountKey(clientsAccount("default")), { imports: [old] }, { signer: store.operatorKey() });
  writeSecret(store.path("clients", "default.jwt"), jwt);
  expect((await store.ensureSpace("default")).created).toBe(true);
  const claims = JSON.parse(Buffer.from(store.accountJwt(clientsAccount("default")).split(".")[1]!, "base64url").toString("utf8")) as {
    nats: { imports: Array<{ subject: string; share?: boolean }> };
  };
  expect(claims.nats.imports.filter((i) => i.share).map((i) => i.subject)).toEqual(["cotal.default.ep.>"]);
  expect((await store.ensureSpace("default")).created).toBe(false);
});

/** The `nats` claims of an account as the store signed them. */
function signedClaims(store: AuthStore, account: string): Record<string, unknown> & { limits: Record<string, unknown> } {
  return (JSON.parse(Buffer.from(store.accountJwt(account).split(".")[1]!, "base64url").toString("utf8")) as { nats: never }).nats;
}

test("accounts signed before they carried bounds are signed again on up with the table's; --max-connections stays", async () => {
  const store = await AuthStore.open(join(dir, "auth-limits"));
  await store.ensureSpace("default");
  // What earlier versions signed: the same claims, every limit unlimited.
  for (const account of ["default", clientsAccount("default")]) {
    const { limits, ...rest } = signedClaims(store, account);
    const unlimited = { ...limits, conn: -1, subs: -1, payload: -1, leaf: -1, ...(account === "default" ? { consumer: -1 } : {}) };
    const old = await encodeAccount(account.replace("/", ":"), store.accountKey(account), { ...rest, limits: unlimited } as never, {
      signer: store.operatorKey(),
    });
    writeSecret(store.path(account === "default" ? "accounts" : "clients", "default.jwt"), old);
  }
  expect((await store.ensureSpace("default")).created).toBe(true);
  expect(signedClaims(store, clientsAccount("default")).limits).toMatchObject({
    conn: DEFAULT_CLIENT_CONNECTIONS,
    subs: PROFILE_LIMITS.mesh.subs,
    payload: PROFILE_LIMITS.mesh.payload,
  });
  expect(signedClaims(store, "default").limits).toMatchObject({ consumer: 10_000 });
  expect((await store.ensureSpace("default")).created).toBe(false);
  // `cotal up --max-connections 40`, then a plain `cotal up`: 40 stays.
  expect((await store.ensureSpace("default", { connections: 40 })).created).toBe(true);
  expect((await store.ensureSpace("default")).created).toBe(false);
  expect(signedClaims(store, clientsAccount("default")).limits.conn).toBe(40);
});
