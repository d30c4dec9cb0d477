// Wake on the user's path: two managed Claude seats woken by DMs with nobody typing,
// through the shipped CLI only. `cotal up -d` from a shell holding the model double's URL and a
// key; `cotal spawn -d bob` and `cotal spawn -d alice` from agent files in .cotal/agents/; the
// operator listens as carol (`cotal listen --as carol --impersonate`) and DMs bob (`cotal send dm
// bob … --as carol --impersonate`). Bob, idle at his prompt, is woken by the manager; his model
// (the double) relays the question to alice with cotal_dm; alice is woken the same way and answers
// carol, whose listen prints it. Then a seat's process is killed (its pid from `cotal ps --json`)
// and a DM sent while it is down: the manager restarts it and the mail reaches its model. An agent
// file names the seat and asks for bypass (ps shows it), a missing one refuses the spawn; a pty seat
// is woken through the terminal its manager holds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SeatView } from "../../schemas/index.js";
import type { CotalProcess } from "../harness/cli.js";
import { newToolResults, newTurnText, systemText, type RecordedRequest, type ReplyBlock, type ScriptStep } from "../../testbed/model-double.js";
import { seatScreen } from "../harness/seat-screen.js";
import { until } from "../../testbed/until.js";
import { UserPath } from "../harness/user-path.js";

const DM_TOOL = "mcp__plugin_cotal_cotal__cotal_dm";
/** What the manager types into an idle seat's terminal (docs/manager.md, Wake). */
const WAKE_PROMPT = "You have new Cotal mail. Read it and act on it.";
const ASK = "CAROL-ASKS: what is the build status?";
const RELAYED = "BOB-RELAYS: carol asks for the build status";
const ANSWER = "ALICE-ANSWERS: the build is green";
const AFTER_KILL = "CAROL-AGAIN: are you back, bob?";
const BACK = "BOB-IS-BACK: yes, restarted";
const PTY_PING = "CAROL-PINGS: ptyseat, are you there?";
const PTY_PONG = "PTYSEAT-PONGS: here, on the pty";
/** An approval prompt on a seat's screen: none may appear (seats run dontAsk with the cotal tools allowed). */
const PROMPT_ON_SCREEN = /Do you want to proceed\?|Esc to cancel · Tab to amend/;
/** Presence activity of a turn the manager's wake started (docs/manager.md, Wake). */
const WOKEN = "woken by the manager (terminal)";

let u: UserPath;
let carol: CotalProcess;

/** Which seat sent a request: its persona (the agent file's body) is in the system prompt. */
const from = (who: "bob" | "alice") => (r: RecordedRequest) => systemText(r).includes(`PERSONA-${who.toUpperCase()}`);

/**
 * The seats' models, decided per request (two seats ask the double at once, so a fixed order would
 * race): a turn that carries a DM answers with cotal_dm, the turn after the tool call ends.
 */
function route(r: RecordedRequest): ReplyBlock[] | undefined {
  if (newToolResults(r).some((t) => t.name === DM_TOOL)) return ["Done."];
  const now = newTurnText(r);
  if (from("bob")(r) && now.includes(ASK)) return [{ tool: DM_TOOL, input: { to: "alice", text: RELAYED } }];
  if (from("alice")(r) && now.includes(RELAYED)) return [{ tool: DM_TOOL, input: { to: "carol", text: ANSWER } }];
  if (from("bob")(r) && now.includes(AFTER_KILL)) return [{ tool: DM_TOOL, input: { to: "carol", text: BACK } }];
  if (now.includes(PTY_PING)) return [{ tool: DM_TOOL, input: { to: "carol", text: PTY_PONG } }];
  return undefined;
}
const routed = (n: number): ScriptStep[] => Array.from({ length: n }, () => ({ when: (r) => route(r) !== undefined, reply: (r) => route(r)! }));

const persona = (name: string, body: string) => ({ fields: { name }, body: `PERSONA-${name.toUpperCase()}: ${body}` });

async function seats(): Promise<SeatView[]> {
  const ps = (await u.ok(["ps", "--json"])).json<Array<{ instance: string; seats?: SeatView[] }>>();
  return ps.flatMap((m) => m.seats ?? []);
}
const seat = async (name: string) => (await seats()).find((s) => s.name === name);

/** The last lines of a tmux seat's screen. */
const screen = (v: SeatView): Promise<string> => seatScreen(u.project, "default", v.name);

/** carol's listen printed a DM from `who` carrying `text`. */
const heard = (who: string, text: string, what: string) =>
  carol.waitForJson<{ type: string; kind?: string; from?: string; text?: string }>(
    (m) => m.type === "message" && m.kind === "dm" && m.from === `local.${who}` && (m.text ?? "").includes(text),
    60_000,
    what,
  );

beforeAll(async () => {
  u = await UserPath.start({
    prefix: "cotal-user-wake-",
    agents: {
      bob: persona("bob", "you relay questions to alice."),
      alice: persona("alice", "you answer questions about the build."),
      reviewer: {
        fields: { name: "dora", subscribe: ["general"], allowedTools: ["Read"], launchOptions: "{permission-mode: bypassPermissions}" },
        body: "You review diffs.",
      },
    },
    script: routed(12),
  });
  carol = u.spawn(["listen", "--as", "carol", "--impersonate", "--json"]);
  await carol.waitForJson((m) => m.type === "ready", 30_000, "carol's listen to be ready");
}, 120_000);

afterAll(async () => {
  await u?.close();
});

