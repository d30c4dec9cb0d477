// The plan of `cotal up -f` (docs/team-file.md): what the file declares, against what the mesh runs
// and what `up -f` started before (.cotal/team.json), as steps — channels to create or change,
// agent files and budget caps to write, seats to retire, replace or start. Pure: observing the mesh
// and carrying the steps out is cli/team-file/team-apply.ts.
import { join, resolve } from "node:path";
import {
  formatDuration,
  parseDuration,
  type BudgetConfig,
  type ChannelConfig,
  type ChannelRights,
  type SeatView,
  type TeamAudience,
  type TeamChannel,
} from "../../schemas/index.js";
import { audienceHas, seatJoins, seatNames, TeamFileError, type TeamDoc, type TeamFileProblem } from "./team-file.js";
import type { SeatSpec, TeamState } from "./team-state.js";

/** A seat the file declares (one of `count`), with the spawn it needs. */
export interface DesiredSeat {
  name: string;
  /** The key that declares it (`seats.<key>`), for problems. */
  key: string;
  spec: SeatSpec;
  /** A persona of the file: the agent file to write under the seat's cwd first (this host's seats only). */
  agentFile?: { path: string; text: string };
}

/** What `up -f` found: the mesh (when it runs) and the files on this host it would write. */
export interface Observed {
  /** The mesh answers; when not, the plan is against an empty mesh and starts it first. */
  running: boolean;
  /** It runs (or would start) open: no credentials, so no rights the broker could enforce. */
  open?: boolean;
  /** This host's manager (the one `cotal up` starts), when known. */
  localInstance: string | undefined;
  /** Managers that heartbeat (undefined when the mesh does not run). */
  managers: string[] | undefined;
  /** Managers that did not answer `ps`: what they run is unknown. */
  unanswered: string[];
  /** Space-wide channel defaults. */
  defaults: ChannelConfig;
  /** The declared channels as the registry has them (absent: not configured). */
  channels: Map<string, ChannelConfig>;
  /** Seats holding a name, on every manager that answered. */
  seats: SeatView[];
  /** Current text of each agent file the plan would write (undefined: none). */
  agentFiles: Map<string, string | undefined>;
  /** Seat folders (cwd) on this host that do not exist. */
  missingDirs: Set<string>;
  /** `.cotal/budget.json` as it is (undefined: none; null: unreadable). */
  budgetFile: BudgetConfig | null | undefined;
}

export type PlanStep =
  | { kind: "mesh" }
  | { kind: "channel"; name: string; op: "create" | "change"; config: ChannelConfig; changes: string[] }
  | { kind: "agent-file"; path: string; text: string; op: "write" | "replace"; persona: string }
  | { kind: "budgets"; op: "write" | "remove"; caps: BudgetConfig | undefined; changes: string[] }
  | { kind: "retire"; name: string; instance: string; uid: string; why: string }
  | { kind: "replace"; seat: DesiredSeat; instance: string; uid: string; changes: string[] }
  | { kind: "start"; seat: DesiredSeat };

export interface Plan {
  space: string;
  /** This host's manager, where seats without \`manager\` run (undefined: not known yet). */
  localInstance: string | undefined;
  file: string;
  steps: PlanStep[];
  /** Declared seats and channels that are as declared. */
  unchanged: { seats: string[]; channels: string[] };
  /** Seats `up -f` started that no longer run (retired by a crash loop, `cotal stop`, `cotal down`): forgotten. */
  gone: string[];
}

/** The seats the file declares, `count` expanded, each with the spawn request it needs. */
export function desiredSeats(doc: TeamDoc, localInstance: string | undefined): DesiredSeat[] {
  return Object.entries(doc.spec.seats ?? {}).flatMap(([key, raw]) => {
    const seat = raw ?? {};
    // The file may name this host's manager by its instance: it is the same seat as naming none.
    const manager = seat.manager !== undefined && seat.manager !== localInstance ? seat.manager : undefined;
    const cwd = seat.cwd !== undefined ? resolve(doc.dir, seat.cwd) : manager === undefined ? doc.dir : undefined;
    const persona = seat.persona !== undefined ? doc.personas.get(seat.persona) : undefined;
    const spec: SeatSpec = {
      agent: seat.agent ?? "claude",
      ...(seat.persona !== undefined ? { persona: seat.persona } : {}),
      ...(persona ? { personaDigest: persona.digest } : {}),
      ...(seat.role !== undefined ? { role: seat.role } : {}),
      ...(seat.terminal !== undefined ? { terminal: seat.terminal } : {}),
      ...(manager !== undefined ? { manager } : {}),
      channels: [...new Set(seat.channels ?? [])].sort(),
      ...(cwd !== undefined ? { cwd } : {}),
      ...(seat.model !== undefined ? { model: seat.model } : {}),
      ...(seat.prompt !== undefined ? { prompt: seat.prompt } : {}),
      ...(seat.restart?.max !== undefined ? { restarts: seat.restart.max } : {}),
      ...(seat.restart?.window !== undefined ? { windowMs: parseDuration(seat.restart.window) } : {}),
      ...(seat.events === false ? { noEvents: true } : {}),
      ...(seat.posture === "supervised" ? { posture: "supervised" as const } : {}),
    };
    const rights = seatRights(doc, key);
    if (rights) spec.rights = rights;
    const agentFile =
      persona && seat.persona !== undefined && manager === undefined && cwd !== undefined
        ? { path: join(cwd, ".cotal", "agents", `${seat.persona}.md`), text: persona.text }
        : undefined;
    return seatNames(key, seat.count ?? 1).map((name) => ({ name, key, spec, ...(agentFile ? { agentFile } : {}) }));
  });
}

