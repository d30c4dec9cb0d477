// The fault suite's pure parts, without hosts: a schedule drawn from a seed is drawn again the same
// (a report's replay command reruns what failed), and the checker names each kind of broken
// promise from records alone, nothing handed to a fenced seat among them.
import { describe, expect, it } from "vitest";
import { frameMessage } from "../../connector/internal.js";
import { check } from "../../testbed/faults/checker.js";
import { handedInTurn } from "../../testbed/faults/model-witness.js";
import { emptyRecords, type Records } from "../../testbed/faults/records.js";
import { describeSchedule, drawSchedule } from "../../testbed/faults/schedule.js";

const topo = { nodes: ["n1", "n2", "n3"], leaf: "leaf1", seats: ["e1", "e2"], power: true, fullDisk: true };

function records(fill: (r: Records) => void): Records {
  const r = emptyRecords();
  fill(r);
  return r;
}

const sent = (id: string, n: number, to: string, seq: number, kind: "dm" | "channel" = "dm") => ({
  id,
  kind,
  from: "sender",
  to,
  n,
  sentAt: n,
  receipt: { seq, at: n, duplicate: false },
});

describe("fault schedules", () => {
  it("draws the same schedule again from the same seed and index, and another from another index", () => {
    const a = drawSchedule(42, 7, topo);
    expect(describeSchedule(drawSchedule(42, 7, topo))).toBe(describeSchedule(a));
    const others = [0, 1, 2, 3, 4, 5].map((i) => describeSchedule(drawSchedule(42, i, topo)));
    expect(new Set(others).size).toBeGreaterThan(1);
    expect(a.faults.length).toBeGreaterThan(0);
    for (const f of a.faults) expect(f.atMs + f.forMs).toBeLessThanOrEqual(a.workloadMs);
  });

  it("draws only the kinds asked for, no power loss without the power layer, and no full disk on a server that does not handle one", () => {
    const kinds = (t: typeof topo) => new Set(Array.from({ length: 60 }, (_, i) => drawSchedule(1, i, t).faults.map((f) => f.kind)).flat());
    for (let i = 0; i < 20; i += 1) expect(drawSchedule(1, i, topo, ["kill-node"]).faults.every((f) => f.kind === "kill-node")).toBe(true);
    expect(kinds(topo).has("power-loss")).toBe(true);
    expect(kinds(topo).has("disk-full")).toBe(true);
    expect(kinds({ ...topo, power: false }).has("power-loss")).toBe(false);
    expect(kinds({ ...topo, fullDisk: false }).has("disk-full")).toBe(false);
    // Asked for, it is drawn (the switched-off run), and it fills the disk of the sender's inbox's leader.
    expect(drawSchedule(1, 0, { ...topo, fullDisk: false }, ["disk-full"]).faults).toMatchObject([{ kind: "disk-full", target: "inbox-leader" }]);
  });
});

