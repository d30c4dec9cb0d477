// The steer right (docs/security.md): a person minted with `steer` calls the manager rail as
// itself, and a real manager on a static mesh treats it like the operator for personas only: it
// spawns a seat from a persona (recorded as spawnedBy), lists the personas, stops a persona's seat;
// a spawn without a persona, with an operator-only argument, or a stop of a seat the operator
// started without one is refused with the reason. A person without the right is refused by the broker.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { controlCaller, PermissionDeniedError } from "../../broker/internal.js";
import type { ManagerService } from "../../manager/index.js";
import { localPrincipal, MANAGER_COMMANDS, type SeatView } from "../../schemas/index.js";
import { buildCli } from "../harness/cli.js";
import { startEchoManager } from "../harness/echo-manager.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");
const ann = localPrincipal("ann");

let mesh: TestMesh;
let nc: NatsConnection;
let asAnn: NatsConnection;
let m1: ManagerService | undefined;
let folder: string;
let stateDir: string;

beforeAll(async () => {
  await buildCli();
  mesh = await TestMesh.startStatic("steer");
  nc = await mesh.rawConnection();
  folder = mkdtempSync(join(tmpdir(), "cotal-steer-folder-"));
  stateDir = mkdtempSync(join(tmpdir(), "cotal-steer-mgr-"));
  mkdirSync(join(folder, ".cotal", "agents"), { recursive: true });
  writeFileSync(join(folder, ".cotal", "agents", "scout.md"), "---\nname: scout\n---\nYou are scout.\n");
  m1 = await startEchoManager(mesh, nc, { stateDir, instance: "m1", over: { folder } });
  asAnn = await mesh.connection(await mesh.mint({ name: "ann", profile: "person", provision: true, steer: true }), "_INBOX.local.ann");
}, 180_000);

afterAll(async () => {
  await m1?.stopWithSeats(operator).catch(() => undefined);
  await mesh?.close();
  for (const d of [folder, stateDir]) if (d) rmSync(d, { recursive: true, force: true });
});

async function seat(name: string): Promise<SeatView | undefined> {
  return (await callManager(nc, mesh.space, "ps", operator, { all: false }, { target: "m1" })).seats.find((s) => s.name === name);
}

describe("the steer right", () => {
  test("a steering person spawns a persona's seat (spawnedBy them), lists the personas and stops it; other spawns and stops are refused with the reason", async () => {
    const listed = await callManager(asAnn, mesh.space, "personas", ann, {}, { target: "m1" });
    expect(listed.personas.map((p) => p.persona)).toEqual(["scout"]);

    const r = await callManager(asAnn, mesh.space, "spawn", ann, { agent: "echo", persona: "scout", name: "s1" }, { target: "m1", timeoutMs: 30_000 });
    expect(r.name).toBe("s1");
    await until(async () => (await seat("s1"))?.state === "joined", 30_000, "s1 to join");
    expect(await seat("s1")).toMatchObject({ persona: "scout", spawnedBy: "local.ann" });

    await expect(callManager(asAnn, mesh.space, "spawn", ann, { agent: "echo", name: "plain" }, { target: "m1" })).rejects.toMatchObject({
      code: "steer-persona-only",
    });
    await expect(
      callManager(asAnn, mesh.space, "spawn", ann, { agent: "echo", persona: "scout", name: "there", cwd: tmpdir() }, { target: "m1" }),
    ).rejects.toMatchObject({
      code: "spawn-not-allowed",
      message: expect.stringContaining("Only the operator passes cwd"),
    });
    expect(await seat("plain")).toBeUndefined();
    expect(await seat("there")).toBeUndefined();

    // A seat the operator started without a persona is the operator's to stop.
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "opseat" }, { target: "m1", timeoutMs: 30_000 });
    await expect(callManager(asAnn, mesh.space, "stop", ann, { name: "opseat" }, { target: "m1" })).rejects.toMatchObject({
      code: "not-steerable",
      message: expect.stringContaining("opseat was not spawned from a persona"),
    });
    expect((await seat("opseat"))?.state).not.toBe("retired");

    const stopped = await callManager(asAnn, mesh.space, "stop", ann, { name: "s1" }, { target: "m1", timeoutMs: 30_000 });
    expect(stopped.stopped).toBe(true);
    expect(await seat("s1")).toBeUndefined();
  }, 120_000);

  test("a person minted without it is refused by the broker", async () => {
    const pat = localPrincipal("pat");
    const raw = await mesh.connection(await mesh.mint({ name: "pat", profile: "person", provision: true }), "_INBOX.local.pat");
    for (const command of ["spawn", "stop", "personas"] as const) {
      const err = await callManager(raw, mesh.space, command, pat, { agent: "echo", persona: "scout", name: "x" } as never, { target: "m1" }).catch(
        (e: unknown) => e,
      );
      expect(err, command).toBeInstanceOf(PermissionDeniedError);
    }
  }, 60_000);

  test("--steer is a person's: an agent minted with it is refused", async () => {
    await expect(mesh.mint({ name: "bot", profile: "agent", steer: true })).rejects.toMatchObject({
      message: expect.stringContaining("The steer right is a person's"),
    });
  }, 30_000);
});
