import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { connect } from "node:net";
import { hostname } from "node:os";
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Option, type Command } from "commander";
import { z } from "zod";
import { credsCaller } from "../../broker/index.js";
import {
  AllowSpawn,
  ChannelName,
  ManagerInstance,
  PrincipalId,
  PrincipalToken,
  RoleName,
  SeatAgent,
  SeatPosture,
  SpawnLimit,
  TerminalHost,
  type SeatView,
} from "../../schemas/index.js";
import { jsonOption, meshOptions, resolveTarget } from "../mesh-client/mesh-target.js";
import { CommandFailedError, EXIT, UsageError } from "../terminal/errors.js";
import { callManager, listManagers, seatsOfManagers, type ManagerSeats } from "../mesh-client/manager-calls.js";
import { carriedLine, carrySession } from "../mesh-client/carry.js";
import { capabilityGaps, localAttachCommand, PTY_DETACH_KEY } from "../../manager/index.js";
import { DEFAULT_RUNTIME, RUNTIMES, runtimeNamed } from "../../runtimes/index.js";
import { localManager, type LocalManager } from "../mesh-host/local-manager.js";
import { ago, note, oneLine, printJson, printLines, safeLines, table, warn } from "../terminal/output.js";
import { withSession, type MeshSession } from "../mesh-client/session.js";
import { repeatable, parseInput } from "../terminal/validate.js";

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
  terminal: TerminalHost.optional(),
  /** `--runtime`, the old name of `--terminal`. */
  runtime: TerminalHost.optional(),
  waitMs: z.coerce.number().int().min(0).max(600_000).default(30_000),
  restarts: z.coerce.number().int().min(0).max(100).optional(),
  restartWindowMs: z.coerce.number().int().min(1_000).max(86_400_000).optional(),
  json: z.boolean().optional(),
  resume: z.string().min(1).max(200).optional(),
  /** `--no-events` (commander sets events: false). */
  events: z.boolean().default(true),
  allowSpawn: z
    .string()
    .optional()
    .transform((s) =>
      s === undefined
        ? undefined
        : s
            .split(",")
            .map((x) => x.trim())
            .filter(Boolean),
    )
    .pipe(AllowSpawn.optional()),
  spawnLimit: z.coerce.number().pipe(SpawnLimit).optional(),
  posture: SeatPosture.optional(),
});

/**
 * Where a spawned seat settled: joined, failed (exited first), neither within the window, or
 * `impaired`: joined, but its first turn (the spawn's prompt) ended with a condition (e.g. `auth`:
 * its model calls fail).
 */
type Settled = { outcome: "started" | "failed" | "uncertain" | "impaired"; seat: SeatView | undefined };

/** A seat's state for people: with its presence condition while one is set (`joined (auth)`). */
function stateLine(v: SeatView): string {
  return v.presence?.condition ? `${v.state} (${v.presence.condition})` : v.state;
}

/** How long a spawn that saw its seat exit waits for the record that says why (retired, or restarted). */
const EXIT_REASON_WAIT_MS = 3_000;

async function settle(s: MeshSession, instance: string, name: string, waitMs: number, prompted: boolean): Promise<Settled> {
  const caller = credsCaller(s.target.creds);
  const deadline = Date.now() + waitMs;
  let last: SeatView | undefined;
  let exitedAt: number | undefined;
  for (;;) {
    const ps = await callManager(s.nc, s.target.space, "ps", caller, { all: true }, { target: instance });
    last = ps.seats.filter((v) => v.name === name).sort((a, b) => b.requestedAt - a.requestedAt)[0];
    if (last?.state === "joined") {
      // A spawn with a prompt waits for its first turn too: a model that cannot be reached shows there.
      // Waiting for a person's approval (a supervised seat's ask: `cotal approvals`) is no impairment.
      if (last.presence?.condition === "approval") return { outcome: "started", seat: last };
      if (last.presence?.condition) return { outcome: "impaired", seat: last };
      if (!prompted || (last.presence?.status === "idle" && last.presence.activeAt !== undefined)) return { outcome: "started", seat: last };
      if (Date.now() >= deadline) return { outcome: "started", seat: last };
    }
    // The manager records an exit, then why it retires the seat: the reason follows within moments.
    if (last?.state === "exited" && !last.reason && Date.now() - (exitedAt ??= Date.now()) < EXIT_REASON_WAIT_MS && Date.now() < deadline) {
      await sleep(250);
      continue;
    }
    if (last && ["exited", "retired", "fenced"].includes(last.state)) return { outcome: "failed", seat: last };
    if (Date.now() >= deadline) return { outcome: "uncertain", seat: last };
    await sleep(250);
  }
}

