// The plan of `cotal up -f` (cli/team-file/team-plan.ts), against a described mesh: what is created, changed,
// replaced, retired or left alone, and what is refused at the file's line before anything is done.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_CHANNEL_CONFIG, type SeatView } from "../../../schemas/index.js";
import { parseTeamFile, TeamFileError } from "../../../cli/team-file/team-file.js";
import { describePlan, desiredSeats, planTeam, rightsNotHeld, type Observed } from "../../../cli/team-file/team-plan.js";
import { TeamState } from "../../../cli/team-file/team-state.js";

const DIR = "/srv/team";
const FILE = join(DIR, "cotal.yaml");
const HERE = "hosta";

const doc = (text: string) => parseTeamFile(text, FILE);

function seen(over: Partial<Observed> = {}): Observed {
  return {
    running: true,
    localInstance: HERE,
    managers: [HERE, "hostb"],
    unanswered: [],
    defaults: DEFAULT_CHANNEL_CONFIG,
    channels: new Map(),
    seats: [],
    agentFiles: new Map(),
    missingDirs: new Set(),
    budgetFile: undefined,
    ...over,
  };
}

function seat(name: string, uid: string, instance = HERE): SeatView {
  return { seat: `local.${name}`, name, uid, epoch: 0, state: "joined", agent: "echo", instance, requestedAt: 1, since: 1, restarts: 0 };
}

const owned = (seats: TeamState["seats"], extra: Partial<TeamState> = {}): TeamState => ({ version: 1, file: FILE, space: "team", seats, ...extra });
const echoSpec = (channels: string[]) => ({ agent: "echo", channels, cwd: DIR });

const TWO = `space: team
channels:
  general: {}
  ops: { class: live }
seats:
  e1: { agent: echo, channels: [general] }
  e2: { agent: echo, channels: [ops, general] }
`;

