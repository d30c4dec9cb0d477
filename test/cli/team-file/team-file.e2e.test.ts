// `cotal up -f cotal.yaml` through the shipped CLI: a fresh folder with a sample team file
// gets three joined echo seats on two configured channels; the file edited to two seats retires the
// third; a third run has nothing to do; a seat the file names but `up -f` did not start is refused at
// the file's line; a persona and budgets reach the manager; `cotal down` leaves no process running.
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliFolder, freePort, pidAlive, type CliResult } from "../../harness/cli.js";
import { until } from "../../../testbed/until.js";

const { dir, cotal } = cliFolder("cotal-team-file-", 120_000);
const FILE = join(dir, "cotal.yaml");
const ISSUE_FILE = `space: team
channels:
  general: {}
  ops: { class: live }
seats:
  e1: { agent: echo, channels: [general] }
  e2: { agent: echo, channels: [general, ops] }
  e3: { agent: echo, channels: [ops] }
`;

const ok = (r: CliResult, what: string): CliResult => {
  expect(r.code, `${what}: exit code\nstdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
};

interface SeatJson {
  name: string;
  role?: string;
  uid: string;
  state: string;
  agent: string;
  pid?: number;
}
interface RosterJson {
  name: string;
  status: string;
  channels?: string[];
}
interface ChannelsJson {
  channels: Array<{ name: string; configured: boolean; config: { class: string } }>;
}

async function seats(): Promise<SeatJson[]> {
  const r = ok(await cotal("ps", "--json"), "ps");
  return r.json<Array<{ seats?: SeatJson[] }>>().flatMap((m) => m.seats ?? []);
}

/** Every process the mesh's pid files name (nats-server, mesh service, manager). */
function meshPids(): number[] {
  const run = join(dir, ".cotal", "run");
  return readdirSync(run)
    .filter((f) => f.endsWith(".json") && f !== "up.lock")
    .map((f) => (JSON.parse(readFileSync(join(run, f), "utf8")) as { pid: number }).pid);
}

describe("cotal up -f cotal.yaml", () => {
  let port: number;
  let firstUids: Record<string, string>;

  it("--dry-run prints the plan and starts nothing", async () => {
    port = await freePort();
    // A seat's terminal host under its old name is read as terminal, with a warning naming its line.
    writeFileSync(FILE, ISSUE_FILE.replace("e1: { agent: echo,", "e1: { agent: echo, runtime: process,"));
    const old = ok(await cotal("up", "-f", "cotal.yaml", "--dry-run"), "up --dry-run, the old key");
    expect(old.stderr).toContain(`cotal: warning: ${FILE}:6: seats.e1.runtime: the old name of terminal, read as terminal; rename it`);
    expect(old.stdout).toMatch(/\+ seat e1: start echo/);
    writeFileSync(FILE, ISSUE_FILE);
    const r = ok(await cotal("up", "-f", "cotal.yaml", "--dry-run"), "up --dry-run");
    expect(r.stdout).toContain("+ mesh: start it");
    expect(r.stdout).toMatch(/\+ channel ops: create \(live/);
    for (const s of ["e1", "e2", "e3"]) expect(r.stdout).toMatch(new RegExp(`\\+ seat ${s}: start echo`));
    expect(readdirSync(dir)).toEqual(["cotal.yaml"]); // not even .cotal/
  }, 60_000);

  it("a fresh folder: three joined seats on their channels, the channels configured", async () => {
    const r = ok(await cotal("up", "-f", "cotal.yaml", "-d", "--port", String(port)), "up -f");
    // The plan is printed before the outcomes.
    expect(r.stdout.indexOf("+ seat e3: start echo on ops")).toBeGreaterThan(-1);
    expect(r.stdout.indexOf("+ seat e3: start echo on ops")).toBeLessThan(r.stdout.indexOf("done: seat e3: joined"));
    const ps = await seats();
    expect(ps.map((s) => [s.name, s.agent, s.state]).sort()).toEqual([
      ["e1", "echo", "joined"],
      ["e2", "echo", "joined"],
      ["e3", "echo", "joined"],
    ]);
    firstUids = Object.fromEntries(ps.map((s) => [s.name, s.uid]));
    await until(
      async () => {
        const roster = ok(await cotal("roster", "--json"), "roster").json<RosterJson[]>();
        const on = (n: string) =>
          roster
            .find((x) => x.name === n && x.status !== "offline")
            ?.channels?.slice()
            .sort();
        return JSON.stringify([on("e1"), on("e2"), on("e3")]) === JSON.stringify([["general"], ["general", "ops"], ["ops"]]);
      },
      20_000,
      "the three seats on the roster with their channels",
    );
    const channels = ok(await cotal("channels", "list", "--json"), "channels list").json<ChannelsJson>().channels;
    expect(channels.filter((c) => c.name === "general" || c.name === "ops").map((c) => [c.name, c.configured, c.config.class])).toEqual([
      ["general", true, "durable"],
      ["ops", true, "live"],
    ]);
  }, 120_000);

  it("the file edited to two seats: the third is retired, the others kept", async () => {
    const e3 = (await seats()).find((s) => s.name === "e3")!;
    writeFileSync(FILE, ISSUE_FILE.replace("  e3: { agent: echo, channels: [ops] }\n", ""));
    const r = ok(await cotal("up", "-f", "cotal.yaml", "-d", "--yes"), "up -f (two seats)");
    expect(r.stdout).toContain("- seat e3: retire");
    expect(r.stdout).toContain("= as declared: channels general, ops; seats e1, e2");
    const ps = await seats();
    expect(ps.map((s) => [s.name, s.uid]).sort()).toEqual([
      ["e1", firstUids.e1],
      ["e2", firstUids.e2],
    ]);
    await until(() => !pidAlive(e3.pid!), 10_000, `e3's process ${e3.pid} to end`);
  }, 120_000);

  it("a third run changes nothing", async () => {
    const r = ok(await cotal("up", "-f", "cotal.yaml", "-d"), "up -f (again)");
    expect(r.stdout).toContain("nothing to do");
    expect(r.stdout).not.toContain("done:");
    expect((await seats()).map((s) => [s.name, s.uid]).sort()).toEqual([
      ["e1", firstUids.e1],
      ["e2", firstUids.e2],
    ]);
  }, 120_000);

  it("a declared seat whose name another seat holds is refused at the file's line; that seat is left alone", async () => {
    ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "e3"), "spawn e3 by hand");
    const hand = (await seats()).find((s) => s.name === "e3")!;
    writeFileSync(FILE, ISSUE_FILE);
    const r = await cotal("up", "-f", "cotal.yaml", "-d");
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`${FILE}:8: seats.e3: a seat named e3 runs on manager`);
    expect((await seats()).find((s) => s.name === "e3")?.uid).toBe(hand.uid);
    // Nor does a run without it retire the seat it did not start.
    writeFileSync(FILE, ISSUE_FILE.replace("  e3: { agent: echo, channels: [ops] }\n", ""));
    expect(ok(await cotal("up", "-f", "cotal.yaml", "-d"), "up -f without e3").stdout).toContain("nothing to do");
    expect((await seats()).find((s) => s.name === "e3")?.uid).toBe(hand.uid);
  }, 120_000);

  it("a persona is written before its seat starts; budgets reach the running manager, and a change to them too", async () => {
    const twoSeats = ISSUE_FILE.replace("  e3: { agent: echo, channels: [ops] }\n", "");
    const withTeam = (daily: number) =>
      `${twoSeats}  h: { agent: echo, persona: helper }\npersonas:\n  helper: { role: helpers, text: You help. }\nbudgets: { daily: ${daily}, task: 0.5 }\n`;
    writeFileSync(FILE, withTeam(5));
    const r = ok(await cotal("up", "-f", "cotal.yaml", "-d"), "up -f with a persona and budgets");
    expect(r.stdout).toContain(`+ persona helper: write ${join(dir, ".cotal", "agents", "helper.md")}`);
    expect(readFileSync(join(dir, ".cotal", "agents", "helper.md"), "utf8")).toBe("---\nname: helper\nrole: helpers\n---\nYou help.\n");
    // The manager read the agent file: the seat takes the persona's role.
    expect((await seats()).find((s) => s.name === "h")).toMatchObject({ state: "joined", role: "helpers" });
    const cap = async () => ok(await cotal("budget", "--json"), "budget").json<{ daily: { capUsd?: number } }>().daily.capUsd;
    expect(await cap()).toBe(5);
    writeFileSync(FILE, withTeam(7));
    expect(ok(await cotal("up", "-f", "cotal.yaml", "-d"), "up -f with a new budget").stdout).toContain("~ budgets: dailyUsd $5.00 → $7.00");
    expect(await cap()).toBe(7);
  }, 120_000);

  it("cotal down stops what up -f started, and the mesh: nothing is left running", async () => {
    const pids = [...meshPids(), ...(await seats()).map((s) => s.pid!)];
    expect(pids.length).toBeGreaterThanOrEqual(7); // nats-server, mesh service, manager, e1, e2, h, e3 (by hand)
    const r = ok(await cotal("down"), "down");
    expect(r.stdout).toContain("seat e1: stopped (started by `cotal up -f`)");
    expect(r.stdout).toContain("seat e2: stopped (started by `cotal up -f`)");
    expect(r.stdout).toContain("seat h: stopped (started by `cotal up -f`)");
    expect(r.stdout).not.toContain("seat e3: stopped (started by"); // not up -f's: its manager stops it with the mesh
    await until(() => pids.every((p) => !pidAlive(p)), 20_000, `every process to end: ${pids.filter(pidAlive).join(", ")}`);
  }, 120_000);
});
