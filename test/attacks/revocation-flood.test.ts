// The hole this closes: a manager credential minted and revoked ~11k names; the clients account's JWT
// passed 1 MB (`max_payload exceeded`) and every later `cotal revoke` failed, the operator's too,
// while revoked names kept working; revocations were never pruned. Here the same flood against a
// real operator-mode server, with the limits lowered by the mesh service's options (the defaults,
// 1,000 per minter, 30 days, 6,000 and 9,000 revocations, are the same code with bigger numbers).
import { createUser } from "@nats-io/nkeys";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { callControl, clientsAccount, ControlCallError, requestRevoke } from "../../broker/internal.js";
import { localPrincipal, type Principal } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const SPACE = "flood";
// Long enough that nothing the flood got expires before the third test waits for it.
const LIFETIME_MS = 15_000;
const PER_MINTER = 12;
const MINTERS_CAP = 20;
const MAX_REVOCATIONS = 30;

let mesh: TestMesh;
/** When the last credential a flood got expires (ms). */
let floodExpiry = 0;

beforeAll(async () => {
  mesh = await TestMesh.startStatic(SPACE, {
    mintLimits: { maxLifetimeMs: LIFETIME_MS, perMinter: PER_MINTER, mintersRevocationCap: MINTERS_CAP, maxRevocations: MAX_REVOCATIONS },
  });
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

/** Revocations in the clients account's JWT, as last pushed to the server. */
function revocationsInJwt(): number {
  const claims = JSON.parse(Buffer.from(mesh.store.accountJwt(clientsAccount(SPACE)).split(".")[1]!, "base64url").toString("utf8")) as {
    nats: { revocations?: Record<string, number> };
  };
  return Object.keys(claims.nats.revocations ?? {}).length;
}

function mintArgs(name: string, expiresInMs?: number) {
  return {
    name,
    profile: "agent" as const,
    allowSubscribe: [],
    allowPublish: [],
    provision: false,
    userPub: createUser().getPublicKey(),
    ...(expiresInMs ? { expiresInMs } : {}),
  };
}

/** Mint and revoke as `who` until the mesh service refuses; the refusal, and how many got through. */
async function flood(who: Principal, prefix: string): Promise<{ done: number; refusal: ControlCallError; expiresAt: number[] }> {
  const nc = await mesh.connection(await mesh.mint({ name: who.actor, profile: "manager" }), `_INBOX.local.${who.actor}`);
  const expiresAt: number[] = [];
  for (let i = 0; i < 100; i++) {
    const r = await callControl(nc, SPACE, "mint", who, mintArgs(`${prefix}${i}`)).catch((e: unknown) => e);
    if (r instanceof ControlCallError) return { done: i, refusal: r, expiresAt };
    if (r instanceof Error) throw r;
    expiresAt.push((r as { expiresAt: number }).expiresAt);
    floodExpiry = Math.max(floodExpiry, (r as { expiresAt: number }).expiresAt);
    await requestRevoke(nc, SPACE, `${prefix}${i}`, who);
  }
  throw new Error(`${who.actor} minted 100 credentials without a refusal`);
}

/** The operator mints `name` (no expiry) and revokes it: true when the credential is then refused by the server. */
async function operatorRevokes(name: string): Promise<true | ControlCallError> {
  const creds = await mesh.mint({ name, profile: "agent" });
  const cli = await mesh.connection(mesh.cliCreds);
  const r = await requestRevoke(cli, SPACE, name).catch((e: unknown) => e);
  if (r instanceof ControlCallError) return r;
  if (r instanceof Error) throw r;
  await expect(mesh.connection(creds, `_INBOX.local.${name}`)).rejects.toThrow(/Authorization Violation/i);
  return true;
}

describe("revocation stays bounded and working under a mint flood", () => {
  test("one manager's flood stops at its limit, every credential it got expires, and the operator's revoke still works", async () => {
    const before = Date.now();
    const f = await flood(localPrincipal("floodmgr"), "fa");
    expect(f.done).toBe(PER_MINTER);
    expect(f.refusal.code).toBe("mint-limit");
    expect(f.refusal.message).toMatch(/already holds 12 unexpired credentials/);
    // Asked for no expiry, each got the longest a manager's mint may live.
    for (const t of f.expiresAt) expect(t).toBeLessThanOrEqual(Date.now() + LIFETIME_MS);
    for (const t of f.expiresAt) expect(t).toBeGreaterThan(before);
    expect(revocationsInJwt()).toBe(PER_MINTER);
    expect(await operatorRevokes("alice")).toBe(true);
  });

  test("a second flooder is stopped when the list nears full, and the operator keeps the rest", async () => {
    const f = await flood(localPrincipal("floodmgr2"), "fb");
    expect(f.refusal.code).toBe("mint-refused");
    expect(f.refusal.message).toMatch(/revocation list holds 20 revocations/);
    expect(revocationsInJwt()).toBe(MINTERS_CAP);
    for (let i = 0; revocationsInJwt() < MAX_REVOCATIONS; i++) expect(await operatorRevokes(`op${i}`)).toBe(true);
    // Full: the next revocation fails loudly, typed, and nothing half-done is pushed.
    const refused = await operatorRevokes("one_too_many");
    expect(refused).toBeInstanceOf(ControlCallError);
    expect((refused as ControlCallError).code).toBe("revocation-list-full");
    expect(revocationsInJwt()).toBe(MAX_REVOCATIONS);
  });

  test("once the flood's credentials expire their revocations drop out: the operator revokes again and the manager may mint again", async () => {
    expect(await operatorRevokes("still_full")).toBeInstanceOf(ControlCallError);
    await until(() => Date.now() > floodExpiry + 1_000, LIFETIME_MS + 5_000, "every credential the floods got to expire");
    expect(await operatorRevokes("late")).toBe(true);
    // The flooders' expired revocations are gone; the operator's (no expiry) stay: alice, op0…op9, and this one.
    expect(revocationsInJwt()).toBe(1 + (MAX_REVOCATIONS - MINTERS_CAP) + 1);
    const nc = await mesh.connection(await mesh.mint({ name: "floodmgr", profile: "manager" }), "_INBOX.local.floodmgr");
    const again = await callControl(nc, SPACE, "mint", localPrincipal("floodmgr"), mintArgs("fa_again", 1_000));
    expect(again.expiresAt).toBeDefined();
  });
});
