// What a credential says of itself, and the refusal that names its profile and what it may do.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAccount } from "@nats-io/nkeys";
import { afterAll, describe, expect, it } from "vitest";
import { mintCreds, type Profile } from "../../../broker/internal.js";
import { credentialLabel, credentialScope } from "../../../cli/identity/credential-scope.js";
import { describeError, exitCodeOf, ProfileRefusedError, requireProfile } from "../../../cli/terminal/errors.js";

const dir = mkdtempSync(join(tmpdir(), "cotal-edge-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function creds(actor: string, profile: Profile, expiresInMs?: number): Promise<string> {
  const account = createAccount();
  const { creds: bytes } = await mintCreds(
    { space: "team", who: { owner: "local", actor }, profile, ...(profile === "agent" ? { allowSubscribe: ["general"] } : {}) },
    account,
    account.getPublicKey(),
    expiresInMs,
  );
  const file = join(dir, `${actor}.creds`);
  writeFileSync(file, bytes, { mode: 0o600 });
  return file;
}

describe("what a credential says of itself", () => {
  it("names its principal, profile, space and expiry", async () => {
    const file = await creds("olga", "observer", 3_600_000);
    const scope = credentialScope(file);
    expect(scope).toMatchObject({ principal: "local.olga", profile: "observer", space: "team" });
    expect(scope!.expiresAt! - Date.now()).toBeGreaterThan(3_500_000);
    expect(credentialLabel(scope)).toBe("the observer credential of local.olga");
    expect(credentialScope(join(dir, "missing.creds"))).toBeUndefined();
  });

  it("the operator's own credential is named as such", async () => {
    const account = createAccount();
    const { creds: bytes } = await mintCreds({ space: "team", who: { owner: "local", actor: "cotal_cli" }, profile: "cli" }, account, account.getPublicKey());
    const file = join(dir, "cli.creds");
    writeFileSync(file, bytes, { mode: 0o600 });
    expect(credentialLabel(credentialScope(file))).toBe("the mesh host's operator credential");
  });
});

describe("a refusal names the profile and what it may do", () => {
  it("an admin may not send: exit 5, a sentence a person can act on", async () => {
    const file = await creds("adam", "admin");
    let caught: unknown;
    try {
      requireProfile(file, ["agent", "operator"], "send messages (post, DM or anycast)");
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ProfileRefusedError);
    expect(exitCodeOf(caught)).toBe(5);
    expect(describeError(caught)).toContain(
      "The admin credential of local.adam may not send messages (post, DM or anycast). An admin credential reads everything",
    );
  });

  it("an agent passes where agents may; no credential (an open mesh) passes too", async () => {
    const file = await creds("alice", "agent");
    expect(() => requireProfile(file, ["agent"], "x")).not.toThrow();
    expect(() => requireProfile(undefined, ["operator"], "x")).not.toThrow();
  });
});
