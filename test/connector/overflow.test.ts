// Inbox overflow on a real broker: a flood far over capacity loses no DM.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NatsServer, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { call, dmConsumerInfo, hook, mcpClient, startConnector } from "./helpers.js";

let server: NatsServer;
beforeAll(async () => {
  server = await NatsServer.start();
});
afterAll(async () => {
  await server?.cleanup();
});

describe("inbox overflow", () => {
  it("a flood of channel posts and DMs over capacity keeps every DM: none lost after the flood drains", async () => {
    const mesh = await TestMesh.start(server, "flood");
    const s = await startConnector(mesh, "bob", { inbox: { capacity: 8, nakDelayMs: 150 }, launch: { channels: ["general"] } });
    const { client, close } = await mcpClient(s.connector);
    try {
      const alice = await mesh.joined("alice");
      const carol = await mesh.joined("carol");
      const dmTexts = new Set<string>();
      const sends: Array<Promise<unknown>> = [];
      for (let i = 0; i < 40; i++) {
        sends.push(carol.send("general", `chatter ${i}`));
        if (i % 2 === 0) {
          dmTexts.add(`dm ${i}`);
          sends.push(alice.dm("bob", `dm ${i}`));
        }
      }
      await Promise.all(sends);
      await until(() => s.connector.status().inbox.directed === 8, 5_000, "the inbox fills to capacity with directed mail");
      // Over capacity: channel traffic was evicted (acked) and DMs were left to the broker (not acked).
      expect(s.connector.status().inbox).toMatchObject({ total: 8, returned: expect.any(Number) });
      expect(s.connector.status().inbox.returned).toBeGreaterThan(0);

      // Drain the way a session does: hooks on each prompt, cotal_inbox in between.
      const seen = new Map<string, number>();
      const note = (text: string | undefined) => {
        for (const m of (text ?? "").matchAll(/│ (dm \d+)/g)) seen.set(m[1]!, (seen.get(m[1]!) ?? 0) + 1);
      };
      await until(
        async () => {
          note((await hook(s.env, "UserPromptSubmit", { prompt: "next" })).context);
          note((await call(client, "cotal_inbox")).text);
          return [...dmTexts].every((t) => seen.has(t));
        },
        20_000,
        "every DM reaches the model",
        50,
      );
      expect([...seen.keys()].filter((k) => dmTexts.has(k)).sort()).toEqual([...dmTexts].sort());
      expect([...seen.values()].every((c) => c === 1)).toBe(true); // each handed over exactly once
      await until(async () => (await dmConsumerInfo(mesh, "bob")).num_ack_pending === 0, 5_000, "every DM acked");
      const info = await dmConsumerInfo(mesh, "bob");
      expect(info.num_pending).toBe(0);
      expect(info.ack_floor.stream_seq).toBe(20);
    } finally {
      await close();
      await s.close();
      await mesh.close();
    }
  });
});
