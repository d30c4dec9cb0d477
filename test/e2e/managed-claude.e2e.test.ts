// Two real interactive Claude seats under the manager's tmux, against the model double, with
// nobody typing (issue #13): spawn bob, then alice with a prompt; alice's scripted turn DMs bob;
// bob, idle at his prompt, is woken by the manager (it types into his terminal), his hook hands
// the DM to the model, which answers with cotal_dm; alice is woken the same way and her model sees
// the answer. No approval prompt appears on either screen (seats run dontAsk with the cotal tools
// allowed). A seat whose config is not pre-seeded fails within the bound, naming the screen.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ControlCallError, controlCaller } from "../../broker/index.js";
import { TmuxServer, WAKE_PROMPT, type ClaudeSeatOptions, type ManagerService } from "../../manager/internal.js";
import { WOKEN_ACTIVITY } from "../../connector/internal.js";
import { localPrincipal, MANAGER_COMMANDS, type SeatView } from "../../schemas/index.js";
import { startClaudeManager } from "../harness/claude-manager.js";
import { buildCli } from "../harness/cli.js";
import { TestMesh } from "../harness/mesh.js";
import { allText, isMainLoopRequest, lastUserText, ModelDouble } from "../harness/model-double.js";
import { until } from "../harness/until.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");
const DM_TOOL = "mcp__plugin_cotal_cotal__cotal_dm";
const PROMPT_ON_SCREEN = /Do you want to proceed\?|Esc to cancel · Tab to amend/;
const OPENING = "Say hello to bob over Cotal.";
const HELLO = "hello bob, alice here";
const ANSWER = "hi alice, bob here";

let mesh: TestMesh;
let nc: NatsConnection;
let double: ModelDouble;
let root: string;
const managers: ManagerService[] = [];

beforeAll(async () => {
  await buildCli(); // also copies the bundles into plugin/bin
  root = mkdtempSync(join(tmpdir(), "cotal-managed-claude-"));
  mesh = await TestMesh.startStatic("crew");
  nc = await mesh.rawConnection();
  double = await ModelDouble.start([
    // Alice's opening turn: DM bob.
    { when: (r) => lastUserText(r).includes(OPENING), reply: [{ tool: DM_TOOL, input: { to: "bob", text: HELLO } }] },
    { afterToolResult: DM_TOOL, reply: ["Sent."] },
    // Bob's woken turn: the hook handed alice's DM over; answer her.
    { when: (r) => allText(r).includes(HELLO) && !allText(r).includes(OPENING), reply: [{ tool: DM_TOOL, input: { to: "alice", text: ANSWER } }] },
    { afterToolResult: DM_TOOL, reply: ["Answered."] },
    // Alice's woken turn: she sees bob's answer.
    { when: (r) => allText(r).includes(ANSWER) && allText(r).includes(OPENING), reply: ["Got bob's answer."] },
  ]);
}, 180_000);

