import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { credsClaims, type Logger } from "../../broker/index.js";
import { seatScreen } from "../../manager/index.js";
import { patterns, PrincipalToken, SeatAgent, type Principal, type SeatView } from "../../schemas/index.js";
import { writeRoute, type ReadRoute, type StreamRoute, type WriteRoute } from "../../web/index.js";
import { CommandFailedError } from "../terminal/errors.js";
import type { LocalManager } from "../mesh-host/local-manager.js";
import { callManager } from "../mesh-client/manager-calls.js";
import { loadTeamFile } from "../team-file/team-file.js";
import { RUNTIMES } from "../../runtimes/index.js";

/** How often the terminal panel's screen is read, ms. */
const SCREEN_EVERY_MS = 1_000;

/** POST /api/spawn: a persona of the manager's folder, or a seat of cotal.yaml that names one. */
export const SpawnBody = z
  .strictObject({ persona: PrincipalToken.optional(), seat: PrincipalToken.optional(), name: PrincipalToken.optional(), runtime: SeatAgent.optional() })
  .refine((b) => (b.persona === undefined) !== (b.seat === undefined), { message: "give exactly one of persona or seat", path: ["persona"] });
/** POST /api/stop, /api/restart. */
export const SeatBody = z.strictObject({ name: PrincipalToken });

/** What steering needs: the person's connection, who they are, the managers, this host's, and cotal.yaml's seats. */
export interface SteerDeps {
  nc: NatsConnection;
  space: string;
  me: Principal;
  /** The managers the dashboard sees now (their heartbeats). */
  managers: () => string[];
  /** This host's manager (spawns go to it; its seats' terminals can be read here). */
  local: LocalManager | undefined;
  /** The project folder, where cotal.yaml is. */
  project: string | undefined;
  /** The person's credential carries the steer right (the terminal is read here, so it checks this itself). */
  steer: boolean;
  log: Logger;
}

/** Whether the person's credential carries the steer right (its permissions name the manager rail's spawn as it). */
export function credentialSteers(creds: string | undefined, space: string, me: Principal): boolean {
  if (!creds) return false;
  const claims = credsClaims(readFileSync(creds));
  return !!claims?.pubAllow.includes(patterns.callAsAnyTarget(space, "manager", "spawn", me));
}

/**
 * A seat of cotal.yaml the Spawn form offers: those that name a persona, spawned by it; none when
 * the file limits who reads or writes a channel (that is `cotal up -f`'s, as the operator).
 */
interface TeamSeatChoice {
  seat: string;
  persona: string;
  agent?: string | undefined;
  role?: string | undefined;
  model?: string | undefined;
  channels?: string[] | undefined;
}

function teamSeats(project: string | undefined): TeamSeatChoice[] {
  const file = project ? resolve(project, "cotal.yaml") : undefined;
  if (!file || !existsSync(file)) return [];
  const doc = loadTeamFile(file);
  // Channel read/write lists are the operator's to apply (`cotal up -f` passes them as channelRights,
  // which only the operator may): a seat spawned here without them could read or post wider.
  if (Object.values(doc.spec.channels ?? {}).some((c) => c?.read !== undefined || c?.write !== undefined)) return [];
  return Object.entries(doc.spec.seats ?? {}).flatMap(([seat, s]) =>
    s?.persona ? [{ seat, persona: s.persona, agent: s.agent, role: s.role, model: s.model, channels: s.channels }] : [],
  );
}

/** The seat named `name` on any manager the dashboard sees, as the person's `ps` shows it. */
async function findSeat(d: SteerDeps, name: string): Promise<SeatView> {
  for (const instance of d.managers()) {
    const ps = await callManager(d.nc, d.space, "ps", d.me, { all: false }, { target: instance, timeoutMs: 3_000 }).catch(() => undefined);
    const found = ps?.seats.find((v) => v.name === name && v.instance === instance);
    if (found) return found;
  }
  throw new CommandFailedError(`No manager runs a seat named ${name}.`, { remedy: "The roster and `cotal ps` show the seats that run." });
}