/** A seat's unattended posture and, for a runtime that keeps fewer promises, which (docs/runtimes.md). */
function postureOf(v: SeatView): string {
  const adapter = runtimeNamed(v.agent);
  const gaps = adapter ? capabilityGaps(adapter) : [];
  return [v.permissionMode ?? "-", ...(gaps.length ? [`(${gaps.join("; ")})`] : [])].join(" ");
}

/** Who a helper answers to (docs/manager.md, Helpers): its spawner, or whom it was handed over to; `-` for the operator's seats. */
function spawnedByOf(v: SeatView): string {
  if (v.spawnedBy) return v.handedOverBy ? `${v.spawnedBy} (from ${v.handedOverBy})` : v.spawnedBy;
  return v.handedOverBy ? `- (from ${v.handedOverBy})` : "-";
}

/** The runtimes a seat may run supervised in, for sentences. */
function supervisableRuntimes(): string {
  return RUNTIMES.filter((r) => r.capabilities.approvals)
    .map((r) => r.name)
    .join(", ");
}

/** "a" or "an" before an agent name, for sentences. */
const article = (word: string): string => (/^[aeiou]/i.test(word) ? "an" : "a");

function seatRows(results: ManagerSeats[]): string[] {
  const rows = results.flatMap((m) =>
    "error" in m
      ? [[m.instance, "-", "-", `manager ${m.error}`, "-", "-", "-", "-"]]
      : m.seats.map((v) => [
          m.instance,
          v.name,
          v.agent,
          stateLine(v),
          v.role ?? "-",
          v.pid === undefined ? "-" : String(v.pid),
          ago(Date.now() - v.since),
          spawnedByOf(v),
          postureOf(v),
        ]),
  );
  return table(
    ["MANAGER", "NAME", "AGENT", "STATE", "ROLE", "PID", "SINCE", "SPAWNED BY", "POSTURE"],
    rows.map((r) => r.map(oneLine)),
  );
}

/**
 * This host's manager, for seats that open in this terminal: the one this host's state dir names
 * (never a heartbeat's host name: any manager writes its own), and only while it heartbeats.
 */
async function runningLocalManager(s: MeshSession, stateDir?: string): Promise<LocalManager> {
  const here = localManager(s.target, stateDir);
  if (!here || !(await listManagers(s)).some((m) => m.instance === here.instance))
    throw new CommandFailedError(`No manager runs on this host (${hostname()}), so a seat cannot open in this terminal.`, {
      remedy: "Start one (`cotal up` does, or `cotal manager`; pass its --state-dir if it has its own), or spawn with --detach on another (--on).",
    });
  return here;
}

/** Whether `instance` is this host's manager, as this host's own state says. */
function isLocal(s: MeshSession, instance: string): boolean {
  return localManager(s.target)?.instance === instance;
}

/** How a seat's terminal opens here: built from this host's state, for a terminal host a person can open (never a command a reply carried). */
function terminalOf(here: LocalManager, space: string, seat: SeatView): string[] | undefined {
  return seat.terminal === "tmux" || seat.terminal === "pty" ? localAttachCommand(here.stateDir, space, seat.name, seat.terminal) : undefined;
}