afterAll(async () => {
  for (const m of managers) await m.stopWithSeats(operator).catch(() => undefined);
  await double?.close();
  await mesh?.close();
  rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

async function manager(instance: string, over: { claude?: Partial<ClaudeSeatOptions> } = {}): Promise<{ m: ManagerService; stateDir: string }> {
  const { m, stateDir } = await startClaudeManager(mesh, nc, {
    root,
    instance,
    baseUrl: double.url,
    claude: { screenTimeoutMs: 30_000, ...over.claude },
    over: { heartbeatMs: 1_000 },
  });
  managers.push(m);
  return { m, stateDir };
}

async function seat(instance: string, name: string): Promise<SeatView | undefined> {
  const ps = await callManager(nc, mesh.space, "ps", operator, { all: true }, { target: instance });
  return ps.seats.filter((s) => s.name === name).sort((a, b) => b.requestedAt - a.requestedAt)[0];
}

async function untilState(instance: string, name: string, states: Array<SeatView["state"]>, ms: number): Promise<SeatView> {
  let last: SeatView | undefined;
  try {
    await until(async () => states.includes((last = await seat(instance, name))?.state ?? "requested"), ms, `${name} to be ${states.join(" or ")}`, 250);
  } catch (err) {
    throw new Error(`${(err as Error).message} (last: ${JSON.stringify(last)})`, { cause: err });
  }
  return last!;
}

describe("managed Claude seats under tmux", () => {
  it("alice DMs bob, bob is woken and answers, alice is woken and sees it; nobody typed, no approval prompt", async () => {
    const { stateDir } = await manager("host1");
    const tmux = new TmuxServer(join(stateDir, "tmux.sock"), `cotal-${mesh.space}`);
    const work = mkdtempSync(join(root, "work-"));
    await callManager(nc, mesh.space, "spawn", operator, { agent: "claude", name: "bob", cwd: work }, { target: "host1", timeoutMs: 30_000 });
    const bob = await untilState("host1", "bob", ["joined", "retired"], 90_000);
    expect(bob.state, JSON.stringify(bob)).toBe("joined");
    expect(bob).toMatchObject({ runtime: "tmux", permissionMode: "dontAsk" });
    expect(bob.attach).toEqual(["tmux", "-S", join(stateDir, "tmux.sock"), "attach-session", "-t", `cotal-${mesh.space}:bob`]);

    // Presence says which wake started bob's turn: a watcher records the activities it shows.
    const watcher = await mesh.joined("watcher");
    const roster = await watcher.roster();
    const bobActivities = new Set<string>();
    const spy = setInterval(() => {
      const a = roster.entries().find((e) => e.id === "local.bob")?.presence.activity;
      if (a) bobActivities.add(a);
    }, 10);
    await callManager(
      nc,
      mesh.space,
      "spawn",
      operator,
      { agent: "claude", name: "alice", cwd: work, prompt: OPENING },
      { target: "host1", timeoutMs: 30_000 },
    );
    const alice = await untilState("host1", "alice", ["joined", "retired"], 90_000);
    expect(alice.state, JSON.stringify(alice)).toBe("joined");

    const sawAnswer = () => double.requests.some((r) => isMainLoopRequest(r) && allText(r).includes(ANSWER) && allText(r).includes(OPENING));
    try {
      await until(sawAnswer, 150_000, "alice's model to see bob's answer", 500);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- alice ---\n${await tmux.screen("alice", 60)}\n--- bob ---\n${await tmux.screen("bob", 60)}`, {
        cause: err,
      });
    }
    // Both were woken by the manager typing into their terminals, not by anyone else.
    const woken = double.requests.filter((r) => isMainLoopRequest(r) && lastUserText(r).includes(WAKE_PROMPT));
    expect(woken.length).toBeGreaterThanOrEqual(2);
    for (const name of ["alice", "bob"]) expect(await tmux.screen(name, 200), name).not.toMatch(PROMPT_ON_SCREEN);
    clearInterval(spy);
    expect([...bobActivities]).toContain(WOKEN_ACTIVITY);
  }, 400_000);

  it("an agent file names the seat, its channels and rules; bypass only because it asks by name, and ps shows it; a missing one refuses the spawn", async () => {
    const work = mkdtempSync(join(root, "work-"));
    mkdirSync(join(work, ".cotal", "agents"), { recursive: true });
    writeFileSync(
      join(work, ".cotal", "agents", "reviewer.md"),
      [
        "---",
        "name: dora",
        "subscribe: [general]",
        "allowedTools: [Read]",
        "launchOptions:",
        "  permission-mode: bypassPermissions",
        "---",
        "You review diffs.",
        "",
      ].join("\n"),
    );
    await callManager(nc, mesh.space, "spawn", operator, { agent: "claude", persona: "reviewer", cwd: work }, { target: "host1", timeoutMs: 30_000 });
    const dora = await untilState("host1", "dora", ["joined", "retired"], 90_000);
    expect(dora, JSON.stringify(dora)).toMatchObject({ state: "joined", permissionMode: "bypassPermissions" });
    const missing = await callManager(nc, mesh.space, "spawn", operator, { agent: "claude", persona: "nobody", cwd: work }, { target: "host1" }).catch(
      (e: unknown) => e,
    );
    expect(missing).toBeInstanceOf(ControlCallError);
    expect(missing).toMatchObject({ outcome: "not-executed" });
    expect((missing as Error).message).toMatch(/nobody\.md.*no such agent file/);
  }, 150_000);

  it("runtime pty: the seat runs on a pseudo-terminal the manager holds; a DM wakes it through that terminal", async () => {
    const work = mkdtempSync(join(root, "work-"));
    await callManager(
      nc,
      mesh.space,
      "spawn",
      operator,
      { agent: "claude", name: "ptyseat", cwd: work, runtime: "pty" },
      { target: "host1", timeoutMs: 30_000 },
    );
    const seatView = await untilState("host1", "ptyseat", ["joined", "retired"], 90_000);
    expect(seatView, JSON.stringify(seatView)).toMatchObject({ state: "joined", runtime: "pty", permissionMode: "dontAsk" });
    expect(seatView.attach?.[0]).toBe("pty");
    const sender = await mesh.joined("ptysender");
    await sender.dm("local.ptyseat", "ping over the pty");
    await until(
      () => double.requests.some((r) => isMainLoopRequest(r) && allText(r).includes("ping over the pty")),
      60_000,
      "the pty seat's woken turn to carry the DM",
      250,
    );
    const stopped = await callManager(nc, mesh.space, "stop", operator, { name: "ptyseat" }, { target: "host1", timeoutMs: 30_000 });
    expect(stopped.stopped).toBe(true);
  }, 150_000);

  it("a seat whose Claude config is not pre-seeded fails within the bound, naming the screen", async () => {
    // An empty config dir: what a fresh Claude shows first (the first-run screens) stops an unattended seat.
    await manager("host2", { claude: { seedConfig: false, screenTimeoutMs: 20_000 } });
    const work = mkdtempSync(join(root, "work-"));
    writeFileSync(join(work, "README"), "x");
    await callManager(nc, mesh.space, "spawn", operator, { agent: "claude", name: "carol", cwd: work }, { target: "host2", timeoutMs: 30_000 });
    const carol = await untilState("host2", "carol", ["retired"], 60_000);
    expect(carol.reason, JSON.stringify(carol)).toMatch(/^failed: the seat stopped on the first-run/);
    expect(carol.exit?.output).toMatch(/Claude Code/);
  }, 120_000);
});
