// `cotal up -f` through the shipped CLI, on what a user hands in by mistake: an empty or
// comment-only cotal.yaml (an editor crash, a bad redirect) is refused and touches nothing; a plan
// that retires seats shows them and asks at a terminal, and needs --yes where there is none; a
// team file past its documented limits (size, channels, seats, personas) is refused naming the limit.
import { mkdtempSync, readdirSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { TEAM_FILE_LIMITS } from "../../../schemas/index.js";
import { cliFolder, freePort, runCotal, type CliResult } from "../../harness/cli.js";
import { TmuxConsole } from "../../harness/tmux-console.js";
import { until } from "../../../testbed/until.js";

const { dir, cotal } = cliFolder("cotal-team-guards-", 120_000);
const FILE = join(dir, "cotal.yaml");
const TWO = `space: team
channels:
  general: {}
seats:
  e1: { agent: echo, channels: [general] }
  e2: { agent: echo, channels: [general] }
`;
const ONE = TWO.replace("  e2: { agent: echo, channels: [general] }\n", "");

const ok = (r: CliResult, what: string): CliResult => {
  expect(r.code, `${what}: exit code\nstdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
};

/** The seats that run, by name, with their lifecycle uid. */
async function seats(): Promise<Record<string, string>> {
  const r = ok(await cotal("ps", "--json"), "ps");
  const all = r.json<Array<{ seats?: Array<{ name: string; uid: string; state: string }> }>>().flatMap((m) => m.seats ?? []);
  return Object.fromEntries(all.filter((s) => s.state !== "retired" && s.state !== "exited").map((s) => [s.name, s.uid]));
}

describe("cotal up -f with a file that declares nothing, or less", () => {
  let before: Record<string, string>;

  it("two seats started from the file", async () => {
    writeFileSync(FILE, TWO);
    ok(await cotal("up", "-f", "cotal.yaml", "-d", "--port", String(await freePort())), "up -f");
    before = await seats();
    expect(Object.keys(before).sort()).toEqual(["e1", "e2"]);
  }, 120_000);

  it("an empty (0-byte) or comment-only cotal.yaml is refused, exit 2, and every seat keeps running", async () => {
    for (const text of ["", "# the team\n# (seats to come)\n"]) {
      writeFileSync(FILE, text);
      const r = await cotal("up", "-f", "cotal.yaml", "-d");
      expect(r.code, `${JSON.stringify(text)}\n${r.stdout}\n${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`${FILE}:1: the file declares nothing: it is empty or holds only comments`);
      expect(r.stderr).toContain("write `{}` to declare none on purpose");
      expect(r.stdout).not.toContain("retire");
      expect(await seats()).toEqual(before);
    }
  }, 120_000);

  it("a plan that retires a seat, with no terminal and no --yes: refused naming --yes, exit 2, nothing touched", async () => {
    writeFileSync(FILE, ONE);
    const r = await cotal("up", "-f", "cotal.yaml", "-d");
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(2);
    expect(r.stdout).toContain("- seat e2: retire");
    expect(r.stderr).toContain("The plan retires seat e2");
    expect(r.stderr).toContain("needs --yes here (no terminal to ask at). Nothing was changed.");
    expect(await seats()).toEqual(before);
  }, 120_000);

  it("at a terminal it asks: no keeps the seat (exit 1), yes retires it", async () => {
    const socket = join(mkdtempSync(join(tmpdir(), "cotal-tty-")), "tmux.sock");
    const ask = async (answer: string): Promise<void> => {
      const t = TmuxConsole.start(socket, dir, ["up", "-f", "cotal.yaml", "-d"]);
      try {
        const screen = await t.waitFor(/Stop it and revoke its credential\? \[y\/N\]/, "the retire question");
        expect(screen).toContain("- seat e2: retire");
        t.tmux("send-keys", "-t", "console", answer, "Enter");
        await until(() => !t.alive(), 60_000, `up -f to finish after "${answer}"`);
      } finally {
        t.kill();
      }
    };
    await ask("n");
    expect(await seats()).toEqual(before);
    await ask("y");
    expect(await seats()).toEqual({ e1: before.e1 });
    rmSync(join(socket, ".."), { recursive: true, force: true });
  }, 120_000);

  it("--yes retires without asking", async () => {
    writeFileSync(FILE, TWO);
    ok(await cotal("up", "-f", "cotal.yaml", "-d"), "up -f (e2 back)");
    const now = await seats();
    writeFileSync(FILE, ONE);
    const r = ok(await cotal("up", "-f", "cotal.yaml", "-d", "--yes"), "up -f --yes");
    expect(r.stdout).toContain("done: seat e2: stopped, retired");
    expect(await seats()).toEqual({ e1: now.e1 });
  }, 120_000);
});

