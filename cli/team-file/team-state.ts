// What `cotal up -f` started, so it retires only its own seats and `cotal down` stops them:
// `.cotal/team.json` (0600), written after every change. A seat is `up -f`'s while a seat of that
// name with the recorded lifecycle uid holds the name; a seat someone else started under a name the
// file declares is never taken over or stopped.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { ChannelRights, describeIssues, LifecycleUid, ManagerInstance, PrincipalToken, readingOldTerminalKey, SpaceName } from "../../schemas/index.js";
import { CommandFailedError } from "../terminal/errors.js";
import type { MeshRoot } from "../mesh-host/mesh-root.js";

/**
 * The spawn request a seat was started with (without its request id): what a changed file is
 * compared with. A state an older `up -f` wrote names the terminal host `runtime`: read as
 * `terminal`, so the seat is not replaced for a key's new name.
 */
export const SeatSpec = readingOldTerminalKey(
  z.object({
    agent: z.string(),
    persona: z.string().optional(),
    personaDigest: z.string().optional(),
    role: z.string().optional(),
    terminal: z.string().optional(),
    /** The manager instance the file names; absent: this host's. */
    manager: z.string().optional(),
    channels: z.array(z.string()),
    cwd: z.string().optional(),
    model: z.string().optional(),
    prompt: z.string().optional(),
    restarts: z.number().int().optional(),
    windowMs: z.number().int().optional(),
    noEvents: z.boolean().optional(),
    /** supervised: permission asks go to people over the mesh. */
    posture: z.literal("supervised").optional(),
    /** Its rights on channels with a read or write list, where they differ from what joining gives (the spawn's channelRights). */
    rights: ChannelRights.optional(),
  }),
);
export type SeatSpec = z.infer<typeof SeatSpec>;

/** One seat `up -f` started. */
export const OwnedSeat = z.object({
  /** The manager that runs it. */
  instance: ManagerInstance,
  uid: LifecycleUid,
  spec: SeatSpec,
});
export type OwnedSeat = z.infer<typeof OwnedSeat>;

export const TeamState = z.object({
  version: z.literal(1),
  /** The team file last applied (absolute). */
  file: z.string(),
  space: SpaceName,
  seats: z.record(PrincipalToken, OwnedSeat),
  /** `.cotal/budget.json` was written from the file (removed again when the file drops its budgets). */
  budgets: z.boolean().optional(),
});
export type TeamState = z.infer<typeof TeamState>;

export function teamStateFile(root: MeshRoot): string {
  return join(root.dir, "team.json");
}

/** The state, or undefined when `up -f` never ran here. */
export function readTeamState(root: MeshRoot): TeamState | undefined {
  const file = teamStateFile(root);
  if (!existsSync(file)) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch (cause) {
    throw new CommandFailedError(`${file} is not valid JSON.`, {
      remedy: "It records the seats `cotal up -f` started: stop them with `cotal stop --name N` (see `cotal ps`), then delete it.",
      cause,
    });
  }
  const r = TeamState.safeParse(json);
  if (!r.success)
    throw new CommandFailedError(`${file} is not what \`cotal up -f\` writes: ${describeIssues(r.error).join("; ")}.`, {
      remedy: "It records the seats `cotal up -f` started: stop them with `cotal stop --name N` (see `cotal ps`), then delete it.",
    });
  return r.data;
}

/** Write the state atomically (a crash leaves the old one or the new one); an empty state removes the file. */
export function writeTeamState(root: MeshRoot, state: TeamState): void {
  const file = teamStateFile(root);
  if (Object.keys(state.seats).length === 0 && !state.budgets) {
    rmSync(file, { force: true });
    return;
  }
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(state, null, 2) + "\n", { mode: 0o600 });
  renameSync(tmp, file);
}
