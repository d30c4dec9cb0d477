import { randomUUID } from "node:crypto";
import type { Command } from "commander";
import { z } from "zod";
import { credsCaller } from "../../broker/index.js";
import { ChannelName, ManagerInstance, PrincipalToken, RoleName, SeatAgent, SeatRuntime, type SeatView } from "../../schemas/index.js";
import { jsonOption, meshOptions, resolveTarget } from "../context.js";
import { CommandFailedError, EXIT, UsageError } from "../errors.js";
import { callManager, seatsOfManagers, type ManagerSeats } from "../managers.js";
import { ago, oneLine, printJson, printLines, safeLines, table } from "../output.js";
import { withSession, type MeshSession } from "../session.js";
import { parseInput } from "../validate.js";

const collect = (v: string, prev: string[] = []) => [...prev, v];

const SpawnFlags = z.object({
  detach: z.boolean().optional(),
  on: ManagerInstance.optional(),
  name: PrincipalToken.optional(),
  agent: SeatAgent.default("claude"),
  role: RoleName.optional(),
  channel: z.array(ChannelName).default([]),
  runtime: SeatRuntime.default("process"),
  waitMs: z.coerce.number().int().min(0).max(600_000).default(30_000),
  json: z.boolean().optional(),
});

/** Where a spawned seat settled: joined, failed (exited first), or neither within the window. */
type Settled = { outcome: "started" | "failed" | "uncertain"; seat: SeatView | undefined };

async function settle(s: MeshSession, instance: string, name: string, waitMs: number): Promise<Settled> {
  const caller = credsCaller(s.target.creds);
  const deadline = Date.now() + waitMs;
  let last: SeatView | undefined;
  for (;;) {
    const ps = await callManager(s.nc, s.target.space, "ps", caller, { all: true }, { target: instance });
    last = ps.seats.filter((v) => v.name === name).sort((a, b) => b.requestedAt - a.requestedAt)[0];
    if (last?.state === "joined") return { outcome: "started", seat: last };
    if (last && ["exited", "retired", "fenced"].includes(last.state)) return { outcome: "failed", seat: last };
    if (Date.now() >= deadline) return { outcome: "uncertain", seat: last };
    await new Promise((r) => setTimeout(r, 250));
  }
}

function seatRows(results: ManagerSeats[]): string[] {
  const rows = results.flatMap((m) =>
    "error" in m
      ? [[m.instance, "-", "-", `manager ${m.error}`, "-", "-", "-"]]
      : m.seats.map((v) => [m.instance, v.name, v.agent, v.state, v.role ?? "-", v.pid === undefined ? "-" : String(v.pid), ago(Date.now() - v.since)]),
  );
  return table(["MANAGER", "NAME", "AGENT", "STATE", "ROLE", "PID", "SINCE"], rows.map((r) => r.map(oneLine)));
}