describe("wake through the CLI: idle seats are woken by DMs, nobody types", () => {
  it("cotal spawn -d starts bob and alice from agent files; ps shows both joined", async () => {
    const spawned = await Promise.all(["bob", "alice"].map((p) => u.cotal(["spawn", "-d", p, "--wait-ms", "90000", "--json"])));
    for (const [i, r] of spawned.entries()) {
      const v = await seat(["bob", "alice"][i]!);
      expect(r.code, `${r.stdout}\n${r.stderr}\n${JSON.stringify(v)}\n${v?.terminal === "tmux" ? await screen(v) : ""}`).toBe(0);
      expect(r.json()).toMatchObject({
        outcome: "started",
        seat: {
          state: "joined",
          agent: "claude",
          terminal: "tmux",
          permissionMode: "dontAsk",
        },
      });
    }
    const ps = await u.ok(["ps"]);
    expect(ps.stdout).toMatch(/\sbob\s+claude\s+joined\s/);
    expect(ps.stdout).toMatch(/\salice\s+claude\s+joined\s/);
  }, 150_000);

  it("carol's DM wakes bob, whose model relays it to alice; alice is woken and answers; carol's listen prints the answer", async () => {
    const sent = await u.ok(["send", "dm", "bob", ASK, "--as", "carol", "--impersonate"]);
    expect(sent.stdout, "bob was idle when the DM was stored").toMatch(/^stored seq \d+; recipient idle at send/);
    await heard("alice", ANSWER, "alice's answer to reach carol's listen");
    // Both turns were started by the manager's wake prompt, not by anyone typing.
    const woken = (who: "bob" | "alice", dm: string) =>
      u.double.mainRequests.some((r) => from(who)(r) && newTurnText(r).includes(WAKE_PROMPT) && newTurnText(r).includes(dm));
    expect(woken("bob", ASK), "bob's woken turn carried carol's DM").toBe(true);
    expect(woken("alice", RELAYED), "alice's woken turn carried bob's DM").toBe(true);
    // Presence said so while the turn ran: carol's listen printed bob's roster change.
    expect(
      carol.jsonLines<{ type: string; id?: string; activity?: string }>().some((l) => l.type === "roster" && l.id === "local.bob" && l.activity === WOKEN),
    ).toBe(true);
    for (const name of ["bob", "alice"]) {
      const text = await screen((await seat(name))!);
      expect(text, `${name}'s screen shows the manager's wake prompt`).toContain(WAKE_PROMPT);
      expect(text, name).not.toMatch(PROMPT_ON_SCREEN);
    }
  }, 180_000);

  it("a seat whose process is killed is restarted by the manager, and a DM sent right after the kill reaches its model", async () => {
    const before = (await seat("bob"))!;
    expect(before.pid, JSON.stringify(before)).toBeGreaterThan(0);
    process.kill(before.pid!, "SIGKILL");
    // The manager saw the process go: the DM below waits for bob's next incarnation.
    await until(async () => (await seat("bob"))?.pid !== before.pid, 30_000, "ps to show bob's killed process gone", 100);
    // Sent right after the kill: the manager may already have bob back (its restart takes about a
    // second), so the receipt may say offline or idle; either way the DM must reach his model.
    const sent = await u.ok(["send", "dm", "bob", AFTER_KILL, "--as", "carol", "--impersonate"]);
    expect(sent.stdout, "the DM was stored").toMatch(/stored seq \d+; recipient (offline|idle|working) at send/);
    await until(
      async () => {
        const s = await seat("bob");
        return s?.state === "joined" && s.epoch > before.epoch && s.pid !== before.pid;
      },
      90_000,
      "ps to show bob restarted (joined, a new epoch and pid)",
      500,
    );
    await heard("bob", BACK, "the restarted bob's answer to the DM sent while he was down");
    const after = (await seat("bob"))!;
    expect(after).toMatchObject({ uid: before.uid, restarts: 1 });
  }, 180_000);

  it("an agent file names the seat and asks for bypass by name, and ps shows it; a missing one refuses the spawn, naming the file", async () => {
    const r = await u.cotal(["spawn", "-d", "reviewer", "--wait-ms", "90000", "--json"]);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.json()).toMatchObject({ name: "dora", outcome: "started", seat: { state: "joined", permissionMode: "bypassPermissions" } });
    expect((await u.ok(["ps"])).stdout).toMatch(/\sdora\s+claude\s+joined\s/);
    const missing = await u.cotal(["spawn", "-d", "nobody"]);
    expect(missing.code, missing.stdout).not.toBe(0);
    expect(missing.stderr).toMatch(/nobody\.md.*no such agent file/);
    expect(await seat("nobody"), "nothing was claimed").toBeUndefined();
  }, 150_000);

  it("a pty seat (--terminal pty) runs on a terminal its manager holds, and a DM wakes it through that terminal", async () => {
    const r = await u.cotal(["spawn", "-d", "--name", "ptyseat", "--terminal", "pty", "--wait-ms", "90000", "--json"]);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.json()).toMatchObject({
      outcome: "started",
      seat: { state: "joined", terminal: "pty", permissionMode: "dontAsk" },
    });
    await u.ok(["send", "dm", "ptyseat", PTY_PING, "--as", "carol", "--impersonate"]);
    await heard("ptyseat", PTY_PONG, "the pty seat's answer");
    // The turn that answered was the manager's wake typed into the pty, carrying the DM (nobody typed).
    expect(u.double.mainRequests.some((q) => newTurnText(q).includes(WAKE_PROMPT) && newTurnText(q).includes(PTY_PING))).toBe(true);
    expect((await u.ok(["stop", "--name", "ptyseat", "--json"])).json()).toMatchObject({ stopped: true });
  }, 150_000);
});
