// The seat log is the manager's fence (docs/manager.md): every append names the seat's last sequence,
// so JetStream refuses a writer whose view is stale, and a restarted manager rebuilds its table
// by replaying. Run with the operator's CLI credential on a static mesh (the manager's reach).
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { inboxPrefix, jetStreamConnection, logger } from "../../broker/internal.js";
import { localPrincipal } from "../../schemas/index.js";
import { newLifecycleUid, SeatLog, StaleSeatLogError, projectSeat } from "../../manager/internal.js";
import { TestMesh } from "../harness/mesh.js";

let mesh: TestMesh;
let log: SeatLog;
beforeAll(async () => {
  mesh = await TestMesh.startStatic("seats");
  const nc = await mesh.rawConnection();
  log = await SeatLog.open(jetStreamConnection(nc, mesh.cliCreds), mesh.space, logger("test"));
});
afterAll(async () => {
  await mesh?.close();
});

const [U1, U2, U3, U9] = [newLifecycleUid(), newLifecycleUid(), newLifecycleUid(), newLifecycleUid()];
const base = (seat: string, uid: string) => ({ seat, uid, epoch: 0, ts: Date.now(), manager: "m1" });

describe("seat log", () => {
  test("appends in order; a writer with a stale view is refused by JetStream", async () => {
    const s1 = await log.append({ type: "requested", ...base("local.alice", U1), agent: "echo" }, 0);
    const s2 = await log.append({ type: "launched", ...base("local.alice", U1), terminal: "process", pid: 42 }, s1);
    // A second writer still believing the log ends at s1 (a zombie manager) is fenced.
    const stale = await log.append({ type: "retired", ...base("local.alice", U1), reason: "zombie" }, s1).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(StaleSeatLogError);
    expect((stale as StaleSeatLogError).code).toBe("stale-seat-log");
    // So is one that thinks the seat has no history at all.
    await expect(log.append({ type: "requested", ...base("local.alice", U9), agent: "echo" }, 0)).rejects.toBeInstanceOf(StaleSeatLogError);
    // Another seat's log is independent.
    await log.append({ type: "requested", ...base("local.bob", U2), agent: "claude" }, 0);
    const s3 = await log.append({ type: "joined", ...base("local.alice", U1) }, s2);

    const table = await log.replay();
    expect([...table.keys()].sort()).toEqual(["local.alice", "local.bob"]);
    const alice = projectSeat(table.get("local.alice")!)!;
    expect(alice).toMatchObject({ state: "joined", uid: U1, terminal: "process", pid: 42, agent: "echo", lastSeq: s3 });
    expect(projectSeat(table.get("local.bob")!)).toMatchObject({ state: "requested", agent: "claude" });
  });

  test("a record that is not a seat event is skipped on replay, not fatal", async () => {
    const nc = await mesh.rawConnection();
    await jetStreamConnection(nc, mesh.cliCreds).request(`cotal.${mesh.space}.seat.local.junk.local.cotal_cli`, new TextEncoder().encode("{not json"), {
      timeout: 5_000,
    });
    const table = await log.replay();
    expect(table.has("local.junk")).toBe(false);
    expect(table.has("local.alice")).toBe(true);
  });

  test("records an older manager wrote, naming the terminal host `runtime`, replay as `terminal`", async () => {
    const js = jetStreamConnection(await mesh.rawConnection(), mesh.cliCreds);
    const U = newLifecycleUid();
    const put = (e: object) =>
      js.request(`cotal.${mesh.space}.seat.local.olden.local.cotal_cli`, new TextEncoder().encode(JSON.stringify(e)), { timeout: 5_000 });
    await put({ type: "requested", ...base("local.olden", U), agent: "claude", runtime: "pty", channels: [] });
    await put({ type: "launched", ...base("local.olden", U), runtime: "pty", pid: 7 });
    const olden = projectSeat((await log.replay()).get("local.olden")!)!;
    expect(olden).toMatchObject({ state: "launched", terminal: "pty", spec: { terminal: "pty" }, pid: 7 });
    expect(olden).not.toHaveProperty("runtime");
  });

  test("events of an older incarnation do not move the new one", async () => {
    const t = await log.replay();
    const last = t.get("local.bob")!.lastSeqBy.get("local.cotal_cli")!;
    const s = await log.append({ type: "requested", ...base("local.bob", U3), agent: "echo" }, last);
    const s2 = await log.append({ type: "exited", ...base("local.bob", U2), code: 1, signal: null }, s);
    const bob = projectSeat((await log.replay()).get("local.bob")!)!;
    expect(bob).toMatchObject({ uid: U3, state: "requested", lastSeq: s2 });
  });

  test("each manager writes its own subject: of two claims on a free name the first in the log wins, and only the owner's records move its seat", async () => {
    const opened = async (name: string) => {
      const creds = await mesh.mint({ name, profile: "manager" });
      const conn = await mesh.connection(creds, inboxPrefix(localPrincipal(name)));
      return SeatLog.open(jetStreamConnection(conn, creds), mesh.space, logger(name), localPrincipal(name));
    };
    const [ma, mb] = [await opened("ma"), await opened("mb")];
    const [UA, UB] = [newLifecycleUid(), newLifecycleUid()];
    const at = (uid: string, manager: string) => ({ seat: "local.carol", uid, epoch: 0, ts: Date.now(), manager });
    // Both believe carol is free (each has written nothing on it): the broker takes both, the log orders them.
    const a1 = await ma.append({ type: "requested", ...at(UA, "ma"), agent: "echo" }, 0);
    await mb.append({ type: "requested", ...at(UB, "mb"), agent: "echo" }, 0);
    await mb.append({ type: "retired", ...at(UA, "mb"), reason: "forged by another manager" }, 1 + a1);
    const carol = () => ma.history(localPrincipal("carol")).then((h) => projectSeat(h!)!);
    expect(await carol()).toMatchObject({ uid: UA, manager: "ma", state: "requested", writer: "local.ma", lastSeq: a1 });
    // A record naming another manager than its writer is refused before it is sent (and skipped if it were).
    await expect(ma.append({ type: "retired", ...at(UA, "mb"), reason: "x" }, a1)).rejects.toMatchObject({ code: "seat-log-writer" });
    // The owner retires it; then the name is free for the next claim, whoever makes it.
    const a2 = await ma.append({ type: "retired", ...at(UA, "ma"), reason: "stopped" }, a1);
    expect(await carol()).toMatchObject({ uid: UA, state: "retired" });
    const h = (await mb.history(localPrincipal("carol")))!;
    await mb.append({ type: "requested", ...at(UB, "mb"), agent: "echo" }, h.lastSeqBy.get("local.mb")!);
    expect(await carol()).toMatchObject({ uid: UB, manager: "mb", writer: "local.mb" });
    expect(a2).toBeGreaterThan(a1);
  });
});
