// A space's identity carried by a backup (cotal restore): the auth store it lands in signs with the
// backed-up keys, the store it replaces is kept aside, revocations made since on the same identity
// stay in force, and a backup missing a key changes nothing.
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createUser } from "@nats-io/nkeys";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { adoptSpaceIdentity, AuthStore, clientsAccount, IdentityIncompleteError, readSpaceIdentity } from "../../../broker/internal.js";

let base: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "cotal-identity-"));
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

async function storeWith(name: string, space: string): Promise<AuthStore> {
  const store = await AuthStore.open(join(base, name, "auth"));
  await store.ensureSpace(space);
  return store;
}

const clientsPub = (s: AuthStore, space: string) => s.accountKey(clientsAccount(space)).getPublicKey();

describe("adopting a backed-up space identity", () => {
  it("the new store holds the backed-up operator, accounts, signing key and revocations; the old one is kept aside", async () => {
    const source = await storeWith("a", "team");
    const revoked = createUser().getPublicKey();
    await source.writeAccountJwt(clientsAccount("team"), { [revoked]: 1_000 });
    const files = readSpaceIdentity(source, "team");
    expect(files.map((f) => f.path)).toEqual(expect.arrayContaining(["operator.nk", join("clients", "team.signing.nk"), join("creds", "sys.creds")]));
    expect(files.some((f) => f.path.includes("creds/team/"))).toBe(false); // service credentials are minted again

    const target = await storeWith("b", "team");
    const targetDir = target.dir;
    const adopted = await adoptSpaceIdentity(targetDir, "team", files);
    expect(adopted.sameIdentity).toBe(false);
    expect(adopted.replaced && existsSync(join(adopted.replaced, "operator.nk"))).toBe(true);
    const now = AuthStore.existing(targetDir)!;
    expect(clientsPub(now, "team")).toBe(clientsPub(source, "team"));
    expect(now.signingKey("team").getPublicKey()).toBe(source.signingKey("team").getPublicKey());
    expect(now.operatorKey().getPublicKey()).toBe(source.operatorKey().getPublicKey());
    expect(now.revocations(clientsAccount("team"))).toHaveProperty(revoked);
    expect(now.accountJwt(clientsAccount("team"))).toBe(source.accountJwt(clientsAccount("team")));
  });

  it("restored onto the mesh it came from, a revocation made after the backup stays in force", async () => {
    const store = await storeWith("a", "team");
    const backup = readSpaceIdentity(store, "team");
    const later = createUser().getPublicKey();
    await store.writeAccountJwt(clientsAccount("team"), { [later]: 2_000 });
    const adopted = await adoptSpaceIdentity(store.dir, "team", backup);
    expect(adopted).toMatchObject({ sameIdentity: true, revocationsKept: 1 });
    const now = AuthStore.existing(store.dir)!;
    expect(now.revocations(clientsAccount("team"))).toEqual({ [later]: 2_000 });
    const claims = JSON.parse(Buffer.from(now.accountJwt(clientsAccount("team")).split(".")[1]!, "base64url").toString()) as { nats: { revocations?: object } };
    expect(claims.nats.revocations).toHaveProperty(later);
  });

  it("a backup without the signing key changes nothing", async () => {
    const source = await storeWith("a", "team");
    const files = readSpaceIdentity(source, "team").filter((f) => !f.path.endsWith("signing.nk"));
    const target = await storeWith("b", "team");
    const before = clientsPub(target, "team");
    await expect(adoptSpaceIdentity(target.dir, "team", files)).rejects.toBeInstanceOf(IdentityIncompleteError);
    expect(clientsPub(AuthStore.existing(target.dir)!, "team")).toBe(before);
    expect(readdirSync(join(base, "b")).filter((n) => n.includes("incoming"))).toEqual([]); // the staging folder went
  });

  it("a path leaving the store is refused", async () => {
    const source = await storeWith("a", "team");
    const files = [...readSpaceIdentity(source, "team"), { path: "../escape", bytes: new Uint8Array([1]) }];
    const target = await storeWith("b", "team");
    await expect(adoptSpaceIdentity(target.dir, "team", files)).rejects.toBeInstanceOf(IdentityIncompleteError);
    expect(existsSync(join(base, "b", "escape"))).toBe(false);
  });
});
