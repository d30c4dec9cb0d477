// Cases the seat e2e files of runtimes whose CLI talks to a Messages double check the same way,
// each against its own real CLI through the shipped CLI: an echo alice and a managed bob, a DM that
// wakes bob and that his model answers with Cotal's DM tool, her echo reaching him; his woken turn
// on his event plane.
import { expect } from "vitest";
import { allText, lastUserText, toolResults, type ModelDouble, type RecordedRequest } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";
import { exitedOk, type CliResult } from "./cli.js";
import { seatFrames } from "./seat-plane.js";

type Cotal = (args: string[]) => Promise<CliResult>;

/**
 * An echo seat alice and a managed seat bob on `agent`; a DM from alice (`ping`) wakes bob with
 * nobody typing, his model is handed it and answers her with `dmTool` (`answer`, its result no
 * error), and sees her echo. Returns the request that handed bob the DM. On a timeout the error says
 * what `ps` shows and what the model was asked.
 */
export async function expectDmAnsweredAndEchoed(
  cotal: Cotal,
  model: ModelDouble,
  o: { agent: string; dmTool: string; ping: string; answer: string; waitMs: number },
): Promise<RecordedRequest> {
  exitedOk(await cotal(["spawn", "-d", "--agent", "echo", "--name", "alice"]));
  const bob = exitedOk(await cotal(["spawn", "-d", "--agent", o.agent, "--name", "bob", "--wait-ms", String(o.waitMs), "--json"]));
  expect(bob.json(), bob.stdout).toMatchObject({ name: "bob", outcome: "started", seat: { state: "joined" } });
  exitedOk(await cotal(["send", "dm", "bob", o.ping, "--as", "alice", "--impersonate"]));
  try {
    await until(() => model.mainRequests.some((r) => allText(r).includes(o.ping)), 300_000, "bob's model to be handed alice's DM", 500);
    await until(() => model.mainRequests.some((r) => toolResults(r).some((t) => t.name === o.dmTool)), 180_000, `bob's ${o.dmTool} to return`, 500);
    await until(() => model.mainRequests.some((r) => allText(r).includes(`echo: ${o.answer}`)), 300_000, "bob's model to see alice's echo", 500);
  } catch (err) {
    const asked = model.requests.filter((r) => r.path === "/v1/messages").map((r) => `${r.kind}: ${lastUserText(r).slice(0, 300)}`);
    throw new Error(`${(err as Error).message}\n--- ps ---\n${(await cotal(["ps"])).stdout}\n--- requests ---\n${asked.join("\n")}`, { cause: err });
  }
  const result = model.mainRequests.flatMap((r) => toolResults(r)).find((t) => t.name === o.dmTool)!;
  expect(result.isError, result.text).toBe(false);
  return model.mainRequests.find((r) => allText(r).includes(o.ping))!;
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
