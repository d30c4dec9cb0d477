// Artifacts through the mesh service: clients have no JetStream, so bytes go in and
// out of the space's Object Store only over the artifact-* control commands. Content-addressed:
// known bytes are not sent again; bytes that do not have their declared digest are not kept.
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe } from "vitest";
import { callControl, ControlCallError, fetchArtifact, inboxPrefix, putArtifact, type ControlParty, type Endpoint } from "../../broker/internal.js";
import { localPrincipal, names } from "../../schemas/index.js";
import { connect } from "@nats-io/transport-node";
import { expect, NatsServer, test } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { meshMode } from "../harness/mesh-mode.js";

let mesh: TestMesh | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempFile(name: string, bytes: Uint8Array): string {
  const dir = mkdtempSync(join(tmpdir(), "cotal-art-"));
  dirs.push(dir);
  const file = join(dir, name);
  writeFileSync(file, bytes);
  return file;
}

const sha = (b: Uint8Array) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

async function fetchAll(ep: Endpoint, digest: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  await fetchArtifact(ep, digest, (c) => void chunks.push(c));
  return Buffer.concat(chunks);
}

/** Messages in the artifacts bucket's stream (chunks and metadata), as the data account sees them. */
async function storedMessages(m: TestMesh): Promise<number> {
  return (await (await m.dataJsm()).streams.info(`OBJ_${names.artifactsBucket(m.space)}`)).state.messages;
}

