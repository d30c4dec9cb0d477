import { z } from "zod";
import { ARTIFACT_DIGEST } from "./message.js";
import { PrincipalId } from "./principal.js";
import { ChannelName, PrincipalToken, RoleName } from "./tokens.js";

/**
 * Agents that staff their team (docs/manager.md, Helpers): a credential minted
 * with the spawn right (`cotal mint … --allow-spawn <personas>`) may ask a manager to start and
 * retire helper seats of those personas, within its seat limit, never wider than itself.
 */

/**
 * How a managed seat meets a tool call its allow-list does not name (docs/security.md, The approve
 * right): `unattended` (the default) refuses it; `supervised` asks a person over the mesh
 * (`cotal approvals`), who allows or denies it. The deny floor refuses in both.
 */
export const SeatPosture = z.enum(["unattended", "supervised"]);
export type SeatPosture = z.infer<typeof SeatPosture>;

/** Helpers one spawner holds at once unless its credential says otherwise. */
export const DEFAULT_SPAWN_LIMIT = 4;
/** The most helpers a credential may be allowed. */
export const MAX_SPAWN_LIMIT = 32;
/** The most personas one credential may be allowed to spawn. */
export const MAX_SPAWN_PERSONAS = 32;

/** The personas (agent files) a credential may spawn helpers of. */
export const AllowSpawn = z.array(PrincipalToken).max(MAX_SPAWN_PERSONAS).describe("personas (agent files) it may spawn helpers of");
/** How many helpers it may hold at once. */
export const SpawnLimit = z.number().int().min(1).max(MAX_SPAWN_LIMIT).describe(`helpers it may hold at once (default ${DEFAULT_SPAWN_LIMIT})`);

/** A seat's opening prompt: handed to its model as mail, never typed (docs/security.md, "Typed text is fixed text"). */
export const OpeningPrompt = z
  .string()
  .min(1)
  .max(100_000)
  .describe("agent CLI seats: its opening prompt, handed to the model as a DM from the manager (never typed into its terminal)");

/**
 * Each persona's agent file as the minter read it (`sha256:` and the hex digest of its bytes): a
 * helper is started only from those bytes, so a spawner that can write the agent files cannot widen
 * the personas its grant names.
 */
export const PersonaDigests = z
  .record(PrincipalToken, z.string().regex(ARTIFACT_DIGEST, 'a persona digest is "sha256:" and 64 lowercase hex characters'))
  .describe("persona → sha256 of its agent file when the spawn right was minted");

/**
 * What the mesh service minted a name with, as a manager needs it to judge a spawn: its profile,
 * its channels and role (a helper may not exceed them) and its spawn right.
 */
export const SpawnGrant = z.object({
  principal: PrincipalId,
  minted: z.boolean().describe("the mesh minted this name (false: an open mesh, or a name never minted; every other field is then empty)"),
  profile: z.string().optional(),
  allowSubscribe: z.array(ChannelName).default([]),
  allowPublish: z.array(ChannelName).default([]),
  role: RoleName.optional(),
  allowSpawn: AllowSpawn.default([]),
  spawnLimit: SpawnLimit.optional(),
  personaDigests: PersonaDigests.default({}),
  steer: z.boolean().optional().describe("a person with the steer right: may spawn personas and team seats, stop and restart seats (docs/security.md, People)"),
});
export type SpawnGrant = z.infer<typeof SpawnGrant>;

/** One persona a spawner may spawn, as the manager's folder holds it. */
export const PersonaInfo = z.object({
  persona: PrincipalToken,
  name: PrincipalToken.describe("the seat name its agent file gives (a helper's default name)"),
  runtime: z.string().describe("the agent CLI its agent file names (the registry's default runtime when none)"),
  role: RoleName.optional(),
  channels: z.array(ChannelName).describe("the channels its helper joins unless the spawn names others"),
  description: z.string().max(1000).optional(),
  problem: z.string().optional().describe("why it cannot be spawned from here (its agent file is missing or invalid, or wider than the spawner)"),
});
export type PersonaInfo = z.infer<typeof PersonaInfo>;

/**
 * The operator's channel rights for a seat (cotal.yaml's `read`/`write` lists; docs/team-file.md):
 * on the channels in `over`, the seat's credential may read exactly those in `read` and post on
 * exactly those in `write`, whatever its channels and agent file would give. Channels not in
 * `over` keep the usual rights (those it joins, plus its agent file's allow-lists).
 */
export const ChannelRights = z
  .strictObject({
    over: z.array(ChannelName).max(64).describe("the channels these rights decide"),
    read: z.array(ChannelName).max(64).describe("of those, the ones it may read"),
    write: z.array(ChannelName).max(64).describe("of those, the ones it may post on"),
  })
  .superRefine((r, ctx) => {
    for (const key of ["read", "write"] as const) {
      const outside = r[key].filter((c) => !r.over.includes(c));
      if (outside.length) ctx.addIssue({ code: "custom", path: [key], message: `names ${outside.join(", ")}, which over does not` });
    }
  })
  .describe("the operator only: exact read and post rights on some channels (cotal.yaml's read/write lists)");
export type ChannelRights = z.infer<typeof ChannelRights>;
