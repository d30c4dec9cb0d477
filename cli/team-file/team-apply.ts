// `cotal up -f` carried out (docs/team-file.md): observe what the mesh runs, plan (cli/team-file/team-plan.ts),
// print the plan, then act — channels through the registry, agent files and budget caps on this
// host, seats through the managers' control rail (the same spawn and stop as `cotal spawn -d` and
// `cotal stop`) — recording which seats it started in .cotal/team.json. `cotal down` stops those.
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { callControl, credsCaller } from "../../broker/index.js";
import { BudgetConfig, DEFAULT_CHANNEL_CONFIG, type ChannelConfig, type SeatAgent, type SeatView, type TerminalHost } from "../../schemas/index.js";
import { askYesNo, atTerminal } from "../terminal/confirm.js";
import { resolveTarget, type MeshTarget } from "../mesh-client/mesh-target.js";
import { CommandFailedError, UsageError } from "../terminal/errors.js";
import { localManager } from "../mesh-host/local-manager.js";
import { callManager, listManagers, seatsOfManagers } from "../mesh-client/manager-calls.js";
import type { MeshRoot } from "../mesh-host/mesh-root.js";
import { serverAnswers } from "../mesh-host/probe.js";
import { withSession, type MeshSession } from "../mesh-client/session.js";
import type { TeamDoc } from "./team-file.js";
import { desiredSeats, describePlan, planTeam, rightsNotHeld, type DesiredSeat, type Observed, type Plan, type PlanStep } from "./team-plan.js";
import { readTeamState, writeTeamState, type TeamState } from "./team-state.js";

/** How long started seats have to join before they are reported `uncertain` (kept, as `cotal spawn` keeps them). */
const JOIN_WAIT_MS = 60_000;

/** What one step came to. */
export interface StepOutcome {
  step: string;
  ok: boolean;
  outcome: string;
}

/** What `up -f` planned and did. */
export interface TeamResult {
  plan: Plan;
  done: StepOutcome[];
  dryRun: boolean;
}

/** How a run of `up -f` reports: plan and outcomes on stdout as they come (text), or nothing until the end (JSON). */
export interface TeamOptions {
  /** Print lines as they come (text output). */
  print?: (lines: string[]) => void;
  /** `--creds` of `cotal up`. */
  creds?: string | undefined;
  /** `--yes`: retire the seats the file no longer declares without asking. */
  yes?: boolean | undefined;
}

/** `up --dry-run -f`: the plan against the running mesh, or against an empty one when it does not run. Changes nothing. */
export async function planOnly(root: MeshRoot, doc: TeamDoc, space: string, o: TeamOptions): Promise<TeamResult> {
  const info = root.readInfo();
  const target = info ? resolveTarget(o.creds ? { creds: o.creds } : {}) : undefined;
  const running = target !== undefined && info?.space === space && (await serverAnswers({ server: target.server, creds: target.creds }));
  const state = readTeamState(root);
  const plan = running
    ? await withSession(target, async (s) => planTeam(doc, space, await observe(s, doc, root), state))
    : planTeam(doc, space, await observe(undefined, doc, root), state);
  o.print?.(describePlan(plan));
  return { plan, done: [], dryRun: true };
}

/** `up -f` after the mesh is up: observe, plan, print the plan, carry it out. */
export async function converge(root: MeshRoot, doc: TeamDoc, space: string, o: TeamOptions): Promise<TeamResult> {
  const target = resolveTarget(o.creds ? { creds: o.creds, space } : { space });
  return withSession(target, async (s) => {
    const state = readTeamState(root) ?? { version: 1 as const, file: doc.file, space, seats: {} };
    const plan = planTeam(doc, space, await observe(s, doc, root), state);
    o.print?.(describePlan(plan));
    await confirmRetiring(plan, o);
    const next: TeamState = { ...state, file: doc.file, space: space, seats: state.space === space ? { ...state.seats } : {} };
    for (const name of plan.gone) delete next.seats[name];
    writeTeamState(root, next);
    const done = await apply(s, root, plan, next, o.print);
    return { plan, done, dryRun: false };
  });
}

/**
 * Retiring stops seats and revokes their credentials, and a file cut short declares fewer seats
 * than meant: the seats to retire are asked about at a terminal, and need --yes otherwise.
 * Declined or not confirmed: nothing of the plan is done.
 */
