// The restart policy and what the seat log tells it (docs/manager.md, Supervision and fencing): an
// exit is judged by the same rule whether the manager saw it happen or found it in the log after a
// restart, counting the restarts within the window before that exit.
import { describe, expect, it } from "vitest";
import { exitVerdict, incarnationPast, newLifecycleUid, projectSeat, type SeatEntry } from "../../manager/internal.js";
import { SeatEvent, type SeatEventInput } from "../../schemas/index.js";

const T0 = 1_000_000;
const killed = { code: null, signal: "SIGKILL" };
const policy = { exit: killed, exitAt: T0, restarts: 2, windowMs: 60_000 };

describe("the restart policy", () => {
  it("restarts a seat that joined while its restarts within the window stay within its limit", () => {
    expect(exitVerdict({ ...policy, joined: true, restartsAt: [T0 - 10_000] })).toEqual({ recent: [T0 - 10_000, T0] });
  });

  it("retires one more exit than it allows as a crash loop; restarts older than the window do not count", () => {
    expect(exitVerdict({ ...policy, joined: true, restartsAt: [T0 - 20_000, T0 - 10_000] }).retire).toBe(
      "crash loop: exited 3 times within 60 s, last killed by SIGKILL",
    );
    expect(exitVerdict({ ...policy, joined: true, restartsAt: [T0 - 90_000, T0 - 60_000, T0 - 10_000] }).retire).toBeUndefined();
  });

  it("retires a seat that never joined as failed, naming a blocking screen it stopped on", () => {
    expect(exitVerdict({ ...policy, exit: { code: 3, signal: null }, joined: false, restartsAt: [] }).retire).toBe("failed: exit code 3 before it joined");
    expect(exitVerdict({ ...policy, joined: false, restartsAt: [], blockedBy: "the login screen" }).retire).toBe(
      "failed: the seat stopped on the login screen, then killed by SIGKILL",
    );
  });

  it("starts a restarted incarnation that exits before it joins again after a pause that doubles, not counting it as a crash, for one window", () => {
    const exit1 = { code: 1, signal: null };
    // Two crashes after joining already in the window: a third would retire the seat as a crash loop.
    const crashes = [T0 - 5_000, T0 - 2_000];
    const first = exitVerdict({ ...policy, exit: exit1, joined: true, joinedNow: false, restartsAt: crashes });
    expect(first).toEqual({ recent: crashes, pauseMs: 1_000, rejoining: { since: T0, tries: 1 } });
    const second = exitVerdict({ ...policy, exit: exit1, exitAt: T0 + 3_000, joined: true, joinedNow: false, restartsAt: crashes, rejoining: first.rejoining });
    expect(second).toEqual({ recent: crashes, pauseMs: 2_000, rejoining: { since: T0, tries: 2 } });
    const later = exitVerdict({ ...policy, exitAt: T0 + 40_000, joined: true, joinedNow: false, restartsAt: [], rejoining: { since: T0, tries: 9 } });
    expect(later.pauseMs).toBe(15_000);
    // A whole window of incarnations that could not join: retired as failed, saying so.
    expect(exitVerdict({ ...policy, exitAt: T0 + 60_000, joined: true, joinedNow: false, restartsAt: [], rejoining: { since: T0, tries: 10 } }).retire).toBe(
      "failed: restarted 11 times, it could not join for 60 s, last killed by SIGKILL before it joined",
    );
    // One that joined again counts as a crash once more, at once.
    expect(exitVerdict({ ...policy, joined: true, joinedNow: true, restartsAt: [T0 - 5_000], rejoining: undefined })).toEqual({ recent: [T0 - 5_000, T0] });
  });
});

describe("what the log tells the policy", () => {
  const uid = newLifecycleUid();
  const entry = (seq: number, e: SeatEventInput, writer = "local.cotal_cli"): SeatEntry => ({ event: SeatEvent.parse(e), writer, seq });
  const base = { seat: "local.s", uid, manager: "m1" };
  const entries = [
    entry(1, { type: "requested", ...base, epoch: 0, ts: T0, agent: "echo" }),
    entry(2, { type: "launched", ...base, epoch: 0, ts: T0 + 1, terminal: "process" }),
    entry(3, { type: "joined", ...base, epoch: 0, ts: T0 + 2 }),
    entry(4, { type: "exited", ...base, epoch: 0, ts: T0 + 3, code: null, signal: "SIGKILL" }),
    entry(5, { type: "restarted", ...base, epoch: 1, ts: T0 + 4, reason: "killed by SIGKILL" }),
    // Another writer's record (another manager's credential) is not the owner's: never counted.
    entry(6, { type: "restarted", ...base, manager: "m2", epoch: 2, ts: T0 + 5, reason: "forged" }, "local.m2"),
    entry(7, { type: "launched", ...base, epoch: 1, ts: T0 + 6, terminal: "process" }),
    entry(8, { type: "exited", ...base, epoch: 1, ts: T0 + 7, code: 0, signal: null, retiring: "stopped by local.cotal_cli" }),
  ];
  const h = { seat: "local.s", entries, lastSeqBy: new Map([["local.cotal_cli", 8]]) };

  it("an exit that retires the seat says why, and a later launch clears it", () => {
    const r = projectSeat(h)!;
    expect(r).toMatchObject({ state: "exited", epoch: 1, retiring: "stopped by local.cotal_cli" });
    const relaunched = projectSeat({ ...h, entries: [...entries, entry(9, { type: "launched", ...base, epoch: 1, ts: T0 + 8, terminal: "process" })] })!;
    expect(relaunched.retiring).toBeUndefined();
  });

  it("the incarnation's restarts and whether it joined, by its owner's records only", () => {
    expect(incarnationPast(h, projectSeat(h)!)).toEqual({ restartsAt: [T0 + 4], joined: true });
  });
});
