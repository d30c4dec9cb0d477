// A failed control call says why, decided by nats.js error types: nobody serves it, nobody
// answered in time, the broker refused this credential (naming the subject), or the
// connection is closed. A refusal is never reported as "mesh service unavailable".
import { afterEach, describe } from "vitest";
import {
  callControl,
  ConnectionClosedError,
  MESH_ENDPOINT,
  MeshServiceUnavailableError,
  PermissionDeniedError,
  requestControl,
  setLogDestination,
} from "../../broker/internal.js";
import { expect, test } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { meshMode } from "../harness/mesh-mode.js";

let mesh: TestMesh | undefined;
afterEach(async () => {
  setLogDestination(undefined);
  await mesh?.close();
  mesh = undefined;
});

describe("control call failures are told apart", () => {
  test("no mesh service, a silent one, a closed connection", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "ctlerr");
    const bob = await mesh.endpoint("bob");
    await expect(callControl(bob.nc, mesh.space, "ping", bob.me)).resolves.toMatchObject({ space: mesh.space });

    await mesh.service.stop();
    const down = await callControl(bob.nc, mesh.space, "ping", bob.me, {}, { timeoutMs: 2_000 }).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(MeshServiceUnavailableError);
    // Across the static mesh's account import a missing responder may only show as silence.
    if (meshMode() === "open") expect((down as MeshServiceUnavailableError).reason).toBe("no-responders");

    const silent = mesh.serviceConnection.subscribe(`cotal.${mesh.space}.ep.mesh.one.*.*.*`, { queue: MESH_ENDPOINT });
    await mesh.serviceConnection.flush();
    const late = await callControl(bob.nc, mesh.space, "ping", bob.me, {}, { timeoutMs: 300 }).catch((e: unknown) => e);
    silent.unsubscribe();
    expect(late).toBeInstanceOf(MeshServiceUnavailableError);
    expect((late as MeshServiceUnavailableError).reason).toBe("timeout");

    await bob.nc.close();
    await expect(callControl(bob.nc, mesh.space, "ping", bob.me)).rejects.toBeInstanceOf(ConnectionClosedError);
  });

  test.runIf(meshMode() === "static")("a command the credential may not call is a refusal naming the subject", async ({ nats }) => {
    const logs: Array<Record<string, unknown>> = [];
    setLogDestination({ write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
    mesh = await TestMesh.start(nats, "ctlperm");
    const bob = await mesh.endpoint("bob");
    // An agent may call no manager command but `run` (docs/runs.md): the broker refuses the publish.
    const err = await requestControl(bob.nc, mesh.space, "manager", "ps", bob.me).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PermissionDeniedError);
    expect(err).not.toBeInstanceOf(MeshServiceUnavailableError);
    expect((err as PermissionDeniedError).subject).toBe(`cotal.${mesh.space}.ep.manager.one.ps.local.bob`);
    expect((err as PermissionDeniedError).operation).toBe("publish");
    expect(logs.some((l) => l.level === 50 && l.subject === `cotal.${mesh!.space}.ep.manager.one.ps.local.bob`)).toBe(true);
    // The mesh endpoint is one subject in an agent's credential; the operator's commands are refused by the service.
    expect(await callControl(bob.nc, mesh.space, "revoke", bob.me, { name: "alice" }).catch((e: unknown) => e)).toMatchObject({
      code: "not-allowed",
      outcome: "not-executed",
    });
  });
});
