// Credential files checked before connecting: a real NATS user credential passes; garbage, a JWT
// without its seed and a file other users could read are refused, naming the fix.
import { chmodSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fmtCreds, encodeUser } from "@nats-io/jwt";
import { createAccount, createUser } from "@nats-io/nkeys";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credsProblem, InsecureSecretError, InvalidCredsError, readCredsFile } from "../../broker/internal.js";
import { exitCodeOf } from "../../cli/terminal/errors.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cotal-harden-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function userCreds(): Promise<string> {
  const account = createAccount();
  const user = createUser();
  const jwt = await encodeUser("alice", user, account);
  return new TextDecoder().decode(fmtCreds(jwt, user));
}

describe("credential files", () => {
  it("a real NATS user credential passes; garbage, a JWT without its seed, or someone else's seed is named as not a credential", async () => {
    const good = await userCreds();
    expect(credsProblem(new TextEncoder().encode(good))).toBeUndefined();
    expect(credsProblem(new TextEncoder().encode("hello"))).toMatch(/no NATS USER JWT/);
    expect(credsProblem(new TextEncoder().encode(good.replace(/^SU[A-Z2-7]+$/m, "SUNOTASEED")))).toMatch(/seed is malformed/);
    const other = await userCreds();
    const swapped = good.replace(/-----BEGIN USER NKEY SEED-----[\s\S]*$/, other.slice(other.indexOf("-----BEGIN USER NKEY SEED-----")));
    expect(credsProblem(new TextEncoder().encode(swapped))).toMatch(/does not belong/);
  });

  it("a credential other users could read is refused with the chmod that fixes it; garbage names the file; both are bad input (exit 2)", async () => {
    const file = join(dir, "wide.creds");
    writeFileSync(file, await userCreds(), { mode: 0o644 });
    chmodSync(file, 0o644);
    let err: unknown;
    try {
      readCredsFile(file);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InsecureSecretError);
    expect((err as Error).message).toContain(file);
    expect((err as InsecureSecretError).remedy).toContain(`chmod 600 ${file}`);
    expect(exitCodeOf(err)).toBe(2);
    chmodSync(file, 0o600);
    expect(readCredsFile(file).length).toBeGreaterThan(0);

    const junk = join(dir, "junk.creds");
    writeFileSync(junk, "not a credential\n", { mode: 0o600 });
    expect(() => readCredsFile(junk)).toThrow(InvalidCredsError);
    expect(() => readCredsFile(junk)).toThrow(`The credential file ${junk} is not a valid NATS credential`);
    expect(exitCodeOf(new InvalidCredsError(junk, "x"))).toBe(2);
  });
});
