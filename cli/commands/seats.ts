import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { connect } from "node:net";
import { hostname } from "node:os";
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import { z } from "zod";
import { credsCaller } from "../../broker/index.js";
import { ChannelName, ManagerInstance, PrincipalToken, RoleName, SeatAgent, SeatRuntime, type SeatView } from "../../schemas/index.js";
import { jsonOption, meshOptions, resolveTarget } from "../context.js";
import { CommandFailedError, EXIT, UsageError } from "../errors.js";
import { callManager, listManagers, seatsOfManagers, type ManagerSeats } from "../managers.js";
import { carriedLine, carrySession } from "../carry.js";
import { PTY_DETACH_KEY } from "../../manager/index.js";
import { ago, note, oneLine, printJson, printLines, safeLines, table } from "../output.js";
import { withSession, type MeshSession } from "../session.js";
import { repeatable, parseInput } from "../validate.js";

const SpawnFlags = z.object({
  persona: PrincipalToken.optional(),
  detach: z.boolean().optional(),
  cwd: z.string().min(1).optional(),
  model: z.string().min(1).max(200).optional(),
  prompt: z.string().min(1).optional(),
  on: ManagerInstance.optional(),
  name: PrincipalToken.optional(),
  agent: SeatAgent.default("claude"),
  role: RoleName.optional(),
  channel: z.array(ChannelName).default([]),
  runtime: SeatRuntime.optional(),
  waitMs: z.coerce.number().int().min(0).max(600_000).default(30_000),
  restarts: z.coerce.number().int().min(0).max(100).optional(),
  restartWindowMs: z.coerce.number().int().min(1_000).max(86_400_000).optional(),
  json: z.boolean().optional(),
  resume: z.string().min(1).max(200).optional(),
  /** `--no-events` (commander sets events: false). */
  events: z.boolean().default(true),
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
    await sleep(250);
  }
}

function seatRows(results: ManagerSeats[]): string[] {
  const rows = results.flatMap((m) =>
    "error" in m
      ? [[m.instance, "-", "-", `manager ${m.error}`, "-", "-", "-"]]
      : m.seats.map((v) => [m.instance, v.name, v.agent, v.state, v.role ?? "-", v.pid === undefined ? "-" : String(v.pid), ago(Date.now() - v.since)]),
  );
  return table(
    ["MANAGER", "NAME", "AGENT", "STATE", "ROLE", "PID", "SINCE"],
    rows.map((r) => r.map(oneLine)),
  );
}

/** A manager on this host (its heartbeat names this host), for seats that open in this terminal. */
async function localManager(s: MeshSession): Promise<string> {
  const here = (await listManagers(s)).find((m) => m.host === hostname());
  if (!here)
    throw new CommandFailedError(`No manager runs on this host (${hostname()}), so a seat cannot open in this terminal.`, {
      remedy: "Start one (`cotal up` does, or `cotal manager`), or spawn with --detach on another (--on).",
    });
  return here.instance;
}

async function isLocal(s: MeshSession, instance: string): Promise<boolean> {
  return (await listManagers(s)).some((m) => m.instance === instance && m.host === hostname());
}

/** The seat named `name` on any manager (or on `on`), or a refusal that says where to look. */
async function findSeat(s: MeshSession, name: string, on?: string): Promise<SeatView> {
  const found = (await seatsOfManagers(s, on ? { on } : {})).flatMap((m) => ("seats" in m ? m.seats : [])).find((v) => v.name === name);
  if (!found) throw new CommandFailedError(`No manager runs a seat named ${name}.`, { remedy: "See `cotal ps` for the seats that run." });
  return found;
}

/** Open the seat's terminal here until the person leaves it: tmux's own attach, or a relay to a pty seat's socket. */
async function attachTo(command: readonly string[]): Promise<void> {
  if (command[0] === "pty") return relayPty(command[1]!);
  const r = spawnSync(command[0]!, command.slice(1), { stdio: "inherit" });
  if (r.error) throw new CommandFailedError(`Could not open the seat's terminal: ${r.error.message}.`, { remedy: "Install tmux on this host." });
}

