// The seat log's records: what each type must hold, the bounds a run's cost and time keep, and
// which writer a reader believes (the subject's pinned writer, never the body alone).
import { describe, expect, it } from "vitest";
import { MAX_RUN_COST_USD, OPERATOR_PRINCIPAL, RUN_CLOCK_SKEW_MS, SeatEvent, seatRecordProblem } from "../../schemas/index.js";

const UID = "a".repeat(26);
const base = { seat: "local.bob", uid: UID, epoch: 0, ts: 1_000, manager: "hosta" };
const subject = { seat: { owner: "local", actor: "bob" }, from: { owner: "local", actor: "hosta" } };

describe("SeatEvent", () => {
  it("a request that names no agent stays without one (the manager reads the registry's default) and keeps who spawned it", () => {
    const e = SeatEvent.parse({ type: "requested", ...base, spawnedBy: "local.lead" });
    expect(e).toMatchObject({ type: "requested", spawnedBy: "local.lead" });
    expect(e).not.toHaveProperty("agent");
    expect(SeatEvent.parse({ type: "requested", ...base, agent: "codex" })).toMatchObject({ agent: "codex" });
  });

  it("refuses an unknown type, an agent outside the registry, and a uid that is not one", () => {
    expect(SeatEvent.safeParse({ type: "vanished", ...base }).success).toBe(false);
    expect(SeatEvent.safeParse({ type: "requested", ...base, agent: "copilot_x" }).success).toBe(false);
    expect(SeatEvent.safeParse({ type: "joined", ...base, uid: "UPPER" }).success).toBe(false);
    expect(SeatEvent.safeParse({ type: "exited", ...base, code: null, signal: "SIGKILL" }).success).toBe(true);
    expect(SeatEvent.safeParse({ type: "exited", ...base }).success).toBe(false);
  });

  it("a run's cost lies between 0 and MAX_RUN_COST_USD", () => {
    const run = { type: "run", ...base, status: "ok" };
    expect(SeatEvent.safeParse({ ...run, costUsd: 0 }).success).toBe(true);
    expect(SeatEvent.safeParse({ ...run, costUsd: MAX_RUN_COST_USD }).success).toBe(true);
    expect(SeatEvent.safeParse({ ...run, costUsd: MAX_RUN_COST_USD + 0.01 }).success).toBe(false);
    expect(SeatEvent.safeParse({ ...run, costUsd: -0.01 }).success).toBe(false);
  });

  it("a run dated more than the clock skew ahead is refused, naming why; other records are not dated-checked", () => {
    const future = Date.now() + RUN_CLOCK_SKEW_MS + 60_000;
    const r = SeatEvent.safeParse({ type: "run", ...base, ts: future, status: "ok", costUsd: 1 });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toContain("in the future");
    expect(r.error?.issues[0]?.path).toEqual(["ts"]);
    expect(SeatEvent.safeParse({ type: "run", ...base, ts: Date.now() + RUN_CLOCK_SKEW_MS - 60_000, status: "ok", costUsd: 1 }).success).toBe(true);
    expect(SeatEvent.safeParse({ type: "joined", ...base, ts: future }).success).toBe(true);
  });
});

describe("seatRecordProblem", () => {
  const joined = SeatEvent.parse({ type: "joined", ...base });

  it("a record written by the manager it names, about its subject's seat, counts", () => {
    expect(seatRecordProblem(subject, joined)).toBeUndefined();
  });

  it("the operator may write for any manager", () => {
    expect(seatRecordProblem({ ...subject, from: OPERATOR_PRINCIPAL }, SeatEvent.parse({ type: "joined", ...base, manager: "elsewhere" }))).toBeUndefined();
  });

  it("a body naming another seat than its subject is not counted", () => {
    expect(seatRecordProblem({ ...subject, seat: { owner: "local", actor: "eve" } }, joined)).toBe("its seat local.bob is not its subject's local.eve");
  });

  it("a writer that is not the manager the body names (or not local) is not counted", () => {
    expect(seatRecordProblem({ ...subject, from: { owner: "local", actor: "hostb" } }, joined)).toBe("it names manager hosta but was written by local.hostb");
    expect(seatRecordProblem({ ...subject, from: { owner: "acct", actor: "hosta" } }, joined)).toBe("it names manager hosta but was written by acct.hosta");
    const unnamed = SeatEvent.parse({ type: "joined", ...base, manager: undefined });
    expect(seatRecordProblem(subject, unnamed)).toBe("it names manager (none) but was written by local.hosta");
  });
});
