// `cotal backup` / `cotal restore` through the built CLI: a static space with
// posts, a channel setting, a pending DM, a minted and a revoked credential and seat records is
// backed up, restored onto a new mesh in another folder, and each of those is as it was there:
// history, the channel's description, the seats' records in the seat log (listed by `cotal ps --all`:
// the restored host manager takes the backed-up one's instance id), the DM still pending and
// delivered to its recipient connecting with her OLD credential, the revoked one refused. The
// source's seat still running on the same host is not adopted by the restored mesh's manager. A mesh
// holding data is refused without --force; a backup with one changed byte is refused by name.
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { cliFolder, CotalProcess, freePort, type CliResult } from "../../harness/cli.js";
import { until } from "../../../testbed/until.js";

const source = cliFolder("cotal-backup-a-", 90_000);
const target = cliFolder("cotal-backup-b-", 120_000);
const scratch = mkdtempSync(join(tmpdir(), "cotal-backups-"));
const backup = join(scratch, "team-backup");
const ok = (r: CliResult, what: string) => expect(r.code, `${what}: exit code; stderr: ${r.stderr}`).toBe(0);

const serverOf = (dir: string) => (JSON.parse(readFileSync(join(dir, ".cotal", "mesh.json"), "utf8")) as { server: string }).server;

let alice: string;
let bob: string;
/** The source's seat e2, still running when the backup is taken (and after the restore). */
let e2: SeatJson;

interface SeatJson {
  name: string;
  state: string;
  instance: string;
  uid: string;
  pid?: number;
  reason?: string;
  exit?: { output?: string };
}

/** `cotal ps --json` (with `extra`): each manager's seats. */
async function ps(folder: typeof source, ...extra: string[]): Promise<Array<{ instance: string; seats?: SeatJson[] }>> {
  const r = await folder.cotal("ps", "--json", ...extra);
  ok(r, "ps");
  return r.json<Array<{ instance: string; seats?: SeatJson[] }>>();
}

beforeAll(async () => {
  ok(await source.cotal("up", "-d", "--space", "team", "--port", String(await freePort())), "up (source)");
  ok(await target.cotal("up", "-d", "--space", "team", "--port", String(await freePort())), "up (target)");
}, 120_000);

afterAll(async () => {
  // e2 still runs on the source: stopped here, before its folder's `cotal down`.
  await source.cotal("stop", "--name", "e2").catch(() => undefined);
  rmSync(scratch, { recursive: true, force: true });
}, 60_000);

interface Manifest {
  space: string;
  mode: string;
  natsServerVersion: string;
  cotalVersion: string;
  managerInstance?: string;
  streams: Array<{ name: string; messages: number; consumers: number }>;
  identity?: string[];
  files: Array<{ path: string; bytes: number; sha256: string }>;
}