async function confirmRetiring(plan: Plan, o: TeamOptions): Promise<void> {
  const names = plan.steps.flatMap((s) => (s.kind === "retire" ? [s.name] : []));
  if (!names.length || o.yes) return;
  const seats = `${names.length === 1 ? "seat" : `${names.length} seats`} ${names.join(", ")}`;
  const what = `The plan retires ${seats} (\`cotal up -f\` started ${names.length === 1 ? "it" : "them"}; ${plan.file} no longer declares ${names.length === 1 ? "it" : "them"})`;
  if (!atTerminal()) {
    throw new UsageError(
      `${what}: retiring stops ${names.length === 1 ? "it" : "them"} and revokes ${names.length === 1 ? "its credential" : "their credentials"}, and needs --yes here (no terminal to ask at). Nothing was changed.`,
      {
        remedy: "Check that the file declares what you mean (a file cut short declares less), then run it again with --yes.",
      },
    );
  }
  if (!(await askYesNo(`${what}. Stop ${names.length === 1 ? "it" : "them"} and revoke ${names.length === 1 ? "its credential" : "their credentials"}?`)))
    throw new CommandFailedError(`Not confirmed: nothing was changed (${seats} keep${names.length === 1 ? "s" : ""} running).`, {
      remedy: "Declare the seats in the file to keep them, or run it again and answer y (or pass --yes).",
    });
}

/** What the mesh runs and the files on this host the plan would write (no session: the mesh does not run). */
async function observe(s: MeshSession | undefined, doc: TeamDoc, root: MeshRoot): Promise<Observed> {
  const localInstance = s ? localManager(s.target)?.instance : localManager({ root, space: doc.spec.space ?? root.readInfo()?.space ?? "default" })?.instance;
  const desired = desiredSeats(doc, localInstance);
  const agentFiles = new Map<string, string | undefined>();
  const missingDirs = new Set<string>();
  for (const d of desired) {
    if (d.agentFile) agentFiles.set(d.agentFile.path, existsSync(d.agentFile.path) ? readFileSync(d.agentFile.path, "utf8") : undefined);
    if (d.spec.manager === undefined && d.spec.cwd !== undefined && !statSync(d.spec.cwd, { throwIfNoEntry: false })?.isDirectory())
      missingDirs.add(d.spec.cwd);
  }
  const open = s ? root.readInfo()?.mode === "open" : doc.spec.server?.open === true;
  const local = { localInstance, agentFiles, missingDirs, budgetFile: readBudgetFile(root), open };
  if (!s) return { running: false, managers: undefined, unanswered: [], defaults: DEFAULT_CHANNEL_CONFIG, channels: new Map(), seats: [], ...local };
  const registry = await s.channels();
  const channels = new Map<string, ChannelConfig>();
  for (const name of Object.keys(doc.spec.channels ?? {})) {
    const c = await registry.get(name);
    if (c.configured) channels.set(name, c.config);
  }
  const answers = await seatsOfManagers(s, { all: false });
  return {
    running: true,
    managers: (await listManagers(s)).map((m) => m.instance),
    unanswered: answers.flatMap((a) => ("error" in a ? [a.instance] : [])),
    defaults: await registry.defaults(),
    channels,
    seats: answers.flatMap((a) => ("seats" in a ? a.seats : [])),
    ...local,
  };
}

function budgetFileOf(root: MeshRoot): string {
  return join(root.dir, "budget.json");
}

