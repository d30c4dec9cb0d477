// A hand-started session with only COTAL_SERVER and COTAL_CREDS joins as the credential says:
// its name, its space, and the channels it may read (the README's Claude block relies on it).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAccount } from "@nats-io/nkeys";
import { afterAll, describe, expect, it } from "vitest";
import { mintCreds } from "../../broker/internal.js";
import { resolveLaunch } from "../../connector/internal.js";

const dir = mkdtempSync(join(tmpdir(), "cotal-launch-creds-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function credsFile(name: string, allowSubscribe: string[]): Promise<string> {
  const account = createAccount();
  const { creds } = await mintCreds(
    { space: "team", who: { owner: "local", actor: name }, profile: "agent", allowSubscribe, allowPublish: ["general"] },
    account,
    account.getPublicKey(),
  );
  const file = join(dir, `${name}.creds`);
  writeFileSync(file, creds, { mode: 0o600 });
  return file;
}

describe("a launch from a minted credential", () => {
  it("takes name, space and readable channels from the credential when they are not set", async () => {
    const creds = await credsFile("alice", ["general", "team.backend"]);
    const r = resolveLaunch({ COTAL_SERVER: "nats://127.0.0.1:4999", COTAL_CREDS: creds });
    expect(r.kind).toBe("launch");
    if (r.kind !== "launch") return;
    expect(r.launch).toMatchObject({ space: "team", owner: "local", name: "alice", channels: ["general", "team.backend"], creds });
  });

  it("what is set wins over what the credential implies", async () => {
    const creds = await credsFile("bob", ["general", "random"]);
    const r = resolveLaunch({ COTAL_SERVER: "nats://127.0.0.1:4999", COTAL_CREDS: creds, COTAL_CHANNELS: "random" });
    expect(r.kind === "launch" && r.launch.channels).toEqual(["random"]);
  });

  it("a file that is not a credential selects nothing", () => {
    const junk = join(dir, "junk.creds");
    writeFileSync(junk, "not a credential", { mode: 0o600 });
    expect(resolveLaunch({ COTAL_SERVER: "nats://127.0.0.1:4999", COTAL_CREDS: junk }).kind).toBe("none");
  });
});