/** `cotal spawn`, `cotal ps`, `cotal stop`: seats through the managers. */
export function registerSeats(program: Command): void {
  const spawn = program
    .command("spawn")
    .summary("start a seat on a manager (`--detach`), and report whether it joined")
    .description(
      "Ask a manager (any, or the one named by --on) to start a seat: it picks the name (taken names get _2, _3…), " +
        "mints its credential, writes its launch material and starts it. Then waits up to --wait-ms for the seat to " +
        "join: `started` (exit 0), `failed` with its exit and last output (exit 1), or `uncertain` when neither " +
        "happened in time (exit 1; the seat is kept, never torn down behind your back).",
    )
    .option("-d, --detach", "leave the seat running in the background (required for now)")
    .option("--on <instance>", "the manager instance to run it on (see `cotal ps`)")
    .option("--name <name>", "the seat's name (default: the agent's name)")
    .option("--agent <agent>", "what to run: echo (built in, no model) or claude", "claude")
    .option("--role <role>", "a role whose anycasts the seat takes")
    .option("--channel <channel>", "a channel the seat joins (repeatable)", collect)
    .option("--runtime <runtime>", "process (headless; tmux and pty are not built yet)", "process")
    .option("--wait-ms <ms>", "how long to wait for the seat to join", "30000");
  jsonOption(meshOptions(spawn)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(SpawnFlags, raw);
    if (!f.detach) throw new UsageError("cotal spawn runs seats in the background only for now.", { remedy: "Add --detach (or -d); `cotal ps` shows it and `cotal stop --name N` stops it." });
    const target = resolveTarget(raw);
    const result = await withSession(target, async (s) => {
      const caller = credsCaller(target.creds);
      const id = await callManager(s.nc, target.space, "spawn", caller, {
        agent: f.agent,
        ...(f.name ? { name: f.name } : {}),
        ...(f.role ? { role: f.role } : {}),
        channels: f.channel,
        runtime: f.runtime,
        requestId: randomUUID(),
      }, { target: f.on ?? "one", timeoutMs: 15_000 });
      return { ...id, ...(await settle(s, id.instance, id.name, f.waitMs)) };
    });
    if (f.json) printJson(result);
    else {
      const how = result.outcome === "started" ? "started" : result.outcome === "failed" ? `failed: ${result.seat?.reason ?? result.seat?.state ?? "exited"}` : `uncertain: not joined within ${f.waitMs} ms (kept; see \`cotal ps\`)`;
      printLines(`${result.name} on ${result.instance}: ${how}`);
      if (result.outcome === "failed" && result.seat?.exit?.output) printLines(safeLines(result.seat.exit.output));
    }
    if (result.outcome !== "started") process.exitCode = EXIT.failed;
  });

  const ps = program
    .command("ps")
    .summary("list the seats of every manager (or of one, with --on)")
    .description("List seats as their managers' seat logs and presence say. A manager that does not answer is listed as such and the exit code is 1.")
    .option("--on <instance>", "only this manager")
    .option("--all", "include retired seats");
  jsonOption(meshOptions(ps)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(z.object({ on: ManagerInstance.optional(), all: z.boolean().optional(), json: z.boolean().optional() }), raw);
    const results = await withSession(resolveTarget(raw), (s) => seatsOfManagers(s, { on: f.on, all: f.all ?? false }));
    if (f.json) printJson(results);
    else if (results.length === 0) printLines("No manager is running in this space (start one with `cotal manager`).");
    else printLines(...seatRows(results));
    if (results.some((r) => "error" in r)) process.exitCode = EXIT.failed;
  });

  const stop = program
    .command("stop")
    .summary("stop a seat: its process ends, its credential is revoked, its name is free")
    .description("Stop a seat on the manager that runs it (found with ps, or named by --on): the process is stopped, the incarnation retired in the seat log, its credential revoked.")
    .requiredOption("--name <name>", "the seat to stop")
    .option("--on <instance>", "the manager that runs it");
  jsonOption(meshOptions(stop)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(z.object({ name: PrincipalToken, on: ManagerInstance.optional(), json: z.boolean().optional() }), raw);
    const target = resolveTarget(raw);
    const r = await withSession(target, async (s) => {
      let on = f.on;
      if (!on) {
        const owner = (await seatsOfManagers(s, {})).find((m) => "seats" in m && m.seats.some((v) => v.name === f.name));
        if (!owner) throw new CommandFailedError(`No manager runs a seat named ${f.name}.`, { remedy: "See `cotal ps` for the seats that run." });
        on = owner.instance;
      }
      return callManager(s.nc, target.space, "stop", credsCaller(target.creds), { name: f.name }, { target: on, timeoutMs: 30_000 });
    });
    if (f.json) printJson(r);
    else printLines(`${f.name}: ${r.stopped ? "stopped" : "was not running"}, retired${r.revoked ? `, ${r.revoked} credential${r.revoked === 1 ? "" : "s"} revoked` : ""}`);
  });
}
