// Minting a name again says what happens to its earlier credentials: the reply counts the ones
// still valid (they stay valid), and after a revoke there are none.
import { afterAll, beforeAll, expect, test } from "vitest";
import { requestCredential, requestRevoke } from "../../broker/index.js";
import { TestMesh } from "../harness/mesh.js";

let mesh: TestMesh;
beforeAll(async () => {
  mesh = await TestMesh.startStatic("again");
});
afterAll(async () => {
  await mesh?.close();
});

test("a second mint reports the first credential as still valid; after revoke none is", async () => {
  const nc = await mesh.connection(mesh.cliCreds);
  const spec = { name: "alice", profile: "agent" as const, allowSubscribe: ["general"], allowPublish: ["general"] };
  expect((await requestCredential(nc, mesh.space, spec)).reply.othersValid).toBe(0);
  expect((await requestCredential(nc, mesh.space, spec)).reply.othersValid).toBe(1);
  expect((await requestCredential(nc, mesh.space, spec)).reply.othersValid).toBe(2);
  expect((await requestRevoke(nc, mesh.space, "alice")).revoked).toBe(3);
  expect((await requestCredential(nc, mesh.space, spec)).reply.othersValid).toBe(0);
});