describe("cotal backup and restore", () => {
  it("backs up a space with posts, a channel setting, a pending DM, a minted and a revoked credential and a seat record", async () => {
    const mintedAlice = await source.cotal(
      "mint",
      "alice",
      "--profile",
      "agent",
      "--allow-publish",
      "general",
      "--allow-subscribe",
      "general",
      "--provision",
      "--json",
    );
    ok(mintedAlice, "mint alice");
    alice = mintedAlice.json<{ creds: string }>().creds;
    const mintedBob = await source.cotal("mint", "bob", "--profile", "agent", "--allow-subscribe", "general", "--json");
    ok(mintedBob, "mint bob");
    bob = mintedBob.json<{ creds: string }>().creds;
    ok(await source.cotal("send", "msg", "general", "posted before the backup", "--creds", alice), "alice posts");
    ok(await source.cotal("send", "msg", "general", "the operator's post", "--as", "carol", "--impersonate"), "carol posts");
    ok(await source.cotal("channels", "set", "general", "--description", "the team's room"), "channel setting");
    ok(await source.cotal("send", "dm", "alice", "waiting for alice", "--as", "carol", "--impersonate"), "DM to alice (offline)");
    ok(await source.cotal("spawn", "--agent", "echo", "--name", "e1", "-d"), "spawn e1");
    ok(await source.cotal("stop", "--name", "e1"), "stop e1");
    ok(await source.cotal("spawn", "--agent", "echo", "--name", "e2", "-d"), "spawn e2 (it keeps running)");
    e2 = (await ps(source)).flatMap((m) => m.seats ?? []).find((v) => v.name === "e2")!;
    expect(e2).toMatchObject({ state: "joined", pid: expect.any(Number) });
    ok(await source.cotal("revoke", "bob"), "revoke bob");
    expect((await source.cotal("roster", "--creds", bob)).code, "bob is refused on the source").toBe(4);

    const r = await source.cotal("backup", backup, "--json");
    ok(r, "backup");
    const report = r.json<{ streams: Manifest["streams"]; identityFiles: number }>();
    expect(report.streams.find((s) => s.name === "CHAT_team")?.messages).toBe(2);
    expect(report.streams.find((s) => s.name === "DM_team")).toMatchObject({ messages: 1 });
    expect(report.streams.find((s) => s.name === "DM_team")!.consumers).toBeGreaterThanOrEqual(1);
    expect(report.streams.map((s) => s.name)).toEqual(
      expect.arrayContaining(["SEATS_team", "KV_cotal_members_team", "KV_cotal_channels_team", "OBJ_cotal_artifacts_team"]),
    );

    // The manifest: versions, the space, every file with its size and sha256 (the folder holds the keys: 0700/0600).
    const manifest = JSON.parse(readFileSync(join(backup, "manifest.json"), "utf8")) as Manifest;
    expect(manifest).toMatchObject({ space: "team", mode: "static", cotalVersion: expect.any(String), natsServerVersion: expect.stringMatching(/^2\./) });
    expect(manifest.identity).toEqual(
      expect.arrayContaining(["operator.nk", "clients/team.nk", "clients/team.signing.nk", "clients/team.jwt", "clients/team.revocations.json"]),
    );
    for (const f of manifest.files) {
      expect(statSync(join(backup, f.path)).size, f.path).toBe(f.bytes);
      expect(f.sha256).toMatch(/^sha256:[0-9a-f]{64}$/);
    }
    const walk = (d: string): string[] =>
      readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? [join(d, f), ...walk(join(d, f))] : [join(d, f)]));
    for (const p of [backup, ...walk(backup)]) expect([p, (statSync(p).mode & 0o777).toString(8)]).toEqual([p, statSync(p).isDirectory() ? "700" : "600"]);
  }, 120_000);

  it("restores onto a new mesh in another folder: history, channel settings, seat records, the pending DM, old and revoked credentials as they were", async () => {
    const manifest = JSON.parse(readFileSync(join(backup, "manifest.json"), "utf8")) as Manifest;
    const r = await target.cotal("restore", backup, "--json");
    ok(r, "restore");
    const report = r.json<{ identity: { sameIdentity: boolean; replaced: string }; streams: Manifest["streams"]; notes: string[] }>();
    expect(report.identity).toMatchObject({ sameIdentity: false, replaced: expect.stringContaining("auth.replaced-") });
    // The seat log: e1's records (requested … retired) and e2's, as many as were backed up.
    const seatRecords = manifest.streams.find((s) => s.name === "SEATS_team")!.messages;
    expect(seatRecords).toBeGreaterThanOrEqual(6);
    expect(report.streams.find((s) => s.name === "SEATS_team")?.messages).toBe(seatRecords);
    expect(report.notes.join("\n")).toContain(`this host's manager now runs as ${manifest.managerInstance}, the backed-up host's manager`);

    // The restored mesh's host manager is the backed-up host's: `cotal ps --all` lists its seat records.
    // e2 was running on the source (it still is, beside this mesh on the same host): its process is
    // not this manager's (launched from the source's folder), so it is not adopted, and with no
    // folder here it is retired, naming it.
    expect(manifest.managerInstance).toMatch(/\S/);
    expect(readFileSync(join(target.dir, ".cotal", "manager", "instance"), "utf8").trim()).toBe(manifest.managerInstance);
    let restoredSeats: SeatJson[] = [];
    await until(
      async () => {
        restoredSeats = (await ps(target, "--all", "--on", manifest.managerInstance!)).flatMap((m) => m.seats ?? []);
        return restoredSeats.find((v) => v.name === "e2")?.state === "retired";
      },
      60_000,
      "the restored seat records to be listed by cotal ps --all, e2 retired",
      500,
    );
    expect(restoredSeats.find((v) => v.name === "e1")).toMatchObject({
      state: "retired",
      instance: manifest.managerInstance,
      reason: expect.stringMatching(/^stopped by /),
    });
    const restoredE2 = restoredSeats.find((v) => v.name === "e2")!;
    expect(restoredE2).toMatchObject({ instance: manifest.managerInstance, uid: e2.uid });
    expect(restoredE2.reason).toMatch(/^failed: its folder .*\/seats\/e2 is missing when the manager started/);
    expect(restoredE2.exit?.output).toMatch(new RegExp(`^pid ${e2.pid} still runs, but its launch material is ${source.dir}.*: it was not adopted`));
    // And the source's e2 runs on, the same process, joined there.
    expect((await ps(source)).flatMap((m) => m.seats ?? []).find((v) => v.name === "e2")).toMatchObject({ state: "joined", pid: e2.pid, uid: e2.uid });

    const history = await target.cotal("history", "general", "--json");
    ok(history, "history on the target");
    const texts = history.json<Array<{ text: string }>>().map((m) => m.text);
    expect(texts).toEqual(expect.arrayContaining(["posted before the backup", "the operator's post"]));

    const channels = await target.cotal("channels", "list", "--json");
    ok(channels, "channels list");
    expect(
      channels.json<{ channels: Array<{ name: string; config: { description?: string } }> }>().channels.find((c) => c.name === "general")?.config.description,
    ).toBe("the team's room");

    // e1's records, read from the restored seat log with the mesh service's credential (the data account).
    const nc = await connect({
      servers: serverOf(target.dir),
      authenticator: credsAuthenticator(readFileSync(join(target.dir, ".cotal", "auth", "creds", "team", "mesh.creds"))),
    });
    try {
      const jsm = await jetstreamManager(nc);
      const records: Array<{ type: string; seat: string; reason?: string }> = [];
      for (let seq = 1; seq <= seatRecords; seq++) records.push((await jsm.streams.getMessage("SEATS_team", { seq }))!.json());
      expect(records.filter((e) => e.seat === "local.e1").map((e) => e.type)).toEqual(expect.arrayContaining(["requested", "joined", "retired"]));
    } finally {
      await nc.close();
    }

    // Still pending on the new mesh: its consumer came with the snapshot.
    const pending = await target.cotal("deliver", "pending", "alice", "--json");
    ok(pending, "deliver pending alice");
    expect(pending.json<{ pending: number }>().pending).toBe(1);

    // The revoked credential stays refused; the old minted one connects and gets the DM.
    const refused = await target.cotal("roster", "--creds", bob);
    expect(refused.code, refused.stderr).toBe(4);
    expect(refused.stderr).toContain("it was revoked");
    const listen = CotalProcess.spawn(["listen", "--json", "--creds", alice], { cwd: target.dir });
    try {
      const dm = await listen.waitForJson<{ type: string; kind?: string; text?: string }>(
        (l) => l.type === "message" && l.kind === "dm",
        30_000,
        "alice, connecting to the restored mesh with her old credential, to get the DM sent before the backup",
      );
      expect(dm.text).toBe("waiting for alice");
    } finally {
      await listen.stop("SIGINT").catch(() => undefined);
    }
  }, 180_000);

  it("refuses to restore onto a mesh that holds data, unless --force", async () => {
    const r = await target.cotal("restore", backup);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/already holds data \(.*CHAT_team: 2 messages/);
    expect(r.stderr).toContain("--force");
  }, 60_000);

  it("refuses a backup with a changed byte, naming the file, and changes nothing", async () => {
    const tampered = join(scratch, "tampered");
    cpSync(backup, tampered, { recursive: true });
    const file = join(tampered, "streams", "CHAT_team.snapshot");
    const bytes = readFileSync(file);
    const at = bytes.length >> 1;
    bytes.writeUInt8(bytes.readUInt8(at) ^ 0xff, at);
    writeFileSync(file, bytes);
    const r = await target.cotal("restore", tampered, "--force");
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain("The backup file streams/CHAT_team.snapshot does not match its sha256 in the manifest");
    const history = await target.cotal("history", "general", "--json");
    ok(history, "history after the refused restore");
    expect(history.json<unknown[]>()).toHaveLength(2);

    rmSync(join(tampered, "manifest.json"));
    const unfinished = await target.cotal("restore", tampered, "--force");
    expect(unfinished.code).toBe(1);
    expect(unfinished.stderr).toContain("has no manifest.json");
  }, 60_000);
});
