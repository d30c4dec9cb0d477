// Cotal derives and signs its nkeys with node:crypto (broker/auth/native-nkeys.ts), not nkeys'
// tweetnacl: every key text, private key and signature must be the one @nats-io/nkeys would have
// written, or a server would refuse what Cotal signed (Ed25519 signatures are deterministic, so
// they compare byte for byte). Then what Cotal connects with: the JWT, key and nonce signature
// nats.js's own credsAuthenticator would send, on a real operator-mode server.
import { randomBytes } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { encodeUser, fmtCreds } from "@nats-io/jwt";
import { createAccount, createCurve, createOperator, createUser, fromPublic, fromSeed, type KeyPair } from "@nats-io/nkeys";
import { credsAuthenticator as natsCredsAuthenticator } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { credsBytesAuthenticator, InvalidSeedError, newNkey, nkeyFromSeed, type NkeyRole } from "../../../broker/internal.js";
import { projectRoot } from "../../harness/cli.js";

const CREATE: Record<NkeyRole, () => KeyPair> = { operator: createOperator, account: createAccount, user: createUser };
const LETTER: Record<NkeyRole, string> = { operator: "O", account: "A", user: "U" };
const roles = Object.keys(CREATE) as NkeyRole[];

describe("native nkeys", () => {
  it.each(roles)("writes the %s keys and signatures nkeys writes, for their seeds and for its own", (role) => {
    for (let i = 0; i < 10; i++) {
      const theirs = CREATE[role]();
      const ours = nkeyFromSeed(theirs.getSeed());
      expect(ours.getPublicKey()).toBe(theirs.getPublicKey());
      expect(new TextDecoder().decode(ours.getPrivateKey())).toBe(new TextDecoder().decode(theirs.getPrivateKey()));
      expect(new TextDecoder().decode(ours.getSeed())).toBe(new TextDecoder().decode(theirs.getSeed()));
      const message = randomBytes(1 + i * 13);
      expect(Buffer.from(ours.sign(message)).equals(Buffer.from(theirs.sign(message)))).toBe(true);
      expect(ours.verify(message, theirs.sign(message))).toBe(true);
      const forged = theirs.sign(message);
      forged[0] = forged[0]! ^ 1;
      expect(ours.verify(message, forged)).toBe(false);

      const made = newNkey(role);
      const read = fromSeed(made.getSeed());
      expect(made.getPublicKey()).toBe(read.getPublicKey());
      expect(made.getPublicKey()[0]).toBe(LETTER[role]);
      expect(new TextDecoder().decode(made.getSeed()).slice(0, 2)).toBe(`S${LETTER[role]}`);
      expect(fromPublic(made.getPublicKey()).verify(message, made.sign(message))).toBe(true);
    }
  });

  it("refuses what is not a usable seed, by its code, and signs nothing once cleared", () => {
    const seed = new TextDecoder().decode(createUser().getSeed());
    const flipped = seed.slice(0, 10) + (seed[10] === "A" ? "B" : "A") + seed.slice(11);
    const cases: Array<[string, RegExp]> = [
      [flipped, /checksum/],
      [seed.slice(0, -4), /bytes, not 36/],
      [seed.replace(/.$/, "1"), /outside base32/],
      [createUser().getPublicKey(), /bytes, not 36/],
      [new TextDecoder().decode(createCurve().getSeed()), /not an operator, account or user seed/],
      ["", /bytes, not 36/],
    ];
    for (const [text, reason] of cases) {
      let err: unknown;
      try {
        nkeyFromSeed(text);
      } catch (e) {
        err = e;
      }
      expect(err, text).toBeInstanceOf(InvalidSeedError);
      expect((err as InvalidSeedError).code).toBe("invalid-seed");
      expect((err as Error).message).toMatch(reason);
    }
    const kp = nkeyFromSeed(seed);
    kp.clear();
    expect(() => kp.sign(new Uint8Array(1))).toThrow(/cleared/);
    expect(() => kp.getPublicKey()).toThrow(/cleared/);
  });

  it("authenticates with what nats.js's credsAuthenticator sends: the same JWT, key and nonce signature", async () => {
    const account = createAccount();
    const user = createUser();
    const jwt = await encodeUser("alice", user, account, {});
    const creds = fmtCreds(jwt, user);
    for (const nonce of ["", "xYz-123_abc", randomBytes(16).toString("base64url")]) {
      const ours = credsBytesAuthenticator(creds)(nonce || undefined);
      const theirs = natsCredsAuthenticator(creds)(nonce || undefined);
      expect(ours).toEqual(theirs);
    }
    expect(() => credsBytesAuthenticator(new TextEncoder().encode("not a credential"))("n")).toThrow(/no NATS USER JWT block/);
  });

  it("leaves nkeys' tweetnacl off every path of the product: no seed read, key made or nonce signed by it", () => {
    // What would bring it back: nkeys' constructors and fromSeed, or nats.js's authenticators.
    const banned = /\b(fromSeed|createUser|createAccount|createOperator|createPair|credsAuthenticator|nkeyAuthenticator|jwtAuthenticator)\b/;
    const sources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") || e.name.endsWith(".tsx") ? [join(dir, e.name)] : [],
      );
    const product = ["schemas", "runtime", "broker", "claude", "codex", "opencode", "gemini", "pi", "copilot", "connector", "manager", "web", "cli"].flatMap(
      (d) => sources(join(projectRoot, d)),
    );
    expect(product.length).toBeGreaterThan(100);
    const offenders = product.flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*["'](@nats-io\/[^"']+)["']/g)]
        .filter((m) => banned.test(m[1]!))
        .map((m) => `${relative(projectRoot, file)}: { ${m[1]!.trim()} } from ${m[2]}`),
    );
    expect(offenders).toEqual([]);
  });
});
