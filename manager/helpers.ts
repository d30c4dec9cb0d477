// Helpers: seats an agent spawns (docs/manager.md, Helpers). The policy is pure:
// what a spawn may ask for, what a helper's scope is, and whether it is wider than its spawner's.
// The manager (spawn-admission.ts) reads the spawner's grant from the mesh service and the seat log,
// and calls these before anything is claimed or started.
import { DEFAULT_SPAWN_LIMIT, type AgentFrontmatter, type ChannelRights, type SeatAgent, type SpawnGrant } from "../schemas/index.js";
import { SeatRefusedError } from "./errors.js";
import { DEFAULT_RUNTIME } from "../runtimes/index.js";

/** What a seat's credential may read, post and take, as its spawn and agent file make it. */
export interface SeatScope {
  role?: string | undefined;
  /** The channels it joins at start. */
  channels: string[];
  allowSubscribe: string[];
  allowPublish: string[];
}

/**
 * A seat's scope: the spawn's channels (else its agent file's `subscribe`), plus the file's
 * allow-lists; the spawn's role, else the file's. The operator's channel rights decide the channels
 * they are over, whatever the rest gives; a channel it joins there must be one it may read.
 */
export function seatScope(
  a: { role?: string | undefined; channels: string[]; channelRights?: ChannelRights | undefined },
  fm: AgentFrontmatter | undefined,
): SeatScope {
  const channels = a.channels.length ? a.channels : (fm?.subscribe ?? []);
  const r = a.channelRights;
  const decide = (usual: string[], granted: string[] | undefined) =>
    r ? [...new Set([...usual.filter((c) => !r.over.includes(c)), ...(granted ?? [])])] : [...new Set(usual)];
  const unreadable = r ? channels.filter((c) => r.over.includes(c) && !r.read.includes(c)) : [];
  if (unreadable.length)
    throw new SeatRefusedError(
      "bad-rights",
      `The seat would join ${list(unreadable)} but its channel rights do not let it read ${unreadable.length === 1 ? "it" : "them"}; nothing was started.`,
      "Add the channel to channelRights.read, or leave it out of the seat's channels.",
    );
  return {
    role: a.role ?? fm?.role,
    channels,
    allowSubscribe: decide([...channels, ...(fm?.allowSubscribe ?? [])], r?.read),
    allowPublish: decide([...channels, ...(fm?.allowPublish ?? [])], r?.write),
  };
}

/** Spawn arguments only the operator passes: where a seat works, carried sessions, the spawn right itself, and exact channel rights. */
const OPERATOR_ONLY = ["cwd", "resume", "claim", "allowSpawn", "spawnLimit", "channelRights"] as const;

/** Refuse what an agent may not ask of a spawn, whatever its grant; names the first such argument. */
export function refuseOperatorOnly(caller: string, a: Partial<Record<(typeof OPERATOR_ONLY)[number], unknown>>): void {
  const asked = OPERATOR_ONLY.find((k) => a[k] !== undefined);
  if (asked)
    throw new SeatRefusedError(
      "spawn-not-allowed",
      `Only the operator passes ${asked} to a spawn; ${caller} may not. Nothing was started.`,
      "Leave it out: a helper works where its spawner's manager puts it, and never carries the spawn right itself.",
    );
}

/** A caller whose credential was not minted with the spawn right (the mesh service's record of its mint) is refused. */
export function refuseWithoutRight(caller: string, grant: SpawnGrant): void {
  if (!grant.minted || grant.profile !== "agent" || grant.allowSpawn.length === 0)
    throw new SeatRefusedError(
      "spawn-not-allowed",
      `${caller} may not spawn helpers: its credential was not minted with the spawn right. Nothing was done.`,
      "Ask the operator for a credential minted with `--allow-spawn <personas>` (cotal mint), or a seat spawned with it.",
    );
}

/** The persona a spawner asks for must be one its credential names. */
export function refuseUngranted(caller: string, grant: SpawnGrant, persona: string | undefined): asserts persona is string {
  refuseWithoutRight(caller, grant);
  if (persona === undefined)
    throw new SeatRefusedError(
      "spawn-not-allowed",
      `A helper is spawned by persona; ${caller} may spawn ${grant.allowSpawn.join(", ")}. Nothing was started.`,
      "Name one of them (cotal_personas lists them).",
    );
  if (!grant.allowSpawn.includes(persona))
    throw new SeatRefusedError(
      "spawn-not-allowed",
      `${caller} may spawn helpers of ${grant.allowSpawn.join(", ")}, not ${persona}. Nothing was started.`,
      "Pick one of those (cotal_personas lists them), or ask the operator to mint your credential with that persona in --allow-spawn.",
    );
}

/**
 * Why a helper of `persona` may not start from its agent file as it is now (`digest`): the grant
 * pins each persona's file as it was when the spawn right was minted, so a spawner that can write
 * the agent files cannot widen what its grant names. Undefined when the bytes are the pinned ones.
 */
export function pinProblem(grant: SpawnGrant, persona: string, digest: string | undefined): string | undefined {
  const pinned = grant.personaDigests[persona];
  if (pinned === undefined) return `its agent file was not pinned when ${grant.principal} was minted, so no helper of it starts`;
  if (pinned !== digest) return `its agent file changed since ${grant.principal} was minted with the right to spawn it`;
  return undefined;
}