/** The steer routes (docs/web.md, Steering): each a call on the manager rail as the person, who the manager checks. */
export function steerRoutes(d: SteerDeps): Record<string, WriteRoute> {
  const target = () => d.local?.instance ?? "one";
  const spawn = async (b: z.infer<typeof SpawnBody>) => {
    const team = b.seat ? teamSeats(d.project).find((t) => t.seat === b.seat) : undefined;
    if (b.seat && !team) throw new CommandFailedError(`cotal.yaml has no seat ${b.seat} that names a persona.`, { remedy: "Pick one the Spawn form lists." });
    const persona = team?.persona ?? b.persona!;
    // The persona's own runtime unless one is chosen (the manager's spawn defaults to claude).
    let agent = b.runtime ?? team?.agent;
    if (!agent) {
      const listed = await callManager(d.nc, d.space, "personas", d.me, {}, { target: target(), timeoutMs: 10_000 });
      agent = listed.personas.find((p) => p.persona === persona)?.runtime;
    }
    const parsedAgent = SeatAgent.safeParse(agent);
    const r = await callManager(
      d.nc,
      d.space,
      "spawn",
      d.me,
      {
        persona,
        ...(parsedAgent.success ? { agent: parsedAgent.data } : {}),
        ...((b.name ?? team?.seat) ? { name: b.name ?? team!.seat } : {}),
        ...(team?.role ? { role: team.role } : {}),
        ...(team?.model ? { model: team.model } : {}),
        ...(team?.channels ? { channels: team.channels } : {}),
      },
      { target: target(), timeoutMs: 60_000 },
    );
    return { ...r, text: `spawned ${r.name} from persona ${persona} on manager ${r.instance} (${r.state})` };
  };
  const stop = async (name: string) => {
    const v = await findSeat(d, name);
    const r = await callManager(d.nc, d.space, "stop", d.me, { name }, { target: v.instance, timeoutMs: 30_000 });
    return { view: v, result: r };
  };
  return {
    "/api/spawn": writeRoute(SpawnBody, spawn),
    "/api/stop": writeRoute(SeatBody, async (b) => {
      const { result } = await stop(b.name);
      return { ...result, text: `${b.name}: ${result.stopped ? "stopped" : "was not running"}, retired` };
    }),
    // Restart: stop, then spawn the same persona under the same name on the same manager.
    "/api/restart": writeRoute(SeatBody, async (b) => {
      const before = await findSeat(d, b.name);
      if (!before.persona)
        throw new CommandFailedError(`${b.name} was not spawned from a persona: it cannot be restarted from here.`, {
          remedy: "The operator restarts it (`cotal stop`, `cotal spawn`).",
        });
      await stop(b.name);
      const r = await callManager(
        d.nc,
        d.space,
        "spawn",
        d.me,
        {
          persona: before.persona,
          agent: before.agent,
          name: b.name,
          ...(before.role ? { role: before.role } : {}),
          ...(before.terminal ? { terminal: before.terminal } : {}),
        },
        { target: before.instance, timeoutMs: 60_000 },
      );
      return { ...r, text: `${b.name}: restarted from persona ${before.persona} on manager ${r.instance} (${r.state})` };
    }),
  };
}

/** What the Spawn form offers: the manager's personas, cotal.yaml's seats that name one, and the runtimes of the registry (and echo) a seat may run on. */
export function steerReads(d: SteerDeps): Record<string, ReadRoute> {
  return {
    "/api/spawnable": async () => {
      const listed = await callManager(d.nc, d.space, "personas", d.me, {}, { target: d.local?.instance ?? "one", timeoutMs: 10_000 });
      return {
        personas: listed.personas.filter((p) => !p.problem).map((p) => p.persona),
        seats: teamSeats(d.project).map((t) => t.seat),
        runtimes: [...RUNTIMES.map((r) => r.name), "echo"],
      };
    },
  };
}

/**
 * A seat's terminal, read-only (what `cotal attach` shows): a tmux seat of this host's manager is
 * read with tmux capture-pane every second and pushed when it changed; no key is ever sent. The
 * person must see the seat in the manager's `ps` first; other seats are refused with why.
 */
export function terminalStream(d: SteerDeps): StreamRoute {
  return (query, push) => {
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    let last: string | undefined;
    const refuse = (error: string) => push("refused", { error });
    const name = PrincipalToken.safeParse(query.name);
    if (!name.success) {
      refuse("name: not a seat name");
      return () => undefined;
    }
    void (async () => {
      if (!d.steer)
        return refuse(
          `${d.me.owner}.${d.me.actor} may not steer seats: a seat's terminal is shown to a person minted with the steer right (\`cotal mint NAME --profile person --steer\`).`,
        );
      const local = d.local;
      if (!local) return refuse("no manager runs on the dashboard's host: a seat's terminal is read where its manager runs (`cotal attach` there).");
      const v = await findSeat(d, name.data).catch((err: unknown) => (err as Error).message);
      if (typeof v === "string") return refuse(v);
      if (v.instance !== local.instance)
        return refuse(`${v.name} runs on manager ${v.instance}, not on this host's (${local.instance}): \`cotal attach --name ${v.name}\` on its host.`);
      if (v.terminal !== "tmux") return refuse(`${v.name} has no tmux terminal to show (terminal ${v.terminal ?? "process"}).`);
      const tick = async () => {
        if (stopped) return;
        const screen = await seatScreen(local.stateDir, d.space, v.name).catch(() => "");
        if (screen !== last) push("screen", { screen });
        last = screen;
        timer = setTimeout(() => void tick(), SCREEN_EVERY_MS);
      };
      await tick();
    })();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  };
}
