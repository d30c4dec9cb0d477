import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { callControl, ControlCallError, StorageLimitError, type Endpoint } from "../../broker/index.js";
import { localPrincipal, names } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";

/**
 * Least privilege: a manager credential used to read every channel's history, and
 * a storage refusal said only "maximum … exceeded", naming neither the stream nor the limit.
 */
const SPACE = "lp";
const BACKLOG = 3;
let mesh: TestMesh;
let alice: Endpoint;

beforeAll(async () => {
  mesh = await TestMesh.startStatic(SPACE, { limits: { backlogPerSender: BACKLOG } });
  alice = await mesh.joined("alice");
  await alice.send("general", "for the team only");
});

afterAll(async () => {
  await mesh?.close();
});

describe("least privilege", () => {
  test("a manager credential cannot read a channel's history; an observer still can", async () => {
    const manager = await mesh.connection(await mesh.mint({ name: "hostb", profile: "manager" }), "_INBOX.local.hostb");
    const err = await callControl(manager, SPACE, "history", localPrincipal("hostb"), { channel: "general" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ControlCallError);
    expect(err).toMatchObject({ code: "read-denied" });
    const observer = await mesh.connection(await mesh.mint({ name: "olga", profile: "observer" }), "_INBOX.local.olga");
    const page = await callControl(observer, SPACE, "history", localPrincipal("olga"), { channel: "general" });
    expect(page.items.map((i) => i.message.parts[0])).toContainEqual({ kind: "text", text: "for the team only" });
  });

  test("a storage refusal names the stream, the limit and the flag that raises it", async () => {
    for (let i = 0; i < BACKLOG; i++) await alice.dm("ghost", `waiting ${i}`);
    const err = await alice.dm("ghost", "one too many").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageLimitError);
    const message = (err as StorageLimitError).message;
    expect(message).toContain(names.dmStream(SPACE));
    expect(message).toContain("backlog one sender may have waiting for one recipient");
    expect((err as StorageLimitError).remedy).toContain("--dm-backlog");
  });
});