/**
 * A seat's rights on the channels with a `read` or `write` list (an absent list: the seats that join
 * it), for the spawn's channelRights; undefined when they are what joining gives. A seat without a
 * persona reads and posts where it joins, so only the channels where the lists say otherwise are
 * named; a seat with one gets every such channel decided, so its agent file's allow-lists cannot
 * widen what the file declares (a persona on another host cannot be read here).
 */
export function seatRights(doc: TeamDoc, key: string): ChannelRights | undefined {
  const seat = doc.spec.seats?.[key] ?? {};
  const joins = new Set(seatJoins(doc.spec, doc.personas, key));
  const rights: ChannelRights = { over: [], read: [], write: [] };
  for (const [name, c] of Object.entries(doc.spec.channels ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
    if (c?.read === undefined && c?.write === undefined) continue;
    const may = (list: TeamAudience | undefined) => (list === undefined ? joins.has(name) : audienceHas(list, key, seat.persona));
    const read = may(c.read);
    const write = may(c.write);
    if (seat.persona === undefined && read === joins.has(name) && write === joins.has(name)) continue;
    rights.over.push(name);
    if (read) rights.read.push(name);
    if (write) rights.write.push(name);
  }
  return rights.over.length ? rights : undefined;
}

/** The channels of `r` where what a credential was minted with (the mesh's `grant`) differs from `r`. */
export function rightsNotHeld(r: ChannelRights, minted: { allowSubscribe: string[]; allowPublish: string[] }): string[] {
  return r.over.filter((c) => r.read.includes(c) !== minted.allowSubscribe.includes(c) || r.write.includes(c) !== minted.allowPublish.includes(c));
}

/** Rights for people: `ops read-only, audit write-only`. */
export function describeRights(r: ChannelRights): string {
  return r.over
    .map((c) => {
      const read = r.read.includes(c);
      const write = r.write.includes(c);
      return `${c} ${read && write ? "read-write" : read ? "read-only" : write ? "write-only" : "no access"}`;
    })
    .join(", ");
}

/** The settings the file gives a channel; what it leaves out is the space default (so a removed key goes back to it). */
export function channelSettings(c: TeamChannel | null, defaults: ChannelConfig): ChannelConfig {
  return {
    replay: c?.replay ?? defaults.replay,
    windowSeconds: c?.window !== undefined ? Math.round(parseDuration(c.window) / 1000) : defaults.windowSeconds,
    class: c?.class ?? defaults.class,
    ...(c?.description !== undefined ? { description: c.description } : defaults.description !== undefined ? { description: defaults.description } : {}),
    ...(c?.instructions !== undefined ? { instructions: c.instructions } : defaults.instructions !== undefined ? { instructions: defaults.instructions } : {}),
  };
}

/** The caps the file sets, as `.cotal/budget.json` holds them (undefined: the file sets none). */
export function budgetCapsOf(doc: TeamDoc): BudgetConfig | undefined {
  const b = doc.spec.budgets;
  if (!b) return undefined;
  return { ...(b.daily !== undefined ? { dailyUsd: b.daily } : {}), ...(b.task !== undefined ? { taskUsd: b.task } : {}) };
}

/**
 * The steps from what runs to what the file declares. A declared seat whose name is held by a seat
 * `up -f` did not start, a manager that is not running or did not answer, a persona for a seat on
 * another host, and a missing seat folder are refused before anything is done, each at its line.
 */
export function planTeam(doc: TeamDoc, space: string, seen: Observed, state: TeamState | undefined): Plan {
  const problems: TeamFileProblem[] = [];
  const steps: PlanStep[] = [];
  const unchanged = { seats: [] as string[], channels: [] as string[] };
  if (!seen.running) steps.push({ kind: "mesh" });
  if (seen.open)
    for (const [name, c] of Object.entries(doc.spec.channels ?? {}))
      for (const key of ["read", "write"] as const)
        if (c?.[key] !== undefined)
          problems.push(
            doc.at(
              ["channels", name, key],
              "the mesh is open (no authentication): the broker enforces no one's rights, so who may read and write cannot be; start it with static auth (drop --open or server.open), or remove the list",
            ),
          );

  for (const [name, c] of Object.entries(doc.spec.channels ?? {})) {
    const want = channelSettings(c, seen.defaults);
    const has = seen.channels.get(name);
    const changes = has ? differences(has, want, { windowSeconds: (s) => formatDuration(Number(s) * 1000) }) : describeChannel(want);
    if (!has) steps.push({ kind: "channel", name, op: "create", config: want, changes });
    else if (changes.length) steps.push({ kind: "channel", name, op: "change", config: want, changes });
    else unchanged.channels.push(name);
  }

  const caps = budgetCapsOf(doc);
  if (caps && (seen.budgetFile === undefined || seen.budgetFile === null || !sameJson(seen.budgetFile, caps)))
    steps.push({ kind: "budgets", op: "write", caps, changes: differences(seen.budgetFile ?? {}, caps, { dailyUsd: usd, taskUsd: usd }) });
  else if (!caps && state?.budgets && seen.budgetFile !== undefined) steps.push({ kind: "budgets", op: "remove", caps: undefined, changes: [] });

  const desired = desiredSeats(doc, seen.localInstance);
  const owned = state && state.space === space ? state.seats : {};
  const live = new Map(seen.seats.map((v) => [v.name, v]));
  const isOwned = (v: SeatView) => owned[v.name]?.uid === v.uid;
  const unknownOn = new Set(seen.unanswered);
  const writes = new Map<string, { text: string; persona: string }>();
  const retires: PlanStep[] = [];
  const starts: PlanStep[] = [];

  for (const d of desired) {
    const seatPath = ["seats", d.key];
    if (d.spec.manager !== undefined && seen.managers && !seen.managers.includes(d.spec.manager))
      problems.push(
        doc.at(
          [...seatPath, "manager"],
          `manager ${d.spec.manager} is not running in space ${space} (running: ${seen.managers.join(", ") || "none"}); start it there (\`cotal manager\`) or name another`,
        ),
      );
    if (d.spec.manager !== undefined && unknownOn.has(d.spec.manager))
      problems.push(doc.at([...seatPath, "manager"], `manager ${d.spec.manager} did not answer: what it runs cannot be told; try again`));
    if (d.spec.persona !== undefined && doc.personas.has(d.spec.persona) && d.spec.manager !== undefined)
      problems.push(
        doc.at(
          [...seatPath, "persona"],
          `persona ${d.spec.persona} is declared in this file, but the seat runs on manager ${d.spec.manager}, whose host has its own agent files; run it on this host, or name a persona that host holds (not declared here)`,
        ),
      );
    if (d.spec.manager === undefined && d.spec.cwd !== undefined && seen.missingDirs.has(d.spec.cwd))
      problems.push(doc.at([...seatPath, doc.spec.seats?.[d.key]?.cwd !== undefined ? "cwd" : "agent"], `the seat's folder ${d.spec.cwd} does not exist`));
    if (d.agentFile && seen.agentFiles.get(d.agentFile.path) !== d.agentFile.text)
      writes.set(d.agentFile.path, { text: d.agentFile.text, persona: d.spec.persona! });

    const v = live.get(d.name);
    if (!v) {
      starts.push({ kind: "start", seat: d });
      continue;
    }
    if (!isOwned(v)) {
      problems.push(
        doc.at(
          seatPath,
          `a seat named ${d.name} runs on manager ${v.instance} that \`cotal up -f\` did not start; stop it (\`cotal stop --name ${d.name}\`) or rename the seat here`,
        ),
      );
      continue;
    }
    const was = owned[d.name]!;
    const changes = differences(
      was.spec,
      d.spec,
      { rights: (r) => `[${describeRights(r as ChannelRights)}]` },
      { personaDigest: `persona ${d.spec.persona ?? ""} text changed`, prompt: "prompt changed" },
    );
    if (changes.length) starts.push({ kind: "replace", seat: d, instance: v.instance, uid: v.uid, changes });
    else unchanged.seats.push(d.name);
  }

  const declared = new Set(desired.map((d) => d.name));
  const gone: string[] = [];
  for (const [name, o] of Object.entries(owned)) {
    if (declared.has(name)) continue;
    const v = live.get(name);
    if (v && v.uid === o.uid) retires.push({ kind: "retire", name, instance: v.instance, uid: v.uid, why: "no longer declared" });
    else if (unknownOn.has(o.instance))
      problems.push(doc.at(["seats"], `manager ${o.instance} did not answer: seat ${name}, which it runs, cannot be retired; try again`));
    else gone.push(name);
  }
  // A seat `up -f` started that no longer holds its name is forgotten, whether or not it is declared.
  for (const [name, o] of Object.entries(owned)) if (declared.has(name) && live.get(name)?.uid !== o.uid && !unknownOn.has(o.instance)) gone.push(name);

  if (problems.length) throw new TeamFileError(doc.file, problems);
  for (const [path, w] of writes)
    steps.push({ kind: "agent-file", path, text: w.text, persona: w.persona, op: seen.agentFiles.get(path) === undefined ? "write" : "replace" });
  return { space, localInstance: seen.localInstance, file: doc.file, steps: [...steps, ...retires, ...starts], unchanged, gone: gone.sort() };
}

/** Each key whose value differs, as `key old → new` (values shown by `show`, else as text), or as `say` words it. */
function differences<T extends object>(
  was: T,
  now: T,
  show: Partial<Record<string, (v: unknown) => string>> = {},
  say: Partial<Record<string, string>> = {},
): string[] {
  const keys = [...new Set([...Object.keys(was), ...Object.keys(now)])];
  return keys.flatMap((k) => {
    const a = (was as Record<string, unknown>)[k];
    const b = (now as Record<string, unknown>)[k];
    if (sameJson(a, b)) return [];
    if (say[k] !== undefined) return [say[k]];
    const fmt = (v: unknown) => (v === undefined ? "(none)" : (show[k]?.(v) ?? (Array.isArray(v) ? `[${v.join(", ")}]` : String(v))));
    return [`${k} ${fmt(a)} → ${fmt(b)}`];
  });
}

function describeChannel(c: ChannelConfig): string[] {
  return [c.class, c.replay ? `replay ${formatDuration(c.windowSeconds * 1000)}` : "no replay", ...(c.description ? [JSON.stringify(c.description)] : [])];
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

const usd = (v: unknown) => `$${Number(v).toFixed(2)}`;

/** Where a seat runs, for people. */
function onWhich(p: Plan, spec: SeatSpec, instance?: string): string {
  const where = instance ?? spec.manager ?? p.localInstance;
  return where === undefined ? "this host's manager" : where === p.localInstance ? `${where} (this host)` : where;
}

/** The plan for people: one line per step, `+` create, `~` change, `-` retire; or that there is nothing to do. */
export function describePlan(p: Plan): string[] {
  const lines = p.steps.map((s) => {
    switch (s.kind) {
      case "mesh":
        return `  + mesh: start it (it is not running; the rest is planned against an empty mesh)`;
      case "channel":
        return s.op === "create" ? `  + channel ${s.name}: create (${s.changes.join(", ")})` : `  ~ channel ${s.name}: ${s.changes.join(", ")}`;
      case "agent-file":
        return `  ${s.op === "write" ? "+" : "~"} persona ${s.persona}: ${s.op} ${s.path}`;
      case "budgets":
        return s.op === "write"
          ? `  ~ budgets: ${s.changes.join(", ")} (.cotal/budget.json)`
          : `  - budgets: remove .cotal/budget.json (the file sets none now)`;
      case "retire":
        return `  - seat ${s.name}: retire on ${s.instance} (${s.why})`;
      case "replace":
        return `  ~ seat ${s.seat.name}: replace on ${onWhich(p, s.seat.spec, s.instance)} (${s.changes.join(", ")})`;
      case "start":
        return `  + seat ${s.seat.name}: start ${s.seat.spec.agent}${s.seat.spec.channels.length ? ` on ${s.seat.spec.channels.join(", ")}` : ""}, on ${onWhich(p, s.seat.spec)}${s.seat.spec.rights ? `; ${describeRights(s.seat.spec.rights)}` : ""}`;
    }
  });
  const same = [
    ...(p.unchanged.channels.length ? [`channels ${p.unchanged.channels.join(", ")}`] : []),
    ...(p.unchanged.seats.length ? [`seats ${p.unchanged.seats.join(", ")}`] : []),
  ];
  const head = `plan for space ${p.space} (${p.file}):`;
  if (!lines.length) return [`${head} nothing to do${same.length ? ` (${same.join("; ")} as declared)` : ""}`];
  return [head, ...lines, ...(same.length ? [`  = as declared: ${same.join("; ")}`] : [])];
}
