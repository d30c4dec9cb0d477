// Cases every runtime's seat e2e file checks the same way, each against its own real CLI through
// the shipped CLI: an echo alice and a managed bob, a DM that wakes bob and that his model answers
// with Cotal's DM tool, her echo reaching him; his woken turn on his event plane; a shell command
// the CLI would ask a person about, refused in the unattended seat, and the next DM still waking
// him. A file says only what its runtime does differently: the CLI's name for the DM tool, where
// its model is shown the wake line, how it words a refusal.
import { expect } from "vitest";
import { allText, type RecordedRequest, type ScriptStep } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";
import { exitedOk, type CliResult } from "./cli.js";
import type { ModelTurns, ToolAnswer } from "./model-turns.js";
import { seatFrames } from "./seat-plane.js";

type Cotal = (args: string[]) => Promise<CliResult>;

/** alice's DM to bob. */
export const PING = "ping bob, alice here";
/** bob's answer to it (alice, an echo seat, sends back `echo: <answer>`). */
export const ANSWER = "hi alice, bob here";
/** The start of the line the manager types into a seat's terminal to wake it. */
export const WAKE = "You have new Cotal mail";
/** alice's DM after a refused ask: bob must still be woken by it. */
export const AFTER = "are you still there, bob?";

/**
 * A Messages double's script for `expectDmAnsweredAndEchoed`: bob's turn that holds alice's DM and
 * is `woken` (where the runtime shows its model the wake line) answers her with `dmTool`; his turn
 * after it ends; his turn that sees her echo ends.
 */
export function dmAnswerSteps(dmTool: string, woken: (r: RecordedRequest) => boolean): ScriptStep[] {
  return [
    // Bob's first woken turn: alice's DM was handed over; answer her through Cotal's tool.
    { when: (r) => allText(r).includes(PING) && woken(r), reply: [{ tool: dmTool, input: { to: "alice", text: ANSWER } }] },
    { afterToolResult: dmTool, reply: ["Answered alice."] },
    // Bob's second woken turn: alice's echo reached his model.
    { when: (r) => allText(r).includes(`echo: ${ANSWER}`), reply: ["Alice echoed."] },
  ];
}

/**
 * An echo seat alice and a managed seat bob on `agent`; a DM from alice (`PING`) wakes bob with
 * nobody typing, his model is handed it and answers her with `dmTool` (`ANSWER`, its result no
 * error), and sees her echo. Returns the turn that handed bob the DM. On a timeout the error says
 * what `ps` shows and what the model was asked.
 */
export async function expectDmAnsweredAndEchoed<R>(cotal: Cotal, turns: ModelTurns<R>, o: { agent: string; dmTool: string; waitMs: number }): Promise<R> {
  const has = (text: string) => turns.all().some((r) => turns.text(r).includes(text));
  exitedOk(await cotal(["spawn", "-d", "--agent", "echo", "--name", "alice"]));
  const bob = exitedOk(await cotal(["spawn", "-d", "--agent", o.agent, "--name", "bob", "--wait-ms", String(o.waitMs), "--json"]));
  expect(bob.json(), bob.stdout).toMatchObject({ name: "bob", outcome: "started", seat: { state: "joined" } });
  exitedOk(await cotal(["send", "dm", "bob", PING, "--as", "alice", "--impersonate"]));
  try {
    await until(() => has(PING), 300_000, "bob's model to be handed alice's DM", 500);
    await until(() => turns.all().some((r) => turns.results(r).some((t) => t.name === o.dmTool)), 180_000, `bob's ${o.dmTool} to return`, 500);
    await until(() => has(`echo: ${ANSWER}`), 300_000, "bob's model to see alice's echo", 500);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- ps ---\n${(await cotal(["ps"])).stdout}\n--- requests ---\n${turns.log().join("\n")}`, { cause: err });
  }
  const result = turns
    .all()
    .flatMap((r) => turns.results(r))
    .find((t) => t.name === o.dmTool)!;
  expect(result.isError, result.text).toBe(false);
  return turns.all().find((r) => turns.text(r).includes(PING))!;
}

/** bob's woken turn on his event plane, read through the shipped CLI: a run started and finished, the `dmTool` call by name, and `hidden` (the mail) nowhere. */
export async function expectTurnOnPlane(cotal: Cotal, dmTool: string, hidden: string): Promise<void> {
  await until(
    async () => (await seatFrames(cotal, "bob")).some((f) => f.events.some((e) => e.type === "RUN_FINISHED")),
    120_000,
    "bob's run finished on his plane",
    1_000,
  );
  const events = (await seatFrames(cotal, "bob")).flatMap((f) => f.events);
  expect(events.map((e) => e.type)).toContain("RUN_STARTED");
  expect(events.some((e) => e.type === "TOOL_CALL_START" && (e as { toolCallName?: string }).toolCallName === dmTool)).toBe(true);
  expect(JSON.stringify(events)).not.toContain(hidden);
}

/** How a runtime answers the shell call its unattended seat refuses. */
export interface AskRefusal {
  /** alice's DM that makes bob's model call the shell. */
  ask: string;
  /** The CLI's name for its shell tool. */
  shellTool: string;
  /**
   * The refusal ends bob's turn (OpenCode, Kilo Code): the next DM follows once his model was handed
   * the ask. Otherwise the refused call's result comes back to his model within the turn, and the
   * next DM follows once it has.
   */
  endsTurn: boolean;
  /** Expectations on each result of the shell tool his model got: the refusal, never the command's output. */
  refused: (t: ToolAnswer) => void;
}

/**
 * A shell command the CLI would ask a person about, in bob's unattended seat: alice's `ask` makes
 * his model call it, the call is refused (each of its results passes `refused`; there is at least
 * one), no dialog waits, and her next DM (`AFTER`) still wakes him.
 */
export async function expectAskRefusedThenWoken<R>(cotal: Cotal, turns: ModelTurns<R>, o: AskRefusal): Promise<void> {
  const shellResults = () =>
    turns
      .all()
      .flatMap((r) => turns.results(r))
      .filter((t) => t.name === o.shellTool);
  exitedOk(await cotal(["send", "dm", "bob", o.ask, "--as", "alice", "--impersonate"]));
  if (o.endsTurn) await until(() => turns.all().some((r) => turns.lastUser(r).includes(o.ask)), 300_000, "bob's model to be handed the ask", 500);
  else await until(() => shellResults().length > 0, 300_000, "bob's refused shell call to return", 500);
  exitedOk(await cotal(["send", "dm", "bob", AFTER, "--as", "alice", "--impersonate"]));
  await until(() => turns.all().some((r) => turns.text(r).includes(AFTER)), 300_000, "bob to be woken after the refused ask", 500);
  const refused = shellResults();
  expect(refused.length).toBeGreaterThan(0);
  for (const t of refused) o.refused(t);
}