/** The terminal host `cotal spawn` asks for: `--terminal`, or `--runtime`, its old name (said so on stderr). */
function terminalFlag(f: { terminal?: TerminalHost | undefined; runtime?: TerminalHost | undefined }): TerminalHost | undefined {
  if (f.runtime === undefined) return f.terminal;
  if (f.terminal !== undefined && f.terminal !== f.runtime)
    throw new UsageError(`--runtime is the old name of --terminal, and the two differ (${f.runtime}, ${f.terminal}).`, { remedy: "Give --terminal only." });
  warn("--runtime is the old name of --terminal: it still works; use --terminal.");
  return f.runtime;
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

/** `cotal spawn`, `cotal attach`, `cotal ps`, `cotal stop`, `cotal handover`: seats through the managers. */
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
    .option("--prompt <text>", "agent CLI seats: the opening prompt, handed over as a DM from the manager (never typed)")
    .option("--on <instance>", "the manager instance to run it on (see `cotal ps`)")
    .option("--name <name>", "the seat's name (default: the agent's name)")
    .option("--agent <agent>", `what to run: echo (built in, no model) or an agent CLI: ${RUNTIMES.map((r) => r.name).join(", ")} (docs/runtimes.md)`, "claude")
    .option("--role <role>", "a role whose anycasts the seat takes")
    .option("--channel <channel>", "a channel the seat joins (repeatable)", repeatable)
    .option("--terminal <host>", "the terminal host: tmux (default for agent CLIs), pty (on a pseudo-terminal the manager holds) or process (echo)")
    .addOption(new Option("--runtime <host>", "old name of --terminal").hideHelp())
    .option("--wait-ms <ms>", "how long to wait for the seat to join", "30000")
    .option("--restarts <n>", "restarts allowed within --restart-window-ms before a crash loop retires it (default 3)")
    .option("--restart-window-ms <ms>", "the restart policy's window (default 60000)")
    .option("--no-events", "claude seats: publish nothing on the seat's event plane events.<owner>.<actor> (docs/events.md)")
    .option(
      "--resume <session>",
      "claude seats: carry this Claude session (its id) to the manager (--on) and fork it there (docs/manager.md, Transcript carry)",
    )
    .option(
      "--allow-spawn <personas>",
      "the seat's credential may spawn helpers of these comma-separated personas with cotal_spawn (default: its agent file's allowSpawn; docs/manager.md, Helpers)",
    )
    .option("--spawn-limit <n>", "with --allow-spawn: helpers it may hold at once (default 4, at most 32)")
    .option(
      "--posture <posture>",
      "unattended (default: a tool its allow-list does not name is refused) or supervised (it is asked of a person over the mesh: `cotal approvals`; claude and codex seats; default: its agent file's posture)",
    );
  jsonOption(meshOptions(spawn)).action(async (persona: string | undefined, raw: Record<string, unknown>) => {
    const f = parseInput(SpawnFlags, { ...raw, ...(persona !== undefined ? { persona } : {}) });
    const terminalHost = terminalFlag(f);
    const adapter = runtimeNamed(f.agent);
    if (!f.detach && adapter !== DEFAULT_RUNTIME)
      throw new UsageError(`Only ${DEFAULT_RUNTIME.label} seats open in this terminal; ${article(f.agent)} ${f.agent} seat runs in the background.`, {
        remedy: "Add --detach (or -d).",
      });
    if (!f.detach && f.json)
      throw new UsageError("--json reports a detached spawn; a seat in this terminal has nothing to print.", { remedy: "Add --detach, or leave out --json." });
    // The manager refuses it too (agent and team files reach it without this check).
    if (f.posture === "supervised" && !adapter?.capabilities.approvals)
      throw new UsageError(
        `--posture supervised needs a runtime whose permission hook returns a person's decision to the CLI: ${supervisableRuntimes()} (docs/runtimes.md); ${article(f.agent)} ${f.agent} seat runs unattended. Nothing was started.`,
        { remedy: `Leave out --posture, or spawn a seat of ${supervisableRuntimes()}.` },
      );
    // Before anything connects or is uploaded (the manager refuses it too, after the upload).
    if (f.resume && !adapter?.capabilities.carry)
      throw new UsageError(
        `--resume carries a Claude session: ${article(f.agent)} ${f.agent} seat cannot resume one${adapter ? " (docs/runtimes.md)" : ""}; nothing was uploaded or started.`,
        { remedy: `Leave out --resume, or spawn a ${DEFAULT_RUNTIME.name} seat (--agent ${DEFAULT_RUNTIME.name}).` },
      );
    const target = resolveTarget(raw);
    const result = await withSession(target, async (s) => {
      const caller = credsCaller(target.creds);
      // In the foreground the seat must run on this host's manager: its terminal opens in this one.
      const here = f.detach ? undefined : await runningLocalManager(s);
      if (here && f.on && f.on !== here.instance)
        throw new UsageError(`A seat opens in this terminal only on this host's manager (${here.instance}), not ${f.on}.`, {
          remedy: "Add --detach to run it there, or leave out --on.",
        });
      const on = f.on ?? here?.instance ?? "one";
      const cwd = f.cwd ? resolve(f.cwd) : on !== "one" && isLocal(s, on) ? process.cwd() : undefined;
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
          ...(terminalHost ? { terminal: terminalHost } : {}),
          ...(cwd ? { cwd } : {}),
          ...(f.model ? { model: f.model } : {}),
          ...(f.prompt ? { prompt: f.prompt } : {}),
          ...(f.restarts !== undefined ? { restarts: f.restarts } : {}),
          ...(f.restartWindowMs !== undefined ? { windowMs: f.restartWindowMs } : {}),
          ...(carried ? { resume: carried.session, claim: carried.claim } : {}),
          ...(f.events ? {} : { noEvents: true }),
          ...(f.allowSpawn !== undefined ? { allowSpawn: f.allowSpawn } : {}),
          ...(f.spawnLimit !== undefined ? { spawnLimit: f.spawnLimit } : {}),
          ...(f.posture ? { posture: f.posture } : {}),
          requestId: randomUUID(),
        },
        { target: on, timeoutMs: 30_000 },
      );
      const settled = await settle(s, id.instance, id.name, f.waitMs, f.prompt !== undefined);
      const terminal =
        here && settled.outcome === "started" && settled.seat && id.instance === here.instance ? terminalOf(here, target.space, settled.seat) : undefined;
      if (terminal) {
        // Foreground: the seat's terminal is this one until the person leaves it; then the identity is retired.
        await attachTo(terminal);
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
            ? `failed: ${(result.seat?.reason ?? result.seat?.state ?? "exited").replace(/^failed: /, "")}`
            : result.outcome === "impaired"
              ? `joined, but its first turn failed (${result.seat?.presence?.condition}${result.seat?.presence?.message ? `: ${result.seat.presence.message}` : ""}; kept: fix it, then \`cotal stop --name ${result.name}\` and spawn again)`
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
      "Open the terminal of a Claude seat of this host's manager in this one: tmux's own attach (its detach key, Ctrl-b d, leaves it running) or, for a pty seat, a relay to it (Ctrl-] leaves it running). " +
        "The manager is the one this host's state dir names; how the terminal opens is built here from that state and the seat's name, never taken from the mesh.",
    )
    .requiredOption("--name <name>", "the seat")
    .option("--on <instance>", "the manager that runs it (must be this host's)")
    .option("--state-dir <dir>", "this host's manager's state dir, when it runs with its own (default: as `cotal manager`)");
  meshOptions(attach).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(z.object({ name: PrincipalToken, on: ManagerInstance.optional(), stateDir: z.string().min(1).optional() }), raw);
    const terminal = await withSession(resolveTarget(raw), async (s) => {
      const here = await runningLocalManager(s, f.stateDir);
      if (f.on && f.on !== here.instance)
        throw new CommandFailedError(`Seat ${f.name} runs on manager ${f.on}; this host's manager is ${here.instance}.`, {
          remedy: `Run \`cotal attach --name ${f.name}\` on ${f.on}'s host.`,
        });
      // Only this host's manager is asked (the broker lets only its credential answer its instance).
      const found = await findSeat(s, f.name, here.instance);
      const command = terminalOf(here, s.target.space, found);
      if (!command)
        throw new CommandFailedError(`Seat ${f.name} runs headless (terminal ${found.terminal ?? "process"}): it has no terminal to open.`, {
          remedy: "Agent CLI seats (terminal tmux or pty) have one.",
        });
      return command;
    });
    await attachTo(terminal);
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

  const handover = program
    .command("handover")
    .summary("hand a helper over, so it outlives the agent that spawned it")
    .description(
      "A helper (a seat an agent spawned with cotal_spawn) retires with its spawner. Handed over, it answers to another " +
        "agent allowed to spawn its persona (--to; within that agent's limit and scope), or to the operator (no --to): " +
        "it then stays when its spawner is retired (docs/manager.md, Helpers).",
    )
    .requiredOption("--name <name>", "the helper")
    .option("--to <agent>", "the agent that answers for it from now on, <owner>.<actor> (default: the operator)")
    .option("--on <instance>", "the manager that runs it");
  jsonOption(meshOptions(handover)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(z.object({ name: PrincipalToken, to: PrincipalId.optional(), on: ManagerInstance.optional(), json: z.boolean().optional() }), raw);
    const target = resolveTarget(raw);
    const r = await withSession(target, async (s) => {
      const on = f.on ?? (await findSeat(s, f.name)).instance;
      return callManager(s.nc, target.space, "handover", credsCaller(target.creds), { name: f.name, ...(f.to ? { to: f.to } : {}) }, { target: on });
    });
    if (f.json) printJson(r);
    else printLines(`${f.name}: handed over by ${r.from}; it answers to ${r.to ?? "the operator"} now.`);
  });
}
