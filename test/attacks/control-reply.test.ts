// The mesh service answers on the control rail with its own (broad) rights: a request whose
// reply subject is not an inbox must be dropped unexecuted, or a caller could aim the answer at
// `$JS.API.STREAM.PURGE.<stream>` and have the service purge it.
import { jetstreamManager } from "@nats-io/jetstream";
import { afterEach, describe } from "vitest";
import { callControl, isReplyInbox, MESH_ENDPOINT, setLogDestination } from "../../broker/internal.js";
import { controlSubject, localPrincipal, names, principalId, type ControlRequest } from "../../schemas/index.js";
import { expect, test, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";

let mesh: TestMesh | undefined;
afterEach(async () => {
  setLogDestination(undefined);
  await mesh?.close();
  mesh = undefined;
});

describe("the mesh service replies only to a proper inbox", () => {
  test("isReplyInbox takes requester inboxes and service-import replies, nothing else", () => {
    for (const ok of ["_INBOX.abc.def", "_INBOX.local.alice.x1", "_R_.xyz.abc"]) expect(isReplyInbox(ok)).toBe(true);
    for (const bad of [
      undefined,
      "",
      "$JS.API.STREAM.PURGE.DM_s",
      "$KV.cotal_presence_s.local.bob",
      "cotal.s.chat.local.bob.general",
      "_INBOX",
      "_INBOX.>",
      "_INBOX.a.*",
      "_INBOX..x",
      "x._INBOX.a",
    ]) {
      expect(isReplyInbox(bad)).toBe(false);
    }
  });

  test("a control call whose reply is $JS.API.STREAM.PURGE.DM_<space> leaves the DM stream untouched", async ({ nats }) => {
    const logs: Array<Record<string, unknown>> = [];
    setLogDestination({ write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
    mesh = await TestMesh.start(nats, "replyatk", { warnIntervalMs: 500 });
    const alice = await mesh.joined("alice");
    for (let i = 0; i < 5; i++) await alice.dm("bob", `mail ${i}`);
    const nc = await mesh.rawConnection();
    const jsm = await jetstreamManager(nc);
    const dmStream = names.dmStream(mesh.space);
    expect((await jsm.streams.info(dmStream)).state.messages).toBe(5);

    const mallory = localPrincipal("mallory");
    const purge = `$JS.API.STREAM.PURGE.${dmStream}`;
    for (const command of ["ping", "roster", "channels", "history"]) {
      const req: ControlRequest = {
        id: `atk-${command}`,
        deadline: Date.now() + 10_000,
        caller: principalId(mallory),
        args: command === "history" ? { channel: "general" } : {},
      };
      nc.publish(controlSubject(mesh.space, MESH_ENDPOINT, "one", command, mallory), JSON.stringify(req), { reply: purge });
    }
    // The service reads its rail in order: once a proper call after them is answered, all four were handled.
    await expect(callControl(nc, mesh.space, "ping", mallory)).resolves.toMatchObject({ space: mesh.space });
    // The first is logged, the other three counted in one line (warnings about one caller are sampled).
    await until(() => logs.some((l) => l.reply === purge && l.dropped === 3), 5_000, "the service logs the dropped requests, then their count");
    const dropped = logs.filter((l) => l.reply === purge);
    expect(dropped).toHaveLength(2);
    expect(dropped.every((l) => l.level === 40 && l.source === "local.mallory" && l.reason === "control-reply-not-inbox")).toBe(true);
    expect((await jsm.streams.info(dmStream)).state.messages).toBe(5);

    // The attack was real: the same subject, published to by a client with the rights, purges.
    await nc.request(purge, "");
    expect((await jsm.streams.info(dmStream)).state.messages).toBe(0);
  });
});
