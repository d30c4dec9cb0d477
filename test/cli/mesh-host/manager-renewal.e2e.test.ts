// The host manager's credential, when it carries an expiry, is minted again by
// `cotal up` once a third of its life is left, with the same lifetime; the running manager takes the
// new file when the server closes its expired connection, and keeps serving. Through the shipped
// CLI: `cotal up`, a 60 s credential put in the manager's place (`cotal mint --expires-in`), the
// renewing `cotal up`, and a spawn after the first credential expired.
import { copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { credsClaims } from "../../../broker/index.js";
import { renewalDueAt } from "../../../manager/index.js";
import { cliFolder, freePort, type CliResult } from "../../harness/cli.js";
import { until } from "../../../testbed/until.js";

const { dir, cotal } = cliFolder("cotal-manager-renew-");
const credsFile = join(dir, ".cotal/manager/manager.creds");
const managerLog = () => readFileSync(join(dir, ".cotal/logs/manager.log"), "utf8").split("\n").slice(-30).join("\n");
const managerPid = () => (JSON.parse(readFileSync(join(dir, ".cotal/run/manager.json"), "utf8")) as { pid: number }).pid;

function ok(r: CliResult): CliResult {
  expect(r.code, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

describe("the host manager's credential", () => {
  it("is minted again by cotal up when a third of its life is left; the running manager keeps serving past the first one's expiry", async () => {
    const server = ok(await cotal("up", "-d", "--port", String(await freePort()), "--json")).json<{ server: string }>().server;
    const instance = readFileSync(join(dir, ".cotal/manager/instance"), "utf8").trim();
    expect(credsClaims(readFileSync(credsFile))?.exp, "the operator mints it without an expiry").toBeUndefined();

    // Give the host manager a 60 s credential of its own name (its last third, 20 s, leaves `cotal up`
    // time to renew it on a loaded machine), then start it on that.
    const short = join(dir, "short.creds");
    ok(await cotal("mint", instance, "--profile", "manager", "--expires-in", "60s", "--out", short));
    ok(await cotal("down"));
    copyFileSync(short, credsFile);
    ok(await cotal("up", "-d", "--json"));
    const first = readFileSync(credsFile);
    const firstExp = credsClaims(first)!.exp!;
    const pid = managerPid();

    // Once it is due, `cotal up` (the manager running) mints it again with the same lifetime.
    await until(() => Date.now() >= renewalDueAt(credsFile)!, 60_000, "the host manager's credential to be due for renewal");
    const up = ok(await cotal("up", "-d", "--json")).json<{ notes: string[] }>();
    expect(up.notes.join("\n")).toMatch(/host manager's credential had less than a third of its life left .*minted it again with the same lifetime/);
    const renewed = credsClaims(readFileSync(credsFile))!;
    expect(renewed.name).toBe(`local.${instance}`);
    expect(renewed.exp!).toBeGreaterThan(firstExp);
    expect(renewed.exp! - renewed.iat!).toBe(firstExp - credsClaims(first)!.iat!);

    // The first credential expires and is refused; the same manager process serves on the renewed one.
    await until(
      () =>
        connect({ servers: server, authenticator: credsAuthenticator(first), maxReconnectAttempts: 0 }).then(
          (nc) => nc.close().then(() => false),
          () => true,
        ),
      60_000,
      "the first credential to be refused",
    );
    // The server has just closed the manager's expired connection; until it is back on the renewed
    // file a spawn goes unanswered (exit 6). On a loaded run a spawn caught in that cut lost its
    // reply and waited out the CLI's 30 s, and the renewed credential lives only 40 s past the first
    // one's expiry: so, as an operator's `cotal up` would, it is renewed again whenever it is due,
    // beside the spawns. It must serve again, as the same process.
    let spawning = true;
    const renewer = (async () => {
      while (spawning) {
        if (Date.now() >= renewalDueAt(credsFile)!) ok(await cotal("up", "-d", "--json"));
        await sleep(1_000);
      }
    })();
    renewer.catch(() => undefined); // its failure is thrown where it is awaited, below
    let spawned: CliResult | undefined;
    const attempts: string[] = [];
    const t0 = Date.now();
    try {
      await until(
        async () => {
          spawned = await cotal("spawn", "-d", "--agent", "echo", "--name", "parrot", "--json");
          attempts.push(`+${Date.now() - t0} ms: exit ${spawned.code} ${spawned.stderr.trim()}`);
          return spawned.code !== 6;
        },
        120_000,
        () => `the manager to serve a spawn again on its renewed credential; the spawns:\n${attempts.join("\n")}\nthe manager's log:\n${managerLog()}`,
        1_000,
      );
    } finally {
      spawning = false;
      await renewer;
    }
    ok(spawned!);
    expect(managerPid()).toBe(pid);
  }, 400_000);
});