describe("team file limits", () => {
  const scratch = mkdtempSync(join(tmpdir(), "cotal-team-limits-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  const dryRun = (text: string | number): Promise<CliResult> => {
    const file = join(scratch, "cotal.yaml");
    if (typeof text === "number") {
      writeFileSync(file, "space: team\n");
      truncateSync(file, text); // a file of that many bytes (the rest zeros): refused before it is read
    } else writeFileSync(file, text);
    return runCotal(["up", "-f", "cotal.yaml", "--dry-run"], { cwd: scratch, timeoutMs: 60_000 });
  };
  const many = (n: number, line: (i: number) => string) => Array.from({ length: n }, (_, i) => line(i)).join("");

  it("a file over 1 MiB is refused naming its size and the limit, exit 2, without a .cotal/", async () => {
    const r = await dryRun(30 * 1024 * 1024);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`is ${30 * 1024 * 1024} bytes, over the limit of ${TEAM_FILE_LIMITS.bytes} bytes (1 MiB) for a team file`);
    expect(readdirSync(scratch)).toEqual(["cotal.yaml"]);
  });

  it("more channels, personas or seats than the limit are refused at their key, naming the limit", async () => {
    const channels = await dryRun(`channels:\n${many(TEAM_FILE_LIMITS.channels + 1, (i) => `  c${i}: {}\n`)}`);
    expect(channels.code, channels.stderr).toBe(2);
    expect(channels.stderr).toContain(
      `cotal.yaml:1: channels: ${TEAM_FILE_LIMITS.channels + 1} channels declared, over the limit of ${TEAM_FILE_LIMITS.channels} per file`,
    );
    const personas = await dryRun(`personas:\n${many(TEAM_FILE_LIMITS.personas + 1, (i) => `  p${i}: {}\n`)}`);
    expect(personas.code).toBe(2);
    expect(personas.stderr).toContain(`personas: ${TEAM_FILE_LIMITS.personas + 1} personas declared, over the limit of ${TEAM_FILE_LIMITS.personas} per file`);
    const seatKeys = await dryRun(`seats:\n${many(TEAM_FILE_LIMITS.seats + 1, (i) => `  s${i}: { agent: echo }\n`)}`);
    expect(seatKeys.code).toBe(2);
    expect(seatKeys.stderr).toContain(`seats: ${TEAM_FILE_LIMITS.seats + 1} seats declared, over the limit of ${TEAM_FILE_LIMITS.seats} per file`);
    // `count` counts: 9 keys of 32 seats each are 288 seats.
    const counted = await dryRun(`seats:\n${many(9, (i) => `  w${i}: { agent: echo, count: 32 }\n`)}`);
    expect(counted.code).toBe(2);
    expect(counted.stderr).toContain(`seats: the seats declared make 288 seats with their count, over the limit of ${TEAM_FILE_LIMITS.seats} per file`);
    // At the limit: planned.
    const atLimit = await dryRun(`channels:\n${many(TEAM_FILE_LIMITS.channels, (i) => `  c${i}: {}\n`)}`);
    expect(atLimit.code, atLimit.stderr).toBe(0);
  }, 120_000);
});
