// A folder's single-node mesh moved to `cotal up --cluster 3` (docs/scaling.md): the cluster's
// stores start empty, so they hold no record of the host manager's credential, which still
// connects (same account keys). `cotal up` asks the mesh (`whoami`), mints the credential again
// and says so, and the operator's next `cotal spawn` works without a manual step. A revoked
// manager credential is replaced the same way.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliFolder, freePort, freePortRun } from "../harness/cli.js";

// `up --cluster 3` may form a new cluster again (20 s each, cli/mesh-host/mesh-lifecycle.ts) and then wait up to 120 s.
const { dir, cotal } = cliFolder("cotal-to-cluster-", 240_000);
const managerCreds = () => readFileSync(join(dir, ".cotal/manager/manager.creds"), "utf8");

describe("a single-node folder brought up as a cluster", () => {
  it("mints the host manager's credential again (revoked, then unknown to new stores), and spawn works at once", async () => {
    const single = await cotal("up", "-d", "--port", String(await freePort()), "--json");
    expect(single.code, single.stderr).toBe(0);
    const first = managerCreds();
    // Up again on the same store: the credential is known, kept, and nothing is said about it.
    const again = await cotal("up", "-d", "--json");
    expect(again.code, again.stderr).toBe(0);
    expect(managerCreds()).toBe(first);
    expect(again.stdout).not.toMatch(/minted it again/);
    // A revoked manager credential is refused at connect: the next `up` mints a new one.
    const instance = readFileSync(join(dir, ".cotal/manager/instance"), "utf8").trim();
    expect((await cotal("revoke", instance)).code).toBe(0);
    const afterRevoke = await cotal("up", "-d", "--json");
    expect(afterRevoke.code, afterRevoke.stderr).toBe(0);
    expect((JSON.parse(afterRevoke.stdout) as { notes: string[] }).notes.join("\n")).toMatch(/minted it again/);
    expect(managerCreds()).not.toBe(first);
    const echo = await cotal("spawn", "-d", "--agent", "echo", "--name", "early", "--json");
    expect(echo.code, echo.stdout + echo.stderr).toBe(0);
    expect((await cotal("stop", "--name", "early")).code).toBe(0);
    const beforeMove = managerCreds();
    expect((await cotal("down")).code).toBe(0);

    const up = await cotal("up", "-d", "--cluster", "3", "--port", String(await freePortRun(3)), "--json");
    expect(up.code, up.stderr).toBe(0);
    const report = JSON.parse(up.stdout) as { replicas: number; notes: string[] };
    expect(report.replicas).toBe(3);
    expect(report.notes.join("\n")).toMatch(/host manager's credential is not one this mesh knows.*minted it again/);
    expect(managerCreds()).not.toBe(beforeMove);

    const spawned = await cotal("spawn", "-d", "--agent", "echo", "--name", "parrot", "--json");
    expect(spawned.code, spawned.stdout + spawned.stderr).toBe(0);
    expect(JSON.parse(spawned.stdout)).toMatchObject({ name: "parrot", outcome: "started" });
    expect((await cotal("stop", "--name", "parrot")).code).toBe(0);
    expect((await cotal("down")).code).toBe(0);
  }, 600_000);
});
