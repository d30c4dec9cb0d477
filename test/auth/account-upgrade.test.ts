// A mesh whose clients account was signed before the control rail's import shared who asks (issue
// 25, route 2) is signed again by the next `cotal up` (AuthStore.ensureSpace): without the share the
// mesh service could not tell a leaf host from the operator, and refuses mint and revoke. A store
// that is up to date is left alone (a re-signing re-mints the host's service credentials).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeAccount, type Import } from "@nats-io/jwt";
import { afterAll, expect, test } from "vitest";
import { AuthStore, clientsAccount, writeSecret } from "../../broker/index.js";

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