describe("artifacts", () => {
  test("a file round-trips byte-identical between two agents, and storing it again sends nothing", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "art");
    const alice = await mesh.endpoint("alice");
    const bob = await mesh.endpoint("bob");
    const bytes = randomBytes(1024 * 1024 + 12_345);
    const { part, uploaded } = await putArtifact(alice, tempFile("data.bin", bytes), { audience: [{ channel: "general" }] });
    expect(uploaded).toBe(true);
    expect(part).toEqual({
      kind: "artifact",
      name: "data.bin",
      mediaType: "application/octet-stream",
      digest: sha(bytes),
      size: bytes.length,
      bucket: names.artifactsBucket(mesh.space),
    });
    expect((await fetchAll(bob, part.digest)).equals(bytes)).toBe(true);

    const before = await storedMessages(mesh);
    const again = await putArtifact(bob, tempFile("copy.bin", bytes));
    expect(again).toMatchObject({ uploaded: false, part: { digest: part.digest, size: bytes.length, name: "copy.bin" } });
    expect(await storedMessages(mesh)).toBe(before);
  });

  test("an empty file is an artifact too", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "artempty");
    const alice = await mesh.endpoint("alice");
    const { part } = await putArtifact(alice, tempFile("empty.txt", new Uint8Array()));
    expect(part).toMatchObject({ size: 0, mediaType: "text/plain", digest: sha(new Uint8Array()) });
    expect((await fetchAll(alice, part.digest)).length).toBe(0);
  });

  test("bytes that do not have the digest begun with are refused at commit and nothing is kept", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "artlie");
    const alice = await mesh.endpoint("alice");
    const claimed = randomBytes(1000);
    const sent = randomBytes(1000);
    const before = await storedMessages(mesh);
    const begun = await callControl(alice.nc, mesh.space, "artifact-begin", alice.me, {
      digest: sha(claimed),
      size: 1000,
      name: "x.bin",
      mediaType: "application/octet-stream",
    });
    await callControl(alice.nc, mesh.space, "artifact-chunk", alice.me, { upload: begun.upload!, seq: 0, data: sent.toString("base64") });
    const err = await callControl(alice.nc, mesh.space, "artifact-commit", alice.me, { upload: begun.upload! }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ControlCallError);
    expect(err).toMatchObject({ code: "digest-mismatch", outcome: "not-executed" });
    expect((err as Error).message).toContain(`not the 1000 bytes of ${sha(claimed)}`);
    await expect(fetchAll(alice, sha(claimed))).rejects.toMatchObject({ code: "artifact-not-found" });
    await expect.poll(() => storedMessages(mesh!), { timeout: 5_000 }).toBe(before);
  });

  test("an upload is its beginner's: another caller's chunks are refused", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "artown");
    const alice = await mesh.endpoint("alice");
    const mallory = await mesh.endpoint("mallory");
    const bytes = randomBytes(10);
    const begun = await callControl(alice.nc, mesh.space, "artifact-begin", alice.me, { digest: sha(bytes), size: 10, name: "a", mediaType: "text/plain" });
    const err = await callControl(mallory.nc, mesh.space, "artifact-chunk", mallory.me, {
      upload: begun.upload!,
      seq: 0,
      data: bytes.toString("base64"),
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "unknown-upload" });
    await callControl(alice.nc, mesh.space, "artifact-chunk", alice.me, { upload: begun.upload!, seq: 0, data: bytes.toString("base64") });
    expect(await callControl(alice.nc, mesh.space, "artifact-commit", alice.me, { upload: begun.upload! })).toMatchObject({
      digest: sha(bytes),
      uploader: "local.alice",
    });
  });

  test("an upload left idle is dropped: its chunks are purged and it takes no more", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "artidle", { uploadIdleMs: 300 });
    const alice = await mesh.endpoint("alice");
    const before = await storedMessages(mesh);
    const bytes = randomBytes(300 * 1024);
    const begun = await callControl(alice.nc, mesh.space, "artifact-begin", alice.me, {
      digest: sha(bytes),
      size: bytes.length,
      name: "a",
      mediaType: "text/plain",
    });
    const chunk = (seq: number) =>
      callControl(alice.nc, mesh!.space, "artifact-chunk", alice.me, {
        upload: begun.upload!,
        seq,
        data: bytes.subarray(seq * 131072, (seq + 1) * 131072).toString("base64"),
      });
    await chunk(0);
    await chunk(1);
    await expect.poll(() => chunk(2).catch((e: unknown) => (e as { code?: string }).code), { timeout: 5_000 }).toBe("unknown-upload");
    await expect.poll(() => storedMessages(mesh!), { timeout: 5_000 }).toBe(before);
  });

  test("a full artifacts bucket refuses the upload, saying so, and keeps nothing of it", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "artfull", { limits: { artifactsBytes: 512 * 1024 } });
    const alice = await mesh.endpoint("alice");
    const small = randomBytes(1000);
    await putArtifact(alice, tempFile("small.bin", small));
    const before = await storedMessages(mesh);
    const err = await putArtifact(alice, tempFile("big.bin", randomBytes(2 * 1024 * 1024))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ControlCallError);
    expect(err).toMatchObject({ code: "upload-failed" });
    expect((err as Error).message).toMatch(/maximum bytes|insufficient|exceeded/i);
    await expect.poll(() => storedMessages(mesh!), { timeout: 5_000 }).toBe(before);
    expect((await fetchAll(alice, sha(small))).equals(small)).toBe(true);
  });

  test.runIf(meshMode() === "static")("who may fetch: the uploader, the audience, admins; to anyone else the artifact is absent", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "artwho");
    const m = mesh;
    const agent = async (name: string, channels: string[]) =>
      m.endpoint(name, { creds: await m.mint({ name, profile: "agent", allowSubscribe: channels, allowPublish: channels }) });
    const [alice, bob, carol, eve, lou] = [
      await agent("alice", ["general"]),
      await agent("bob", ["general"]),
      await agent("carol", []),
      await agent("eve", ["lobby"]),
      await agent("lou", ["lobby"]),
    ];
    const boss = {
      nc: await m.connection(await m.mint({ name: "boss", profile: "admin" }), inboxPrefix(localPrincipal("boss"))),
      space: m.space,
      me: localPrincipal("boss"),
    };
    const post = randomBytes(3000);
    const letter = randomBytes(2000);
    await putArtifact(alice, tempFile("post.bin", post), { audience: [{ channel: "general" }] });
    await putArtifact(alice, tempFile("letter.bin", letter), { audience: [{ to: "local.bob" }] });
    const reads = async (who: ControlParty, bytes: Buffer) =>
      fetchArtifact(who, sha(bytes), () => undefined).then(
        () => true,
        (e: unknown) => (expect(e).toMatchObject({ code: "artifact-not-found" }), false),
      );
    expect([await reads(alice, post), await reads(bob, post), await reads(boss, post), await reads(eve, post), await reads(carol, post)]).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
    expect([await reads(bob, letter), await reads(boss, letter), await reads(carol, letter)]).toEqual([true, true, false]);

    // Eve holds the post's bytes but may not read it: she must send them (proof), then may read and share.
    expect((await putArtifact(eve, tempFile("post.bin", post), { audience: [{ channel: "lobby" }] })).uploaded).toBe(true);
    expect([await reads(eve, post), await reads(lou, post), await reads(bob, post)]).toEqual([true, true, true]);
    // Bob may read the letter, so sharing it with carol sends nothing.
    expect((await putArtifact(bob, tempFile("letter.bin", letter), { audience: [{ to: "local.carol" }] })).uploaded).toBe(false);
    expect(await reads(carol, letter)).toBe(true);
  });

  test.runIf(meshMode() === "open")("an open mesh lets everyone fetch, whatever the audience", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "artopen");
    const alice = await mesh.endpoint("alice");
    const eve = await mesh.endpoint("eve");
    const bytes = randomBytes(100);
    await putArtifact(alice, tempFile("a.bin", bytes), { audience: [{ to: "local.bob" }] });
    expect((await fetchAll(eve, sha(bytes))).equals(bytes)).toBe(true);
  });

  test("bytes served that do not match the digest are refused by the reader", async () => {
    // A hand-built artifact endpoint that serves other bytes than the digest names (a damaged store).
    const server = await NatsServer.start();
    const nc = await connect({ servers: server.url });
    try {
      const claimed = randomBytes(64);
      const served = randomBytes(64);
      nc.subscribe("cotal.fake.ep.artifact.one.artifact-get.*.*", {
        callback: (_e, m) => {
          const { id } = JSON.parse(new TextDecoder().decode(m.data)) as { id: string };
          const info = { digest: sha(claimed), size: 64, name: "x", mediaType: "application/octet-stream", bucket: "cotal_artifacts_fake" };
          m.respond(JSON.stringify({ id, ok: true, data: { info, data: served.toString("base64"), next: 2 } }));
        },
      });
      await nc.flush();
      const got: Buffer[] = [];
      const err = await fetchArtifact({ nc, space: "fake", me: localPrincipal("alice") }, sha(claimed), (c) => void got.push(c)).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "digest-mismatch" });
      expect((err as Error).message).toContain(`do not match it (64 of 64 bytes, digest ${sha(served)})`);
    } finally {
      await nc.close();
      await server.cleanup();
    }
  });

  test("an unknown digest is artifact-not-found; a malformed one is refused before asking", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "artnone");
    const alice = await mesh.endpoint("alice");
    await expect(fetchAll(alice, `sha256:${"0".repeat(64)}`)).rejects.toMatchObject({ code: "artifact-not-found" });
    await expect(fetchAll(alice, "sha256:XYZ")).rejects.toMatchObject({ code: "invalid-digest" });
  });
});