/** Relay this terminal to a pty seat's socket; Ctrl-] leaves (the seat keeps running). */
function relayPty(socketPath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const sock = connect(socketPath);
    const stdin = process.stdin;
    const done = () => {
      if (stdin.isTTY) stdin.setRawMode(false);
      stdin.pause();
      stdin.off("data", onKey);
      sock.destroy();
      resolve();
    };
    const onKey = (d: Buffer) => {
      if (d.includes(PTY_DETACH_KEY)) return done();
      sock.write(d);
    };
    sock.once("error", (err) =>
      reject(new CommandFailedError(`Could not open the seat's terminal: ${err.message}.`, { remedy: "Run it on the manager's host, as the manager's user." })),
    );
    sock.once("connect", () => {
      if (stdin.isTTY) stdin.setRawMode(true);
      stdin.on("data", onKey);
      stdin.resume();
      note("Attached to the seat (Ctrl-] leaves it running).");
    });
    sock.on("data", (d: Buffer) => process.stdout.write(d));
    sock.once("close", done);
  });
}

/** `cotal spawn`, `cotal attach`, `cotal ps`, `cotal stop`: seats through the managers. */
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
    .argument("[persona]", "claude seats: an agent file .cotal/agents/<persona>.md under --cwd on the manager's host")
    .option("-d, --detach", "leave the seat running in the background; without it, a Claude seat opens in this terminal and is retired when you leave it")
    .option("--cwd <dir>", "the seat's working directory on the manager's host (default: this folder when the manager runs here, else the manager's)")
    .option("--model <model>", "claude seats: the model")
    .option("--prompt <text>", "claude seats: typed into the session once it is ready")
    .option("--on <instance>", "the manager instance to run it on (see `cotal ps`)")
    .option("--name <name>", "the seat's name (default: the agent's name)")
    .option("--agent <agent>", "what to run: echo (built in, no model) or claude", "claude")
    .option("--role <role>", "a role whose anycasts the seat takes")
    .option("--channel <channel>", "a channel the seat joins (repeatable)", repeatable)
    .option("--runtime <runtime>", "tmux (default for claude), pty (claude, on a pseudo-terminal the manager holds) or process (echo)")
    .option("--wait-ms <ms>", "how long to wait for the seat to join", "30000")
    .option("--restarts <n>", "restarts allowed within --restart-window-ms before a crash loop retires it (default 3)")
    .option("--restart-window-ms <ms>", "the restart policy's window (default 60000)")
    .option("--no-events", "claude seats: publish nothing on the seat's event plane events.<owner>.<actor> (docs/events.md)")
    .option(
      "--resume <session>",
      "claude seats: carry this Claude session (its id) to the manager (--on) and fork it there (docs/manager.md, Transcript carry)",
    );
  jsonOption(meshOptions(spawn)).action(async (persona: string | undefined, raw: Record<string, unknown>) => {
    const f = parseInput(SpawnFlags, { ...raw, ...(persona !== undefined ? { persona } : {}) });
    if (!f.detach && f.agent !== "claude")
      throw new UsageError("Only Claude seats open in this terminal; an echo seat runs in the background.", { remedy: "Add --detach (or -d)." });
    if (!f.detach && f.json)
      throw new UsageError("--json reports a detached spawn; a seat in this terminal has nothing to print.", { remedy: "Add --detach, or leave out --json." });
    const target = resolveTarget(raw);
    const result = await withSession(target, async (s) => {
      const caller = credsCaller(target.creds);
      // In the foreground the seat must run on a manager here: its terminal opens in this one.
      const on = f.on ?? (f.detach ? "one" : await localManager(s));
      const cwd = f.cwd ? resolve(f.cwd) : on !== "one" && (await isLocal(s, on)) ? process.cwd() : undefined;
      if (f.resume && on === "one")
        throw new UsageError("--resume carries the session to one manager: name it.", { remedy: "Add --on <instance> (see `cotal ps`)." });
      const carried = f.resume ? await carrySession(s, f.resume, on, { bar: !f.json }) : undefined;
      if (carried && !f.json) printLines(carriedLine(carried));
      const id = await callManager(
        s.nc,
        target.space,
        "spawn",
        caller,
        {
          agent: f.agent,
          ...(f.persona ? { persona: f.persona } : {}),
          ...(f.name ? { name: f.name } : {}),
          ...(f.role ? { role: f.role } : {}),
          channels: f.channel,
          ...(f.runtime ? { runtime: f.runtime } : {}),
          ...(cwd ? { cwd } : {}),
          ...(f.model ? { model: f.model } : {}),
          ...(f.prompt ? { prompt: f.prompt } : {}),
          ...(f.restarts !== undefined ? { restarts: f.restarts } : {}),
          ...(f.restartWindowMs !== undefined ? { windowMs: f.restartWindowMs } : {}),
          ...(carried ? { resume: carried.session, claim: carried.claim } : {}),
          ...(f.events ? {} : { noEvents: true }),
          requestId: randomUUID(),
        },
        { target: on, timeoutMs: 30_000 },
      );
      const settled = await settle(s, id.instance, id.name, f.waitMs);
      if (!f.detach && settled.outcome === "started" && settled.seat?.attach) {
        // Foreground: the seat's terminal is this one until the person leaves it; then the identity is retired.
        await attachTo(settled.seat.attach);
        await callManager(s.nc, target.space, "stop", caller, { name: id.name }, { target: id.instance, timeoutMs: 30_000 });
        return { ...id, ...settled, retired: true };
      }
      return { ...id, ...settled, retired: false, ...(carried ? { carried } : {}) };
    });
    if (result.retired) {
      printLines(`${result.name}: left the seat's terminal; it was stopped and its identity retired.`);
      return;
    }
    if (f.json) printJson(result);
    else {
      const how =
        result.outcome === "started"
          ? "started"
          : result.outcome === "failed"
            ? `failed: ${result.seat?.reason ?? result.seat?.state ?? "exited"}`
            : `uncertain: not joined within ${f.waitMs} ms (kept; see \`cotal ps\`)`;
      printLines(`${result.name} on ${result.instance}: ${how}`);
      if (result.outcome === "failed" && result.seat?.exit?.output) printLines(safeLines(result.seat.exit.output));
    }
    if (result.outcome !== "started") process.exitCode = EXIT.failed;
  });

  const attach = program
    .command("attach")
    .summary("open a seat's terminal here (the seat must run on a manager on this host)")
    .description(
      "Open the terminal of a Claude seat in this one: tmux's own attach (its detach key, Ctrl-b d, leaves it running) or, for a pty seat, a relay to it (Ctrl-] leaves it running). The seat is found with ps, or on the manager named by --on.",
    )
    .requiredOption("--name <name>", "the seat")
    .option("--on <instance>", "the manager that runs it");
  meshOptions(attach).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(z.object({ name: PrincipalToken, on: ManagerInstance.optional() }), raw);
    const view = await withSession(resolveTarget(raw), async (s) => {
      const found = await findSeat(s, f.name, f.on);
      if (!found.attach)
        throw new CommandFailedError(`Seat ${f.name} runs headless (runtime ${found.runtime ?? "process"}): it has no terminal to open.`, {
          remedy: "Claude seats (runtime tmux or pty) have one.",
        });
      if (!(await isLocal(s, found.instance)))
        throw new CommandFailedError(`Seat ${f.name} runs on manager ${found.instance}, on another host.`, {
          remedy: `Run \`cotal attach --name ${f.name}\` on that host.`,
        });
      return found;
    });
    await attachTo(view.attach!);
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
    .description(
      "Stop a seat on the manager that runs it (found with ps, or named by --on): the process is stopped, the incarnation retired in the seat log, its credential revoked.",
    )
    .requiredOption("--name <name>", "the seat to stop")
    .option("--on <instance>", "the manager that runs it");
  jsonOption(meshOptions(stop)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(z.object({ name: PrincipalToken, on: ManagerInstance.optional(), json: z.boolean().optional() }), raw);
    const target = resolveTarget(raw);
    const r = await withSession(target, async (s) => {
      const on = f.on ?? (await findSeat(s, f.name)).instance;
      return callManager(s.nc, target.space, "stop", credsCaller(target.creds), { name: f.name }, { target: on, timeoutMs: 30_000 });
    });
    if (f.json) printJson(r);
    else
      printLines(
        `${f.name}: ${r.stopped ? "stopped" : "was not running"}, retired${r.revoked ? `, ${r.revoked} credential${r.revoked === 1 ? "" : "s"} revoked` : ""}`,
      );
  });
}