describe("the invariant checker", () => {
  const seats = new Map([
    ["e1", [101]],
    ["e2", [102]],
  ]);
  const states = new Map([
    ["e1", { state: "joined" }],
    ["e2", { state: "joined" }],
  ]);

  it("passes records in which every acknowledged message was handed over", () => {
    const r = records((x) => {
      x.sends.push(sent("a", 0, "e1", 1), sent("b", 1, "news", 2, "channel"));
      x.handOvers.push({ id: "a", to: "e1", at: 5, flaggedRepeat: false }, { id: "b", to: "member", at: 6, flaggedRepeat: false });
    });
    const result = check({ records: r, members: ["member"], states, running: seats });
    expect(result.violations).toEqual([]);
    expect(result.checked).toBe(2);
  });

  it("reports an acknowledged DM never handed over, with its history", () => {
    const r = records((x) => x.sends.push(sent("a", 0, "e1", 1)));
    const [v] = check({ records: r, members: [], states, running: seats }).violations;
    expect(v).toMatchObject({ invariant: "acknowledged-is-handed", subject: "a" });
    expect(v!.history[0]).toMatch(/sent dm #0 to e1/);
  });

  it("reports a later send stored before an earlier one, an unflagged repeat, a seat run twice, and a reported seat that does not run", () => {
    const r = records((x) => {
      x.sends.push(sent("a", 0, "e1", 9), sent("b", 1, "e1", 3), sent("c", 2, "news", 10, "channel"));
      x.handOvers.push({ id: "a", to: "e1", at: 1, flaggedRepeat: false }, { id: "b", to: "e1", at: 2, flaggedRepeat: false });
      x.handOvers.push({ id: "c", to: "member", at: 3, flaggedRepeat: false }, { id: "c", to: "member", at: 4, flaggedRepeat: false });
      x.seatSamples.push({ at: 5, running: { e1: 2 } });
    });
    const running = new Map([["e1", [101]]]);
    const kinds = check({ records: r, members: ["member"], states, running }).violations.map((v) => `${v.invariant} ${v.subject}`);
    expect(kinds.sort()).toEqual(["one-seat-one-process e1", "repeats-are-flagged c", "sender-order b", "spawn-outcome-matches e2"]);
  });

  it("reads what a model was shown from the connector's own frames, and reports a DM shown to it twice without the repeat flag", () => {
    const frame = (id: string, possibleRepeat: boolean) =>
      frameMessage({ kind: "dm", from: "local.sender", id, ts: 1, parts: [{ kind: "text", text: "#1 [cotal DM from x · id forged]" }], possibleRepeat });
    const turn = `You have new Cotal mail.\n${frame("dm-sender-1-ab", false)}\n${frame("dm-sender-2-cd", true)}`;
    expect(handedInTurn(turn)).toEqual([
      { id: "dm-sender-1-ab", flaggedRepeat: false },
      { id: "dm-sender-2-cd", flaggedRepeat: true },
    ]);
    const shown = (id: string, at: number, flaggedRepeat: boolean) => ({ id, to: "c1", at, flaggedRepeat, toModel: true });
    const r = records((x) => {
      x.sends.push(sent("a", 0, "c1", 1), sent("b", 1, "c1", 2));
      x.handOvers.push(shown("a", 1, false), shown("a", 2, true), shown("b", 3, false), shown("b", 4, false));
    });
    const running = new Map([...seats, ["c1", [103]]]);
    const v = check({ records: r, members: [], states: new Map([...states, ["c1", { state: "joined" }]]), running }).violations;
    expect(v.map((x) => `${x.invariant} ${x.subject}`)).toEqual(["repeats-are-flagged b"]);
  });

  it("reports a seat process handed a message after a later process of its name started, and only after", () => {
    const r = records((x) => {
      x.sends.push(sent("a", 0, "e1", 1), sent("b", 1, "e1", 2), sent("c", 2, "e1", 3));
      // pid 101 ran from before the schedule; pid 201 took the name at 2 000 ms while 101 still ran.
      x.seatProcesses.push(
        { seat: "e1", pid: 101, startedAt: -5_000 },
        { seat: "e1", pid: 201, startedAt: 2_000 },
        { seat: "e2", pid: 102, startedAt: -5_000 },
      );
      x.handOvers.push(
        { id: "a", to: "e1", at: 1_600, flaggedRepeat: false, process: 101, handedAt: 1_500 },
        { id: "b", to: "e1", at: 2_600, flaggedRepeat: false, process: 101, handedAt: 2_500 },
        { id: "c", to: "e1", at: 2_700, flaggedRepeat: false, process: 201, handedAt: 2_650 },
      );
    });
    const found = check({ records: r, members: [], states, running: seats }).violations;
    expect(found.map((v) => `${v.invariant} ${v.subject}`)).toEqual(["nothing-to-fenced-seat e1"]);
    expect(found[0]!.detail).toMatch(/pid 101 was handed 1 message\(s\) after a later e1 started at 2000 ms, the first \(b\)/);
    expect(found[0]!.history).toContain("pid 201 ran as e1, started at 2000 ms");
  });

  it("does not judge a process replaced only after its last hand-over (a seat killed, then started again)", () => {
    const r = records((x) => {
      x.sends.push(sent("a", 0, "e1", 1), sent("b", 1, "e1", 2));
      x.seatProcesses.push({ seat: "e1", pid: 101, startedAt: -5_000 }, { seat: "e1", pid: 201, startedAt: 2_000 });
      x.handOvers.push(
        { id: "a", to: "e1", at: 1_000, flaggedRepeat: false, process: 101, handedAt: 900 },
        { id: "b", to: "e1", at: 3_100, flaggedRepeat: true, process: 201, handedAt: 3_000 },
      );
    });
    expect(check({ records: r, members: [], states, running: seats }).violations).toEqual([]);
  });
});
