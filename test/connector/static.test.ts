// The connector on a static-auth mesh (operator mode, minted agent credentials): it works
// unchanged — tools, hook drain and ack, roster and history — with only its own permissions.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { requestCredential, writeSecret } from "../../broker/index.js";
import type { NatsServer } from "../harness/fixtures.js";
import { until } from "../harness/fixtures.js";
import { STATIC_TEST_CHANNELS, TestMesh } from "../harness/mesh.js";
import { startModeServer } from "../harness/mesh-mode.js";
import { call, dmConsumerInfo, hook, mcpClient, startConnector } from "./helpers.js";

let server: NatsServer;
let credsDir: string;
beforeAll(async () => {
  const before = process.env.COTAL_TEST_MODE;
  process.env.COTAL_TEST_MODE = "static";
  try {
    server = await startModeServer();
  } finally {
    if (before === undefined) delete process.env.COTAL_TEST_MODE;
    else process.env.COTAL_TEST_MODE = before;
  }
  credsDir = mkdtempSync(path.join(os.tmpdir(), "cotal-conn-creds-"));
});
afterAll(async () => {
  await server?.cleanup();
  if (credsDir) rmSync(credsDir, { recursive: true, force: true });
});

describe("the connector on a static-auth mesh", () => {
  it("joins with a minted agent credential: drain and ack, tools, roster and history all work", async () => {
    const mesh = await TestMesh.start(server, "static1", { ackWaitMs: 3_000 });
    onTestFinished(() => mesh.close());
    const alice = await mesh.joined("alice");
    await alice.joinChannel("general");
    await alice.dm("bob", "welcome aboard");
    const minted = await requestCredential(await mesh.rawConnection(), mesh.space, {
      name: "bob",
      profile: "agent",
      allowSubscribe: STATIC_TEST_CHANNELS,
      allowPublish: STATIC_TEST_CHANNELS,
    });
    const creds = path.join(credsDir, "bob.creds");
    writeSecret(creds, minted.creds);
    const s = await startConnector(mesh, "bob", { launch: { creds, channels: ["general"] } });
    onTestFinished(() => s.close());
    const m = await mcpClient(s.connector);
    onTestFinished(() => m.close());
    // It could read its own durable's ack wait (consumer info is within its permissions).
    expect(s.connector.keepAliveMs).toBe(1_000);
    const start = await hook(s.env, "SessionStart", { source: "startup" });
    expect(start.context).toContain("│ welcome aboard");
    await until(async () => (await dmConsumerInfo(mesh, "bob").catch(() => undefined))?.num_ack_pending === 0, 5_000, "the DM is acked after the hook");

    const sent = await call(m.client, "cotal_send", { channel: "general", text: "hello from a minted seat" });
    expect(sent.data).toMatchObject({ target: { kind: "channel", channel: "general" } });
    expect(sent.text).toMatch(/^Posted on #general as local\.bob .*stored seq \d+ on general/);
    const dm = await call(m.client, "cotal_dm", { to: "alice", text: "thanks" });
    expect(dm.data).toMatchObject({ target: { kind: "dm", to: "local.alice", recipient: "idle" } });
    const roster = await call(m.client, "cotal_roster");
    expect(roster.text).toContain("- local.alice · idle");
    const history = await call(m.client, "cotal_history", { channel: "general", since: "5m" });
    expect(history.text).toContain("│ hello from a minted seat");
    expect((await call(m.client, "cotal_join", { channel: "builds" })).text).toContain("Joined #builds");
    expect((await call(m.client, "cotal_channels")).text).toMatch(/- #builds · durable · joined, mode normal\n- #general · durable · joined, mode normal/);
    expect((await call(m.client, "cotal_channel_mode", { channel: "builds", mode: "quiet" })).text).toBe("#builds is now quiet for you.");
    expect((await call(m.client, "cotal_leave", { channel: "builds" })).text).toBe("Left #builds.");
    expect((await call(m.client, "cotal_status")).text).toContain("Channels: #general.");
    // A channel outside the credential is refused by the broker, as a tool error.
    const denied = await call(m.client, "cotal_send", { channel: "secret", text: "x" });
    expect(denied.isError).toBe(true);
  });
});