describe("the plan of cotal up -f", () => {
  it("a mesh that does not run: start it, create every channel, start every seat (channels sorted, cwd the file's folder)", () => {
    const p = planTeam(doc(TWO), "team", seen({ running: false, managers: undefined, localInstance: undefined }), undefined);
    expect(p.steps.map((s) => s.kind)).toEqual(["mesh", "channel", "channel", "start", "start"]);
    expect(desiredSeats(doc(TWO), HERE)[1]).toEqual({ name: "e2", key: "e2", spec: echoSpec(["general", "ops"]) });
    expect(describePlan(p)).toContain("  + seat e2: start echo on general, ops, on this host's manager");
  });

  it("what is as declared is left alone: nothing to do", () => {
    const p = planTeam(
      doc(TWO),
      "team",
      seen({
        channels: new Map([
          ["general", DEFAULT_CHANNEL_CONFIG],
          ["ops", { ...DEFAULT_CHANNEL_CONFIG, class: "live" }],
        ]),
        seats: [seat("e1", "u1"), seat("e2", "u2")],
      }),
      owned({ e1: { instance: HERE, uid: "u1", spec: echoSpec(["general"]) }, e2: { instance: HERE, uid: "u2", spec: echoSpec(["general", "ops"]) } }),
    );
    expect(p.steps).toEqual([]);
    expect(describePlan(p)).toEqual([`plan for space team (${FILE}): nothing to do (channels general, ops; seats e1, e2 as declared)`]);
  });

  it("what differs changes: a channel's class (and a key the file dropped goes back to the default), a seat's channels (replaced)", () => {
    const p = planTeam(
      doc(TWO),
      "team",
      seen({
        channels: new Map([
          ["general", { ...DEFAULT_CHANNEL_CONFIG, description: "old" }],
          ["ops", DEFAULT_CHANNEL_CONFIG],
        ]),
        seats: [seat("e1", "u1"), seat("e2", "u2")],
      }),
      owned({ e1: { instance: HERE, uid: "u1", spec: echoSpec(["general"]) }, e2: { instance: HERE, uid: "u2", spec: echoSpec(["ops"]) } }),
    );
    expect(describePlan(p).slice(1)).toEqual([
      "  ~ channel general: description old → (none)",
      "  ~ channel ops: class durable → live",
      `  ~ seat e2: replace on ${HERE} (this host) (channels [ops] → [general, ops])`,
      "  = as declared: seats e1",
    ]);
  });

  it("a seat an older up -f started (its .cotal/team.json says runtime) is as declared: the file's terminal, or still its runtime, is not a change", () => {
    const file = TWO.replace("e1: { agent: echo,", "e1: { agent: echo, terminal: process,");
    const UID = "a".repeat(26);
    const stateJson = `{"version":1,"file":${JSON.stringify(FILE)},"space":"team","seats":{"e1":{"instance":"${HERE}","uid":"${UID}","spec":{"agent":"echo","runtime":"process","channels":["general"],"cwd":"${DIR}"}}}}`;
    const state = TeamState.parse(JSON.parse(stateJson));
    expect(state.seats.e1?.spec).toMatchObject({ terminal: "process" });
    for (const text of [file, file.replace("terminal: process", "runtime: process")]) {
      const p = planTeam(doc(text), "team", seen({ seats: [seat("e1", UID)] }), state);
      expect(p.steps.filter((s) => s.kind === "replace")).toEqual([]);
      expect(p.unchanged.seats).toEqual(["e1"]);
    }
  });

  it("seats it started that are no longer declared are retired; ones that no longer run are forgotten; others' are never touched", () => {
    const p = planTeam(
      doc(TWO),
      "team",
      seen({ seats: [seat("e1", "u1"), seat("e2", "u2"), seat("e3", "u3", "hostb"), seat("bob", "u9")] }),
      owned({
        e1: { instance: HERE, uid: "u1", spec: echoSpec(["general"]) },
        e2: { instance: HERE, uid: "u2", spec: echoSpec(["general", "ops"]) },
        e3: { instance: "hostb", uid: "u3", spec: echoSpec(["ops"]) },
        e4: { instance: HERE, uid: "u4", spec: echoSpec([]) },
      }),
    );
    expect(p.steps.filter((s) => s.kind === "retire")).toEqual([{ kind: "retire", name: "e3", instance: "hostb", uid: "u3", why: "no longer declared" }]);
    expect(p.gone).toEqual(["e4"]);
    expect(JSON.stringify(p.steps)).not.toContain("bob");
  });

  it("a declared name held by a seat it did not start (another uid) is refused at that seat's line", () => {
    const e = (() => {
      try {
        planTeam(doc(TWO), "team", seen({ seats: [seat("e2", "someone-else")] }), owned({ e2: { instance: HERE, uid: "u2", spec: echoSpec(["ops"]) } }));
      } catch (err) {
        return err as TeamFileError;
      }
      throw new Error("planned");
    })();
    expect(e).toBeInstanceOf(TeamFileError);
    expect(e.problems).toEqual([
      { line: 7, key: "seats.e2", message: expect.stringContaining("a seat named e2 runs on manager hosta that `cotal up -f` did not start") },
    ]);
  });

  it("a manager that is not running, or did not answer, is refused at the seat's manager key", () => {
    const text = "seats:\n  a: { agent: echo, manager: hostc }\n  b: { agent: echo, manager: hostb }\n";
    expect(() => planTeam(doc(text), "team", seen({ unanswered: ["hostb"] }), undefined)).toThrow(
      /cotal\.yaml:2: seats\.a\.manager: manager hostc is not running in space team \(running: hosta, hostb\)[^]*cotal\.yaml:3: seats\.b\.manager: manager hostb did not answer/,
    );
  });

  it("count makes name, name_2…; naming this host's manager is the same seat as naming none", () => {
    const d = desiredSeats(doc(`seats:\n  w: { agent: echo, count: 3, manager: ${HERE} }\n`), HERE);
    expect(d.map((x) => [x.name, x.spec.manager, x.spec.cwd])).toEqual([
      ["w", undefined, DIR],
      ["w_2", undefined, DIR],
      ["w_3", undefined, DIR],
    ]);
  });

  it("a persona of the file is written under the seat's cwd before it starts; an edit replaces the file and the seats that use it", () => {
    const text = (role: string) => `personas:\n  helper: { role: ${role}, text: Help. }\nseats:\n  h: { agent: echo, persona: helper, cwd: work }\n`;
    const path = join(DIR, "work", ".cotal", "agents", "helper.md");
    const first = planTeam(doc(text("helpers")), "team", seen(), undefined);
    expect(first.steps.find((s) => s.kind === "agent-file")).toEqual({
      kind: "agent-file",
      path,
      persona: "helper",
      op: "write",
      text: "---\nname: helper\nrole: helpers\n---\nHelp.\n",
    });
    const spec = desiredSeats(doc(text("helpers")), HERE)[0]!.spec;
    const again = planTeam(
      doc(text("aides")),
      "team",
      seen({ seats: [seat("h", "u1")], agentFiles: new Map([[path, "old"]]) }),
      owned({ h: { instance: HERE, uid: "u1", spec } }),
    );
    expect(describePlan(again).slice(1)).toEqual([
      `  ~ persona helper: replace ${path}`,
      `  ~ seat h: replace on ${HERE} (this host) (persona helper text changed)`,
    ]);
    // On another host's manager the file's persona cannot be written: refused at the seat's persona key.
    expect(() => planTeam(doc(`${text("x")}  g: { agent: echo, persona: helper, manager: hostb }\n`), "team", seen(), undefined)).toThrow(
      /cotal\.yaml:5: seats\.g\.persona: persona helper is declared in this file, but the seat runs on manager hostb/,
    );
  });

  it("read and write lists: a seat gets the rights that differ from joining, shown in the plan; a change of the lists replaces the seats whose rights change", () => {
    const acl = (ops: string) =>
      TWO.replace("ops: { class: live }", `ops: { class: live${ops} }`).replace("  e2:", "  e3: { agent: echo, channels: [ops] }\n  e2:");
    const d = doc(acl(", write: [e2]"));
    const specs = Object.fromEntries(desiredSeats(d, HERE).map((x) => [x.name, x.spec]));
    // e3 joins ops but may not post there; e1 and e2 get what joining gives, so nothing is added for them.
    expect(specs.e3?.rights).toEqual({ over: ["ops"], read: ["ops"], write: [] });
    expect(specs.e1?.rights).toBeUndefined();
    expect(specs.e2?.rights).toBeUndefined();
    expect(describePlan(planTeam(d, "team", seen(), undefined))).toContain(`  + seat e3: start echo on ops, on ${HERE} (this host); ops read-only`);
    // "*" reads: e1 may read ops without joining it; a seat with a persona has every listed channel decided.
    const star = desiredSeats(doc(`${acl(', read: "*", write: [e2]')}  h: { agent: echo, persona: p, channels: [general] }\n`), HERE);
    expect(Object.fromEntries(star.map((x) => [x.name, x.spec.rights]))).toEqual({
      e1: { over: ["ops"], read: ["ops"], write: [] },
      e2: undefined,
      e3: { over: ["ops"], read: ["ops"], write: [] },
      h: { over: ["ops"], read: ["ops"], write: [] },
    });
    // A seat that joins through its persona's subscribe is read-only there too.
    const viaPersona = doc(`${acl(", write: [e2]")}  w: { agent: echo, persona: watcher }\npersonas:\n  watcher: { subscribe: [ops] }\n`);
    expect(desiredSeats(viaPersona, HERE).find((x) => x.name === "w")?.spec.rights).toEqual({ over: ["ops"], read: ["ops"], write: [] });
    // The lists widened to let e3 post: e3 is replaced (its credential minted again), the others left.
    const running = seen({ seats: [seat("e1", "u1"), seat("e2", "u2"), seat("e3", "u3")] });
    const was = owned(Object.fromEntries(["e1", "e2", "e3"].map((n, i) => [n, { instance: HERE, uid: `u${i + 1}`, spec: specs[n]! }])));
    const p = planTeam(doc(acl(", write: [e2, e3]")), "team", running, was);
    expect(describePlan(p).filter((l) => l.includes("seat"))).toEqual([
      `  ~ seat e3: replace on ${HERE} (this host) (rights [ops read-only] → (none))`,
      "  = as declared: seats e1, e2",
    ]);
    expect(planTeam(d, "team", running, was).steps.filter((s) => s.kind !== "channel")).toEqual([]);
    // What up -f checks after a spawn: the credential was minted with exactly these rights (an older manager drops them).
    expect(rightsNotHeld(specs.e3!.rights!, { allowSubscribe: ["ops"], allowPublish: [] })).toEqual([]);
    expect(rightsNotHeld(specs.e3!.rights!, { allowSubscribe: ["ops"], allowPublish: ["ops"] })).toEqual(["ops"]);
    // An open mesh enforces no rights: the lists are refused at their key, before anything is done.
    expect(() => planTeam(d, "team", seen({ open: true }), undefined)).toThrow(/cotal\.yaml:4: channels\.ops\.write: the mesh is open \(no authentication\)/);
  });

  it("budgets: written when they differ, left when equal, removed when the file drops the ones it wrote", () => {
    const b = doc("budgets: { daily: 5, task: 0.5 }\n");
    expect(planTeam(b, "team", seen({ budgetFile: { dailyUsd: 2 } }), undefined).steps).toEqual([
      { kind: "budgets", op: "write", caps: { dailyUsd: 5, taskUsd: 0.5 }, changes: ["dailyUsd $2.00 → $5.00", "taskUsd (none) → $0.50"] },
    ]);
    expect(planTeam(b, "team", seen({ budgetFile: { dailyUsd: 5, taskUsd: 0.5 } }), undefined).steps).toEqual([]);
    expect(planTeam(doc("{}\n"), "team", seen({ budgetFile: { dailyUsd: 5 } }), owned({}, { budgets: true })).steps).toEqual([
      { kind: "budgets", op: "remove", caps: undefined, changes: [] },
    ]);
    // A budget.json someone else wrote is not up -f's to remove.
    expect(planTeam(doc("{}\n"), "team", seen({ budgetFile: { dailyUsd: 5 } }), undefined).steps).toEqual([]);
  });
});