/** `.cotal/budget.json` as it is: undefined when absent, null when it is not a valid config. */
function readBudgetFile(root: MeshRoot): BudgetConfig | null | undefined {
  const file = budgetFileOf(root);
  if (!existsSync(file)) return undefined;
  try {
    const r = BudgetConfig.safeParse(JSON.parse(readFileSync(file, "utf8")));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

/** Carry the plan out, step by step; a step that fails is reported and the others still run. */
async function apply(s: MeshSession, root: MeshRoot, plan: Plan, state: TeamState, print?: (lines: string[]) => void): Promise<StepOutcome[]> {
  const done: StepOutcome[] = [];
  const report = (o: StepOutcome) => {
    done.push(o);
    print?.([`  ${o.ok ? "done" : "FAILED"}: ${o.step}: ${o.outcome}`]);
  };
  const caller = credsCaller(s.target.creds);
  const save = () => writeTeamState(root, state);
  const started: Array<{ seat: DesiredSeat; instance: string; uid: string }> = [];
  const local = localManager(s.target)?.instance;

  const stop = async (name: string, instance: string) => {
    const r = await callManager(s.nc, s.target.space, "stop", caller, { name }, { target: instance, timeoutMs: 30_000 });
    delete state.seats[name];
    save();
    return `${r.stopped ? "stopped" : "was not running"}, retired${r.revoked ? `, ${r.revoked} credential${r.revoked === 1 ? "" : "s"} revoked` : ""}`;
  };
  const start = async (d: DesiredSeat) => {
    const id = await callManager(s.nc, s.target.space, "spawn", caller, spawnArgs(d), { target: d.spec.manager ?? local ?? "one", timeoutMs: 30_000 });
    if (id.name !== d.name) {
      // Someone took the name between the plan and the spawn: the manager gave ours another; do not keep it.
      await callManager(s.nc, s.target.space, "stop", caller, { name: id.name }, { target: id.instance, timeoutMs: 30_000 });
      throw new Error(`the name ${d.name} was taken meanwhile (the manager named it ${id.name}; stopped that one)`);
    }
    if (d.spec.rights) {
      // A manager that does not know channelRights (an older Cotal) drops them: check what was minted, never run it wider.
      const minted = await callControl(s.nc, s.target.space, "grant", caller, { name: id.seat });
      const off = rightsNotHeld(d.spec.rights, minted);
      if (off.length) {
        await callManager(s.nc, s.target.space, "stop", caller, { name: id.name }, { target: id.instance, timeoutMs: 30_000 });
        throw new Error(
          `manager ${id.instance} did not mint the file's rights on ${off.join(", ")} (an older Cotal there?); stopped it. Update that manager and run \`cotal up -f\` again`,
        );
      }
    }
    state.seats[d.name] = { instance: id.instance, uid: id.uid, spec: d.spec };
    save();
    started.push({ seat: d, instance: id.instance, uid: id.uid });
    return `requested on ${id.instance}`;
  };

  for (const step of plan.steps) {
    const label = stepLabel(step);
    try {
      switch (step.kind) {
        case "mesh":
          break; // `cotal up` started it before the plan was made
        case "channel": {
          // Keys the file dropped go back to the default: set them absent rather than keep the old value.
          const config: Partial<ChannelConfig> = { description: undefined, instructions: undefined, ...step.config };
          await (await s.channels()).set(step.name, config);
          report({ step: label, ok: true, outcome: step.op === "create" ? "created" : "changed" });
          break;
        }
        case "agent-file":
          mkdirSync(dirname(step.path), { recursive: true, mode: 0o700 });
          writeFileSync(step.path, step.text, { mode: 0o600 });
          report({ step: label, ok: true, outcome: `wrote ${step.path}` });
          break;
        case "budgets":
          if (step.op === "write") {
            writeFileSync(budgetFileOf(root), JSON.stringify(step.caps, null, 2) + "\n", { mode: 0o600 });
            state.budgets = true;
          } else {
            rmSync(budgetFileOf(root), { force: true });
            state.budgets = false;
          }
          save();
          report({
            step: label,
            ok: true,
            outcome: step.op === "write" ? "wrote .cotal/budget.json (managers read it as it changes)" : "removed .cotal/budget.json",
          });
          break;
        case "retire":
          report({ step: label, ok: true, outcome: await stop(step.name, step.instance) });
          break;
        case "replace":
          await stop(step.seat.name, step.instance);
          report({ step: label, ok: true, outcome: `old one stopped; new one ${await start(step.seat)}` });
          break;
        case "start":
          report({ step: label, ok: true, outcome: await start(step.seat) });
          break;
      }
    } catch (err) {
      report({ step: label, ok: false, outcome: (err as Error).message });
    }
  }
  for (const o of await settleAll(s, started)) report(o);
  return done;
}

/** The spawn request of a declared seat (the same as `cotal spawn -d`'s), with a request id that says where it came from. */
function spawnArgs(d: DesiredSeat) {
  const x = d.spec;
  return {
    agent: x.agent as SeatAgent,
    name: d.name,
    channels: x.channels,
    ...(x.persona !== undefined ? { persona: x.persona } : {}),
    ...(x.role !== undefined ? { role: x.role } : {}),
    ...(x.terminal !== undefined ? { terminal: x.terminal as TerminalHost } : {}),
    ...(x.cwd !== undefined ? { cwd: x.cwd } : {}),
    ...(x.model !== undefined ? { model: x.model } : {}),
    ...(x.prompt !== undefined ? { prompt: x.prompt } : {}),
    ...(x.restarts !== undefined ? { restarts: x.restarts } : {}),
    ...(x.windowMs !== undefined ? { windowMs: x.windowMs } : {}),
    ...(x.noEvents ? { noEvents: true } : {}),
    ...(x.posture ? { posture: x.posture } : {}),
    ...(x.rights ? { channelRights: x.rights } : {}),
    requestId: `cotal-up-f:${randomUUID()}`,
  };
}

/** Wait until every started seat joined or failed (or the wait ran out: `uncertain`, kept). */
async function settleAll(s: MeshSession, started: Array<{ seat: DesiredSeat; instance: string; uid: string }>): Promise<StepOutcome[]> {
  const caller = credsCaller(s.target.creds);
  const pending = new Map(started.map((x) => [x.uid, x]));
  const out: StepOutcome[] = [];
  const deadline = Date.now() + JOIN_WAIT_MS;
  while (pending.size) {
    for (const instance of new Set([...pending.values()].map((p) => p.instance))) {
      const ps = await callManager(s.nc, s.target.space, "ps", caller, { all: true }, { target: instance, timeoutMs: 5_000 }).catch(() => undefined);
      for (const v of ps?.seats ?? []) {
        const p = pending.get(v.uid);
        if (!p) continue;
        const outcome = joinOutcome(v);
        if (!outcome) continue;
        pending.delete(v.uid);
        out.push({ step: `seat ${p.seat.name}`, ok: outcome.ok, outcome: outcome.text });
      }
    }
    if (!pending.size || Date.now() >= deadline) break;
    await sleep(250);
  }
  for (const p of pending.values())
    out.push({
      step: `seat ${p.seat.name}`,
      ok: false,
      outcome: `uncertain: not joined within ${JOIN_WAIT_MS / 1000} s (kept; see \`cotal ps\`, \`cotal logs\`)`,
    });
  return out;
}

function joinOutcome(v: SeatView): { ok: boolean; text: string } | undefined {
  if (v.state === "joined")
    return v.presence?.condition ? { ok: false, text: `joined, but ${v.presence.condition}` } : { ok: true, text: `joined on ${v.instance}` };
  if (["exited", "retired", "fenced"].includes(v.state)) return { ok: false, text: `failed: ${v.reason ?? v.state}` };
  return undefined;
}

function stepLabel(s: PlanStep): string {
  switch (s.kind) {
    case "mesh":
      return "mesh";
    case "channel":
      return `channel ${s.name}`;
    case "agent-file":
      return `persona ${s.persona}`;
    case "budgets":
      return "budgets";
    case "retire":
      return `seat ${s.name}`;
    case "replace":
    case "start":
      return `seat ${s.seat.name}`;
  }
}

/**
 * `cotal down`: stop the seats `up -f` started (on any manager; this host's manager would stop its
 * own anyway), each only while the seat holding its name is still the one it started. Returns what
 * it did, one line each; a mesh that does not answer leaves them to their managers.
 */
export async function stopTeamSeats(root: MeshRoot): Promise<string[]> {
  // Nothing here may keep `down` from stopping the mesh: a failure is said, and down goes on.
  return stopOwnSeats(root).catch((err: unknown) => [`seats started by \`cotal up -f\`: not stopped one by one (${(err as Error).message})`]);
}

async function stopOwnSeats(root: MeshRoot): Promise<string[]> {
  const state = readTeamState(root);
  if (!state || Object.keys(state.seats).length === 0) return [];
  let target: MeshTarget;
  try {
    target = resolveTarget({ space: state.space });
  } catch {
    return [];
  }
  if (!(await serverAnswers({ server: target.server, creds: target.creds }))) return [];
  const lines = await withSession(target, async (s) => {
    const caller = credsCaller(target.creds);
    const live = (await seatsOfManagers(s, { all: false })).flatMap((m) => ("seats" in m ? m.seats : []));
    const out: string[] = [];
    for (const [name, o] of Object.entries(state.seats)) {
      const v = live.find((x) => x.name === name && x.uid === o.uid);
      if (v) {
        try {
          await callManager(s.nc, target.space, "stop", caller, { name }, { target: v.instance, timeoutMs: 30_000 });
          out.push(`seat ${name}: stopped (started by \`cotal up -f\`)`);
        } catch (err) {
          out.push(`seat ${name}: could not be stopped: ${(err as Error).message}`);
          continue;
        }
      }
      delete state.seats[name];
    }
    return out;
  });
  writeTeamState(root, state);
  return lines;
}
