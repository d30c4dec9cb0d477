import { readdirSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { isAbsolute, join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { callControl, SERVICE_PRINCIPALS } from "../broker/index.js";
import type { RuntimeHost } from "../runtime/index.js";
import { DEFAULT_RUNTIME, loadAgentFile, personaDigests, runtimeNamed, type AgentFile } from "../runtimes/index.js";
import {
  principalId,
  type AgentFrontmatter,
  type MANAGER_COMMANDS,
  type PersonaInfo,
  type Principal,
  type SeatAgent,
  type SpawnGrant,
  type TableParsedArgs,
  type TerminalHost,
} from "../schemas/index.js";
import { SeatRefusedError, unsupervisable } from "./errors.js";
import {
  helperAgent,
  pinProblem,
  refuseOperatorOnly,
  refuseOverLimit,
  refuseUngranted,
  refuseUnpinned,
  refuseWider,
  refuseWithoutRight,
  seatScope,
  spawnLimitOf,
  widerThan,
  type SeatScope,
} from "./helpers.js";
import { redactHostPaths } from "./host-paths.js";
import type { ManagerOptions } from "./manager-options.js";
import { checkScript } from "./pty-host.js";
import { isOperator, type RunService } from "./runs.js";
import { refuseUnknownAgent, refuseWithoutAuth } from "./runtime-checks.js";
import type { SeatLog } from "./seat-log.js";
import { holdsName, projectSeat, type SeatRecord } from "./seat-table.js";
import { seatName } from "./seat-views.js";
import { admitSteered, steers } from "./steer.js";
import { TmuxServer } from "./tmux-host.js";
import type { StagedTranscript, TranscriptDesk } from "./transcript-carry.js";

/** A spawn with its agent named (the default runtime's when the request named none). */
export type SpawnRequest = TableParsedArgs<typeof MANAGER_COMMANDS, "spawn"> & { agent: string };

/** What admitting spawns needs of the manager. */
export interface AdmissionContext {
  /** Where a caller's grant is asked of the mesh service. */
  readonly nc: NatsConnection;
  readonly o: ManagerOptions;
  /** This manager's table: its seats count against its seat limit. */
  readonly seats: ReadonlyMap<string, SeatRecord>;
  /** The seat log, read as it stands now for a spawner's seat and helpers. */
  readonly seatLog: Pick<SeatLog, "replay">;
  /** Where each runtime this manager can start is (runtimes/). */
  readonly hosts: ReadonlyMap<string, RuntimeHost>;
  /** Carried transcripts staged here: a `--resume` spawn takes its claim. */
  readonly carry: Pick<TranscriptDesk, "take">;
  /** One-shot runs and their budgets, whose gates a helper or a steered spawn passes (absent until the manager serves). */
  runs(): RunService | undefined;
}

/** A helper admitted (docs/manager.md, Helpers): its agent, folder and agent file, and who it answers to. */
export interface AdmittedHelper {
  agent: SeatAgent;
  cwd: string;
  file: AgentFile;
  fm: AgentFrontmatter;
  spawnedBy: string;
  /** The spawner's incarnation, when it is a seat: the helper retires with that one. */
  spawnerUid?: string;
}

/** A spawn admitted: what the seat runs, where, and with which rights, decided before anything is claimed. */
export interface AdmittedSpawn {
  /** The request, its agent the helper's agent file's when it names one. */
  a: SpawnRequest;
  terminal: TerminalHost;
  cwd: string;
  /** A steering person who spawned it (steer.ts). */
  steerer: string | undefined;
  helper: AdmittedHelper | undefined;
  agentFile: AgentFile | undefined;
  /** The carried transcript a `--resume` spawn took. */
  carried: StagedTranscript | undefined;
  scope: SeatScope;
  model: string | undefined;
  /** The spawn right of the seat's own credential (never a helper's). */
  allowSpawn: string[];
  spawnLimit: number | undefined;
  /** The agent files its spawn right names, pinned by digest as they are now. */
  pinned: Record<string, string> | undefined;
  posture: SpawnRequest["posture"];
}

/**
 * Who may spawn what here (docs/manager.md): the operator anything, a steering person a persona
 * (steer.ts), an agent a helper within its grant (helpers.ts); the personas a caller may spawn; and
 * the spawner state a handover is judged by. Every refusal comes before anything is claimed.
 */
export class SpawnAdmission {
  constructor(private readonly c: AdmissionContext) {}

  /**
   * Admit a spawn before anything is claimed: a steering person's (a persona, the budget gates), an
   * agent's helper (its grant, limit and scope), then any caller's agent and terminal host, folder,
   * this manager's seat limit, agent file, carried transcript and posture. Refused, naming why.
   */
  async admit(asked: SpawnRequest, caller: Principal): Promise<AdmittedSpawn> {
    // A person with the steer right spawns a persona as the operator would (steer.ts); anyone else
    // but the operator spawns a helper: within its grant, its limit and the budget gates.
    const steerer = isOperator(caller) ? undefined : await this.steererOf(caller);
    if (steerer) await admitSteered(asked, steerer, this.c.runs());
    const helper = isOperator(caller) || steerer ? undefined : await this.admitHelper(asked, caller);
    const a = helper ? { ...asked, agent: helper.agent } : asked;
    // Agent CLIs run in a terminal the manager owns; the echo agent is a plain process.
    const terminal = a.terminal ?? (runtimeNamed(a.agent) ? "tmux" : "process");
    await this.admitRuntime(a.agent, terminal);
    const cwd = helper?.cwd ?? a.cwd ?? (steerer ? (this.c.o.folder ?? process.cwd()) : process.cwd());
    if (!isAbsolute(cwd) || !statSync(cwd, { throwIfNoEntry: false })?.isDirectory()) {
      throw new SeatRefusedError(
        "bad-cwd",
        `The working directory ${JSON.stringify(cwd)} is not an absolute path to a folder on ${hostname()}; nothing was started.`,
        "Pass --cwd with a folder that exists on the manager's host.",
      );
    }
    const mine = [...this.c.seats.values()].filter((r) => r.manager === this.c.o.instance && holdsName(r)).length;
    if (mine >= (this.c.o.maxSeats ?? 32)) {
      throw new SeatRefusedError(
        "seat-limit",
        `Manager ${this.c.o.instance} already runs ${mine} seats (its limit); nothing was started.`,
        "Stop a seat (`cotal stop --name N`), spawn on another manager (`--on`), or start this one with a higher --max-seats.",
      );
    }
    // An agent file is read on this host, before anything is claimed: a missing or invalid one refuses the spawn.
    const agentFile = helper?.file ?? (a.persona ? loadAgentFile(cwd, a.persona) : undefined);
    const fm = agentFile?.frontmatter;
    const carried = this.takeCarried(a);
    const scope = seatScope(a, fm);
    const model = a.model ?? fm?.model;
    // The spawn right of the seat's own credential: the operator's spawn or its agent file (never a helper's).
    const allowSpawn = helper ? [] : (a.allowSpawn ?? fm?.allowSpawn ?? []);
    const spawnLimit = allowSpawn.length ? (a.spawnLimit ?? fm?.spawnLimit) : undefined;
    // The spawn right pins its personas' agent files as they are now, where its helpers' are read.
    const pinned = allowSpawn.length ? personaDigests(cwd, allowSpawn) : undefined;
    const posture = a.posture ?? fm?.posture;
    if (posture === "supervised" && !runtimeNamed(a.agent)?.capabilities.approvals) throw unsupervisable(a.agent);
    return { a, terminal, cwd, steerer, helper, agentFile, carried, scope, model, allowSpawn, spawnLimit, pinned, posture };
  }

  /** `who`'s principal id when it is a person with the steer right (docs/security.md, People), else undefined. */
  async steererOf(who: Principal): Promise<string | undefined> {
    return steers(await this.grantOf(who)) ? principalId(who) : undefined;
  }

  /** What the mesh service minted `who` with (its channels, role and spawn right). */
  grantOf(who: Principal): Promise<SpawnGrant> {
    return callControl(this.c.nc, this.c.o.space, "grant", this.c.o.caller ?? SERVICE_PRINCIPALS.cli, { name: principalId(who) });
  }

  /**
   * The seat log as it stands now, for a spawner: its own seat (on any manager) and every seat that
   * answers to it, each holding its name. Read from the log rather than this manager's table, which
   * knows other managers' seats only as they were at its start.
   */
  async spawnerState(id: string): Promise<{ spawner?: SeatRecord; helpers: SeatRecord[] }> {
    const all = [...(await this.c.seatLog.replay()).values()].map(projectSeat).filter((r): r is SeatRecord => !!r && holdsName(r));
    const spawner = all.find((r) => r.seat === id);
    return { ...(spawner ? { spawner } : {}), helpers: all.filter((r) => r.spawnedBy === id) };
  }

  /**
   * Where a spawner's helpers work and read their agent files: beside it when it is a seat of this
   * manager, else the manager's folder. A spawner that is another manager's seat spawns there.
   */
  placeOf(id: string, spawner: SeatRecord | undefined): string {
    if (spawner && spawner.manager !== this.c.o.instance)
      throw new SeatRefusedError(
        "not-your-manager",
        `${id} is a seat of manager ${spawner.manager ?? "unknown"}: its helpers run there, beside it (so they retire with it); nothing was done here.`,
        `Call manager ${spawner.manager ?? "<instance>"} (cotal_spawn does, from a managed seat).`,
      );
    return spawner?.spec.cwd ?? this.c.o.folder ?? process.cwd();
  }

  /** A spawner that is a seat with a persona: its agent file, to compare its helpers' tools with. */
  spawnerFile(spawner: SeatRecord | undefined): AgentFrontmatter | undefined {
    return spawner?.persona ? loadAgentFile(spawner.spec.cwd ?? this.c.o.folder ?? process.cwd(), spawner.persona).frontmatter : undefined;
  }

  /**
   * Admit a helper an agent asks for (docs/manager.md, Helpers), refusing before anything is
   * claimed: operator-only arguments; a persona its credential does not name (the broker already
   * refused a credential without the spawn right); its seat limit; a helper wider than it; the
   * budget gates.
   */
  private async admitHelper(
    a: SpawnRequest,
    caller: Principal,
  ): Promise<{ agent: SeatAgent; cwd: string; file: AgentFile; fm: AgentFrontmatter; spawnedBy: string; spawnerUid?: string }> {
    const id = principalId(caller);
    refuseOperatorOnly(id, a);
    const grant = await this.grantOf(caller);
    refuseUngranted(id, grant, a.persona);
    const { spawner, helpers } = await this.spawnerState(id);
    const cwd = this.placeOf(id, spawner);
    refuseOverLimit(
      id,
      grant,
      helpers.map((h) => seatName(h.seat)),
    );
    const file = loadAgentFile(cwd, a.persona);
    refuseUnpinned(id, grant, a.persona, file.digest);
    const fm = file.frontmatter;
    const agent = helperAgent(a.agent, fm, a.persona);
    refuseWider(id, a.persona, widerThan({ ...seatScope(a, fm), agent, fm }, grant, this.spawnerFile(spawner)));
    const refused = await this.c.runs()?.spawnGate(agent !== "echo");
    if (refused) {
      this.c.o.log.warn({ spawner: id, cap: refused.cap, spentUsd: refused.spentUsd }, "helper refused by a budget gate");
      throw new SeatRefusedError("budget", refused.message, "Wait for the next UTC day, or ask the operator to raise the cap (`cotal budget`, docs/runs.md).");
    }
    return { agent, cwd, file, fm, spawnedBy: id, ...(spawner ? { spawnerUid: spawner.uid } : {}) };
  }

  /**
   * The personas a spawner may spawn, as its helpers' folder holds them: each agent file's name,
   * runtime, role and channels, or why it cannot be spawned (missing, invalid, wider than the
   * spawner). The operator may spawn any: every agent file of the manager's folder.
   */
  async personas(caller: Principal) {
    const id = principalId(caller);
    const asked = isOperator(caller) ? undefined : await this.grantOf(caller);
    // A steering person lists the personas as the operator does: every agent file of the manager's folder.
    const grant = asked && steers(asked) ? undefined : asked;
    if (grant) refuseWithoutRight(id, grant);
    const { spawner, helpers } = await this.spawnerState(id);
    const cwd = this.placeOf(id, spawner);
    const spawnerFile = grant ? this.spawnerFile(spawner) : undefined;
    const names = grant?.allowSpawn ?? agentFilesIn(cwd);
    const hide = (t: string) => (grant ? redactHostPaths(t, { stateDir: this.c.o.stateDir, cwd }) : t);
    const personas = names.map((persona): PersonaInfo => {
      try {
        const file = loadAgentFile(cwd, persona);
        const fm = file.frontmatter;
        const runtime = fm.runtime ?? DEFAULT_RUNTIME.name;
        const unpinned = grant ? pinProblem(grant, persona, file.digest) : undefined;
        const wider = grant ? widerThan({ ...seatScope({ channels: [] }, fm), agent: runtime as SeatAgent, fm }, grant, spawnerFile) : [];
        return {
          persona,
          name: fm.name,
          runtime,
          ...(fm.role ? { role: fm.role } : {}),
          channels: fm.subscribe,
          ...(fm.description ? { description: fm.description.slice(0, 1000) } : {}),
          ...(unpinned ? { problem: unpinned } : wider.length ? { problem: `a helper of it would be wider than you: ${wider.join("; ")}` } : {}),
        };
      } catch (err) {
        return { persona, name: persona, runtime: "-", channels: [], problem: hide((err as Error).message) };
      }
    });
    return { instance: this.c.o.instance, personas, limit: grant ? spawnLimitOf(grant) : (this.c.o.maxSeats ?? 32), held: helpers.length };
  }

  /** A `--resume` spawn's claim, taken once (before anything is claimed); refused for echo seats. */
  private takeCarried(a: SpawnRequest): StagedTranscript | undefined {
    if (a.resume === undefined) return undefined;
    const adapter = runtimeNamed(a.agent);
    if (!adapter?.capabilities.carry)
      throw new SeatRefusedError(
        "resume-unavailable",
        `${adapter ? `${adapter.label} seats cannot resume a carried session (docs/runtimes.md)` : "Only agent CLI seats resume a carried session"}; nothing was started.`,
        `Leave out --resume, or spawn a ${DEFAULT_RUNTIME.name} seat.`,
      );
    return this.c.carry.take(a.claim, a.resume);
  }

  /** Refuse, before anything runs, an agent or terminal host this manager cannot start. */
  private async admitRuntime(agent: SeatAgent, terminal: string): Promise<void> {
    refuseUnknownAgent(agent);
    if (agent === "echo" && terminal !== "process") {
      throw new SeatRefusedError(
        "terminal-unavailable",
        `The echo agent runs headless (terminal process), not ${terminal}; nothing was started.`,
        "Spawn echo seats with --terminal process (the default).",
      );
    }
    const adapter = runtimeNamed(agent);
    if (adapter) {
      if (terminal !== "tmux" && terminal !== "pty")
        throw new SeatRefusedError(
          "terminal-unavailable",
          `${adapter.label} seats run in a terminal the manager owns (tmux or pty), not ${terminal}; nothing was started.`,
          `Use --terminal tmux (the default for ${adapter.name}) or --terminal pty.`,
        );
      const host = this.c.hosts.get(adapter.name);
      if (!host)
        throw new SeatRefusedError(
          "agent-unavailable",
          `Manager ${this.c.o.instance} cannot start ${adapter.label} seats (no ${adapter.command} executable or plugin tree configured); nothing was started.`,
          adapter.installHint,
        );
      refuseWithoutAuth(this.c.o.instance, adapter, host, "seat");
      if (terminal === "tmux") await TmuxServer.check();
      else await checkScript();
    }
  }
}

/** The agent files (`.cotal/agents/*.md`) of a folder, by persona name. */
function agentFilesIn(cwd: string): string[] {
  try {
    return readdirSync(join(cwd, ".cotal", "agents"))
      .filter((f) => f.endsWith(".md"))
      .map((f) => f.slice(0, -3))
      .sort();
  } catch {
    return [];
  }
}
