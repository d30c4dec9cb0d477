// Helpers through the shipped CLI: `cotal mint --allow-spawn` gives an agent the
// spawn right; with that credential (as its connector would) the host manager `cotal up` started
// spawns a helper from the project's agent files; `cotal ps` and `cotal roster` say who spawned it
// (from the manager, not a card); `cotal handover` hands it to the operator; a profile that cannot
// carry the right is refused at the command line.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { controlCaller } from "../../broker/internal.js";
import { localPrincipal, MANAGER_COMMANDS } from "../../schemas/index.js";
import { buildCli, freePort, runCotal, type CliResult } from "../harness/cli.js";
import { until } from "../../testbed/until.js";

const callManager = controlCaller(MANAGER_COMMANDS);
let project: string;
const cotal = (...args: string[]) => runCotal(args, { cwd: project, timeoutMs: 60_000 });

function ok(r: CliResult): CliResult {
  expect(r.code, `exit code; stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

interface PsJson {
  instance: string;
  seats?: Array<{ name: string; state: string; spawnedBy?: string; handedOverBy?: string }>;
}

async function seatOf(name: string) {
  const all = JSON.parse(ok(await cotal("ps", "--json")).stdout) as PsJson[];
  return all.flatMap((m) => m.seats ?? []).find((s) => s.name === name);
}

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-helpers-cli-"));
  mkdirSync(join(project, ".cotal", "agents"), { recursive: true });
  writeFileSync(join(project, ".cotal", "agents", "helper.md"), "---\nname: helper\nsubscribe: [general]\n---\nYou help.\n");
  ok(await cotal("up", "--detach", "--port", String(await freePort())));
}, 120_000);

afterAll(async () => {
  await cotal("down").catch(() => undefined);
  await rm(project, { recursive: true, force: true });
});

describe("helpers through the CLI", () => {
  it("mint --allow-spawn, a helper spawned with that credential, ps and roster name its spawner, handover hands it to the operator", async () => {
    const minted = ok(
      await cotal(
        "mint",
        "lead",
        "--profile",
        "agent",
        "--allow-subscribe",
        "general",
        "--allow-publish",
        "general",
        "--allow-spawn",
        "helper",
        "--spawn-limit",
        "2",
      ),
    );
    expect(minted.stdout).toContain("spawns:    helper (at most 2 helpers at once)");
    // A profile with a fixed view cannot carry the right: refused before anything is sent.
    const refused = await cotal("mint", "olga", "--profile", "observer", "--allow-spawn", "helper");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("--allow-spawn applies to agents only");

    // The spawner's credential, as its connector uses it: a spawn on any manager (the host's, here).
    const { server, space } = JSON.parse(readFileSync(join(project, ".cotal", "mesh.json"), "utf8")) as { server: string; space: string };
    const nc = await connect({
      servers: server,
      authenticator: credsAuthenticator(readFileSync(join(project, ".cotal", "creds", "lead.creds"))),
      inboxPrefix: "_INBOX.local.lead",
    });
    try {
      const id = await callManager(nc, space, "spawn", localPrincipal("lead"), { persona: "helper", agent: "echo" }, { timeoutMs: 30_000 });
      expect(id.name).toBe("helper");
      await until(async () => (await seatOf("helper"))?.state === "joined", 30_000, "the helper to join");
    } finally {
      await nc.close();
    }
    expect(await seatOf("helper")).toMatchObject({ spawnedBy: "local.lead" });
    expect(ok(await cotal("ps")).stdout).toMatch(/helper +echo +joined .*local\.lead/);
    const roster = ok(await cotal("roster", "--json")).json() as Array<{ id: string; spawnedBy?: string }>;
    expect(roster.find((r) => r.id === "local.helper")).toMatchObject({ spawnedBy: "local.lead" });

    expect(ok(await cotal("handover", "--name", "helper")).stdout).toContain("helper: handed over by local.lead; it answers to the operator now.");
    expect(await seatOf("helper")).toMatchObject({ state: "joined", handedOverBy: "local.lead" });
    expect((await seatOf("helper"))?.spawnedBy).toBeUndefined();
    expect(ok(await cotal("ps")).stdout).toMatch(/helper +echo +joined .*- \(from local\.lead\)/);
    // A seat nobody spawned cannot be handed over.
    const again = await cotal("handover", "--name", "helper");
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("is not a helper");
    ok(await cotal("stop", "--name", "helper"));
  }, 180_000);

  it("a spawner that rewrites the agent file its grant names gets no helper of it: mint pinned the file; minting again pins the new one", async () => {
    const agentFile = join(project, ".cotal", "agents", "wide.md");
    writeFileSync(agentFile, "---\nname: wide\nsubscribe: [general]\n---\nYou help narrowly.\n");
    // A persona with no agent file cannot be pinned: refused at the command line.
    const unpinnable = await cotal("mint", "ghost", "--profile", "agent", "--allow-spawn", "nobody");
    expect(unpinnable.code).toBe(2);
    expect(unpinnable.stderr).toContain("--allow-spawn pins each persona's agent file");
    ok(await cotal("mint", "tess", "--profile", "agent", "--allow-subscribe", "general", "--allow-publish", "general", "--allow-spawn", "wide"));
    const { server, space } = JSON.parse(readFileSync(join(project, ".cotal", "mesh.json"), "utf8")) as { server: string; space: string };
    const tess = () =>
      connect({
        servers: server,
        authenticator: credsAuthenticator(readFileSync(join(project, ".cotal", "creds", "tess.creds"))),
        inboxPrefix: "_INBOX.local.tess",
      });
    // The grantee (any process with write access to the folder) widens the persona after its mint.
    writeFileSync(agentFile, "---\nname: wide\nsubscribe: [general]\nallowedTools: [Bash]\n---\nYou may run anything.\n");
    const nc = await tess();
    try {
      const refused = await callManager(nc, space, "spawn", localPrincipal("tess"), { persona: "wide", agent: "echo" }, { timeoutMs: 30_000 }).then(
        () => undefined,
        (err: unknown) => err as { code?: string; message: string },
      );
      expect(refused?.code).toBe("persona-not-pinned");
      expect(refused?.message).toContain("its agent file changed since local.tess was minted");
      const listed = await callManager(nc, space, "personas", localPrincipal("tess"), {}, { timeoutMs: 30_000 });
      expect(listed.personas.find((p) => p.persona === "wide")?.problem).toContain("changed since local.tess was minted");
    } finally {
      await nc.close();
    }
    expect(await seatOf("wide")).toBeUndefined();

    // The operator's new mint pins the file as it is now: the helper starts.
    ok(await cotal("mint", "tess", "--profile", "agent", "--allow-subscribe", "general", "--allow-publish", "general", "--allow-spawn", "wide", "--replace"));
    const again = await tess();
    try {
      expect((await callManager(again, space, "spawn", localPrincipal("tess"), { persona: "wide", agent: "echo" }, { timeoutMs: 30_000 })).name).toBe("wide");
    } finally {
      await again.close();
    }
    ok(await cotal("stop", "--name", "wide"));
  }, 180_000);
});