/** Refuse a helper whose agent file is not the one the spawner's grant pinned (pinProblem). */
export function refuseUnpinned(caller: string, grant: SpawnGrant, persona: string, digest: string | undefined): void {
  const problem = pinProblem(grant, persona, digest);
  if (problem)
    throw new SeatRefusedError(
      "persona-not-pinned",
      `A helper of ${persona} cannot start for ${caller}: ${problem}. Nothing was started.`,
      `The operator mints ${caller} again (\`cotal mint <name> --allow-spawn … --replace\`, or spawns its seat again), which pins the agent files as they are then.`,
    );
}

/** How many helpers `grant` may hold at once. */
export function spawnLimitOf(grant: SpawnGrant): number {
  return grant.spawnLimit ?? DEFAULT_SPAWN_LIMIT;
}

/** Refuse a spawn past the spawner's limit, naming its helpers. */
export function refuseOverLimit(caller: string, grant: SpawnGrant, held: readonly string[]): void {
  const limit = spawnLimitOf(grant);
  if (held.length >= limit)
    throw new SeatRefusedError(
      "spawn-limit",
      `${caller} already holds ${held.length} helper${held.length === 1 ? "" : "s"} (${held.join(", ")}), its limit of ${limit}; nothing was started.`,
      "Retire one first (cotal_despawn), or ask the operator for a credential with a higher --spawn-limit.",
    );
}

/**
 * The agent a helper runs: its persona's runtime (the default runtime when it names none), or the
 * echo agent, which runs no model and no tool (always narrower). `asked` is the spawn's `agent`; the
 * default runtime's name is what a spawn that names none carries, and so reads as unasked. Any
 * other runtime than the persona's is refused.
 */
export function helperAgent(asked: SeatAgent, fm: AgentFrontmatter, persona: string): SeatAgent {
  if (asked === "echo") return "echo";
  const runtime = fm.runtime ?? DEFAULT_RUNTIME.name;
  if (asked !== DEFAULT_RUNTIME.name && asked !== runtime)
    throw new SeatRefusedError(
      "wider-than-spawner",
      `Persona ${persona} runs on ${runtime}; a helper of it may run on ${runtime} or echo, not ${asked}. Nothing was started.`,
      `Leave the runtime out (it is ${runtime}), or ask for echo.`,
    );
  return runtime;
}

/** Launch options that loosen what a seat may do without asking: a helper may set them only as its spawner does. */
const POSTURE_OPTIONS = ["permission-mode", "dangerously-skip-permissions", "allow-dangerously-skip-permissions", "permission-prompts", "add-dir", "tools"];

/**
 * How a helper would be wider than its spawner, one sentence each (empty: not wider). Its
 * credential: channels it may read or post on, and a role, that the spawner's does not hold; the
 * spawn right (a helper never carries it). Its tools, when the spawner is a seat whose agent file is
 * known (`spawnerFile`): allow rules the spawner's file does not list, and launch options that
 * loosen its permission posture unless the spawner's file sets them the same. A spawner started by
 * hand has no agent file the manager knows: the operator's naming the persona in --allow-spawn
 * accepted that persona's tools.
 */
export function widerThan(helper: SeatScope & { agent: SeatAgent; fm: AgentFrontmatter }, spawner: SpawnGrant, spawnerFile?: AgentFrontmatter): string[] {
  const out: string[] = [];
  const subs = helper.allowSubscribe.filter((c) => !spawner.allowSubscribe.includes(c));
  if (subs.length) out.push(`it would read ${list(subs)}, which its spawner may not`);
  const pubs = helper.allowPublish.filter((c) => !spawner.allowPublish.includes(c));
  if (pubs.length) out.push(`it would post on ${list(pubs)}, where its spawner may not`);
  if (helper.role !== undefined && helper.role !== spawner.role)
    out.push(`it would take role ${helper.role}'s anycasts, a role its spawner ${spawner.role ? `does not hold (it holds ${spawner.role})` : "does not hold"}`);
  if (helper.fm.allowSpawn.length) out.push(`its agent file lets it spawn helpers (allowSpawn), which a helper may not`);
  if (helper.agent !== "echo" && spawnerFile) {
    const tools = helper.fm.allowedTools.filter((t) => !spawnerFile.allowedTools.includes(t));
    if (tools.length) out.push(`its agent file allows ${list(tools)}, which its spawner's does not`);
    const opts = POSTURE_OPTIONS.filter((k) => k in helper.fm.launchOptions && helper.fm.launchOptions[k] !== spawnerFile.launchOptions[k]);
    if (opts.length) out.push(`its agent file sets ${list(opts.map((k) => `--${k}`))} as its spawner's does not`);
  }
  return out;
}

/** Refuse a helper wider than its spawner, saying every way it is. */
export function refuseWider(caller: string, persona: string, problems: readonly string[]): void {
  if (problems.length)
    throw new SeatRefusedError(
      "wider-than-spawner",
      `A helper of ${persona} would be wider than ${caller}: ${problems.join("; ")}. Nothing was started.`,
      "Spawn it on channels your credential holds (cotal_spawn channels), or ask the operator to narrow the persona's agent file or widen your credential.",
    );
}

function list(items: readonly string[]): string {
  return items.join(", ");
}
