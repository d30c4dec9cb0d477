// Upgraded meshes: a manager credential keeps the rights it was signed with. One
// minted by an older Cotal (serving every manager's subjects, writing any heartbeat) would keep
// them after the upgrade. `cotal up` compares the host manager's credential with what this version
// mints for it, and when they differ revokes it and mints it again, saying so.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { credsAuthenticator, connect } from "@nats-io/transport-node";
import { encodeUser, fmtCreds } from "@nats-io/jwt";
import { fromSeed } from "@nats-io/nkeys";
import { describe, expect, it } from "vitest";
import { AuthStore, clientsAccount, credsClaims } from "../../../broker/index.js";
import { managerRightsCurrent } from "../../../cli/mesh-host/manager-process.js";
import { cliFolder, freePort } from "../../harness/cli.js";

const { dir, cotal } = cliFolder("cotal-manager-rights-");
const credsFile = join(dir, ".cotal/manager/manager.creds");

describe("the host manager's credential after an upgrade", () => {
  it("is revoked and minted again when it carries other rights than this version's, and kept when current", async () => {
    const first = await cotal("up", "-d", "--port", String(await freePort()), "--json");
    expect(first.code, first.stderr).toBe(0);
    const server = (JSON.parse(first.stdout) as { server: string }).server;
    const instance = readFileSync(join(dir, ".cotal/manager/instance"), "utf8").trim();
    const minted = readFileSync(credsFile);
    expect(managerRightsCurrent(minted, "default", instance)).toBe(true);
    expect((await cotal("down")).code).toBe(0);

    // What an older version minted: the same name, profile and user key (the mesh's identity
    // registry lists it under the name), with wider rights (every manager's calls, any heartbeat key).
    const store = await AuthStore.open(join(dir, ".cotal/auth"));
    const claims = credsClaims(minted)!;
    const seed = /-----BEGIN USER NKEY SEED-----\s+(\S+)/.exec(minted.toString("utf8"))?.[1];
    expect(seed, "the minted credential carries its user seed").toBeDefined();
    const user = fromSeed(new TextEncoder().encode(seed));
    const accountPub = store.accountKey(clientsAccount("default")).getPublicKey();
    const jwt = await encodeUser(
      claims.name!,
      user,
      accountPub,
      {
        pub: { allow: [...claims.pubAllow, "cotal.default.ep.manager.>", "$KV.cotal_managers_default.>"] },
        sub: { allow: [...claims.subAllow, "cotal.default.ep.manager.>"] },
        tags: claims.tags,
        issuer_account: accountPub,
      },
      { signer: store.signingKey("default") },
    );
    const old = fmtCreds(jwt, user);
    writeFileSync(credsFile, old, { mode: 0o600 });
    expect(managerRightsCurrent(old, "default", instance)).toBe(false);

    const up = await cotal("up", "-d", "--json");
    expect(up.code, up.stderr).toBe(0);
    expect((JSON.parse(up.stdout) as { notes: string[] }).notes.join("\n")).toMatch(/rights of an older Cotal.*revoked it and minted it again/);
    expect(managerRightsCurrent(readFileSync(credsFile), "default", instance)).toBe(true);
    // The older credential (and every other the mesh minted for the name) is refused by the broker now, not merely replaced on disk.
    for (const creds of [old, minted])
      await expect(connect({ servers: server, authenticator: credsAuthenticator(creds), reconnect: false })).rejects.toThrow(/Authorization Violation/i);
    // And seats still start on the new one.
    const echo = await cotal("spawn", "-d", "--agent", "echo", "--name", "parrot", "--json");
    expect(echo.code, echo.stdout + echo.stderr).toBe(0);
    const again = await cotal("up", "-d", "--json");
    expect(again.code, again.stderr).toBe(0);
    expect((JSON.parse(again.stdout) as { notes: string[] }).notes.join("\n")).not.toMatch(/minted it again/);
  }, 180_000);
});
