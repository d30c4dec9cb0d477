// A credential whose JWT is large (an agent allowed many channels and a role) still connects:
// the CONNECT line carries the whole JWT, and nats-server drops a connection whose control line
// passes its limit ("maximum control line exceeded") with nothing but a timeout for the client.
import { afterAll, beforeAll, expect, test } from "vitest";
import { Endpoint } from "../../broker/index.js";
import { TestMesh } from "../harness/mesh.js";

let mesh: TestMesh;
beforeAll(async () => {
  mesh = await TestMesh.startStatic("bigjwt");
});
afterAll(async () => {
  await mesh?.close();
});

test("an agent allowed 60 channels and a role connects, joins and posts", async () => {
  const channels = Array.from({ length: 60 }, (_, i) => `team-channel-number-${i}`);
  const creds = await mesh.mint({ name: "wide", profile: "agent", allowSubscribe: channels, allowPublish: channels, role: "reviewer" });
  const ep = await Endpoint.connect({ server: mesh.server.url, space: mesh.space, name: "wide", creds, role: "reviewer" });
  try {
    await ep.join();
    const receipt = await ep.send(channels[59]!, "still fits");
    expect(receipt.seq).toBeGreaterThan(0);
  } finally {
    await ep.close();
  }
});
