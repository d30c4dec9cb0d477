import { ApproveRight } from "./approvals.js";
import { z } from "zod";
import { ChannelConfig } from "./channel.js";
import { ROSTER_PAGE_BYTES } from "./limits.js";
import { ARTIFACT_DIGEST, CotalMessage } from "./message.js";
import { PresenceStatus } from "./presence.js";
import { PrincipalId } from "./principal.js";
import { AllowSpawn, PersonaDigests, SpawnGrant, SpawnLimit } from "./spawn.js";
import { ChannelName, PrincipalToken, RoleName, SpaceName } from "./tokens.js";

/**
 * One control command: which endpoint serves it, the shape of its `args` and of the `data` of
 * a successful reply. The callee validates args before running anything (`invalid-args`) and
 * its own reply before sending it (`internal`); the caller validates the reply (`bad-reply`).
 */
export interface ControlCommandSpec {
  /** The endpoint token of the control subject (`cotal.<space>.ep.<endpoint>.…`). */
  readonly endpoint: string;
  /** One line for the docs. */
  readonly summary: string;
  readonly args: z.ZodType<Record<string, unknown>>;
  readonly reply: z.ZodType;
}

/** Command name → spec. The command name is the command token of the control subject. */
export type ControlTable = Record<string, ControlCommandSpec>;

/** Credential profiles (docs/security.md#profiles). */
export const PROFILES = ["agent", "reader", "observer", "person", "admin", "mesh", "cli", "manager", "leaf"] as const;
export type Profile = (typeof PROFILES)[number];

/** A principal named by `<owner>.<actor>` or a bare actor (owner `local`). */
export const PrincipalName = z
  .string()
  .regex(/^[A-Za-z0-9_]{1,64}(\.[A-Za-z0-9_]{1,64})?$/, "name must be an actor name or <owner>.<actor>, each of letters, digits and '_'")
  .describe("an actor name (owner `local`) or a principal id `<owner>.<actor>`");

/** Unix milliseconds of a valid date (0 … 8.64e15). */
const UnixMs = z.number().int().min(0).max(8.64e15);
const Seq = z.number().int().positive().describe("a stream sequence");
const NoArgs = z.object({}).describe("no arguments");

/**
 * Most raw bytes of one artifact chunk on the control rail (either way). Chunks travel base64 in
 * the JSON args/reply (one framing for the whole rail, described by JSON Schema): 128 KiB becomes
 * 174,764 characters, well inside the 264 KiB a stored message may have and NATS's 1 MiB
 * payload; it is also the Object Store's own chunk size, so a read is one stored chunk.
 */
export const ARTIFACT_CHUNK_BYTES = 128 * 1024;
/** Largest artifact, in bytes (the bucket's own limit may be lower). */
export const ARTIFACT_MAX_BYTES = 4 * 1024 ** 3;

/** `sha256:` and 64 lowercase hex characters: the artifact's name and its check. */
export const ArtifactDigest = z.string().regex(ARTIFACT_DIGEST, 'digest must be "sha256:" and 64 lowercase hex characters');
const Base64Chunk = z
  .base64()
  .max(Math.ceil(ARTIFACT_CHUNK_BYTES / 3) * 4)
  .describe(`base64 (RFC 4648, padded) of at most ${ARTIFACT_CHUNK_BYTES} bytes`);
/**
 * Who may read an artifact besides its uploader: the readers of a channel, one principal (a DM's
 * recipient), or the holders of a role (an anycast's). Admins and Cotal's services read all.
 */
export const ArtifactGrant = z.union([z.strictObject({ channel: ChannelName }), z.strictObject({ to: PrincipalId }), z.strictObject({ role: RoleName })]);
export type ArtifactGrant = z.infer<typeof ArtifactGrant>;

const ArtifactInfo = z.object({
  digest: ArtifactDigest,
  size: z.number().int().nonnegative(),
  name: z.string().min(1).max(255).describe("the file name the uploader gave"),
  mediaType: z.string().min(1).max(255),
  bucket: z.string().min(1).describe("the Object Store bucket holding the bytes"),
  uploader: PrincipalId.optional().describe("who stored it first"),
});

const RegisterReply = z
  .object({
    dm: z.string().min(1).describe("the caller's DM durable"),
    dmCreated: z.boolean().describe("created by this call (false: it existed)"),
    anycast: z.string().min(1).optional().describe("the role's anycast durable, when a role was registered"),
  })
  .describe("The caller's inbox (and role queue) exist.");

const RosterItem = z.object({
  id: PrincipalId,
  presence: z.unknown().describe("a Presence record (Presence.schema.json); readers validate each row, so one bad row does not void the snapshot"),
  ageMs: z.number().nonnegative().describe("how long ago the record was written"),
  deleted: z.boolean(),
  registeredRole: RoleName.nullable().optional().describe("static meshes: the role the credential holds (null: none)"),
});

const HistoryItem = z.object({
  message: CotalMessage.describe("the stored envelope; `from.name` is the verified sender's actor"),
  from: z.object({ owner: PrincipalToken, actor: PrincipalToken }).describe("the sender, from the subject"),
  channel: ChannelName,
  seq: Seq,
  storedAt: UnixMs.describe("server time it was stored"),
});

const ResolvedChannel = z.object({
  name: ChannelName,
  config: ChannelConfig.describe("effective settings (the channel's own over the space defaults)"),
  configured: z.boolean().describe("the channel has its own record"),
});

/**
 * The mesh service's commands (`endpoint = mesh`). Args objects ignore unknown fields (a newer
 * caller's extra field reaches an older service harmlessly).
 */
export const MESH_COMMANDS = {
  register: {
    endpoint: "mesh",
    summary: "create (once) the caller's DM inbox and, with a role, the role's anycast queue",
    args: z.object({ role: RoleName.optional().describe("static meshes: must be the credential's role") }),
    reply: RegisterReply,
  },
  lookup: {
    endpoint: "mesh",
    summary: "whether a name has a DM inbox yet",
    args: z.object({ name: PrincipalName }),
    reply: z.object({
      principal: PrincipalId,
      dm: z.boolean().describe("the name has a DM inbox"),
      registeredRole: RoleName.nullable().optional().describe("static meshes: the role its credential holds (null: none)"),
      status: PresenceStatus.optional().describe(
        "its presence as the mesh service's roster has it now (offline: none); a DM's receipt says it without loading a roster",
      ),
    }),
  },
  join: {
    endpoint: "mesh",
    summary: "create the caller's durable membership of a channel, from the join watermark; idempotent",
    args: z.object({
      channel: ChannelName,
      member: PrincipalId.optional().describe(
        "the operator's credential only: whose membership to create when it acts for a person (`cotal listen --as bob --impersonate`); the read right checked is the caller's. Default: the caller",
      ),
    }),
    reply: z.object({
      durable: z.string().min(1),
      created: z.boolean(),
      watermark: Seq.describe("first stream sequence the membership delivers; history before it is backfill"),
    }),
  },
  leave: {
    endpoint: "mesh",
    summary: "end the caller's durable membership of a channel",
    args: z.object({ channel: ChannelName }),
    reply: z.object({ left: z.boolean().describe("a membership existed and was deleted") }),
  },
  roster: {
    endpoint: "mesh",
    summary: `a snapshot of the presence records, to load before following live writes: a page of ≤ ${ROSTER_PAGE_BYTES / 1024} KiB, by id`,
    args: z.object({
      after: PrincipalId.optional().describe("only rows whose id sorts after this one (the last id of the previous page)"),
    }),
    reply: z
      .array(RosterItem)
      .describe(`rows sorted by id; a page within one row of ${ROSTER_PAGE_BYTES} bytes may have more: ask again with after = its last id`),
  },
  history: {
    endpoint: "mesh",
    summary: "one page (≤ 768 KiB) of a channel's stored posts, oldest first; read scope enforced",
    args: z.object({
      channel: ChannelName,
      sinceMs: UnixMs.optional().describe("only posts stored at or after this time"),
      afterSeq: Seq.optional().describe("only posts at or after this sequence"),
      beforeSeq: Seq.optional().describe("only posts before this sequence"),
      limit: z.number().int().positive().max(10_000).optional().describe("keep the newest N"),
    }),
    reply: z.object({
      items: z.array(HistoryItem),
      more: z.boolean().describe("more posts follow: ask again with afterSeq = nextAfterSeq"),
      nextAfterSeq: Seq.optional(),
    }),
  },
  channels: {
    endpoint: "mesh",
    summary: "the configured channels with their effective settings",
    args: NoArgs,
    reply: z.array(ResolvedChannel),
  },
  mint: {
    endpoint: "mesh",
    summary: "sign a credential for a user key generated by the caller (operator credential only)",
    args: z.object({
      name: PrincipalName,
      profile: z.enum(PROFILES),
      allowSubscribe: z.array(ChannelName).default([]),
      allowPublish: z.array(ChannelName).default([]),
      role: RoleName.optional(),
      provision: z.boolean().default(false).describe("also create the DM inbox, role queue and channel memberships"),
      events: z.boolean().optional().describe("it runs a seat: may publish its own event plane (agent; unset: only if it may post on a channel)"),
      allowSpawn: AllowSpawn.default([]).describe("agent: personas it may spawn helpers of (docs/manager.md, Helpers); empty: no spawn right"),
      spawnLimit: SpawnLimit.optional().describe("agent with allowSpawn: helpers it may hold at once"),
      approve: ApproveRight.default([]).describe(
        "person: the seats whose permission asks it may answer (actor names, or * for every seat; docs/security.md, The approve right); empty: only the seats it owns",
      ),
      personaDigests: PersonaDigests.optional().describe(
        "agent with allowSpawn: the sha256 of each persona's agent file as the minter read it; a helper starts only from those bytes (unset: no helper starts)",
      ),
      steer: z.boolean().optional().describe("person: may steer seats (spawn personas and team seats, stop and restart them; docs/security.md, People)"),
      expiresInMs: z.number().int().positive().optional(),
      leaf: PrincipalName.optional().describe(
        "operator: the leaf credential of the host this identity runs on (`<host>_leaf`; agent, reader or observer): that leaf's scope widens to it, and revoking the leaf revokes it",
      ),
      userPub: z.string().regex(/^U[A-Z2-7]{55}$/, "userPub must be a user public nkey"),
    }),
    reply: z.object({
      principal: PrincipalId,
      jwt: z.string().min(1).describe("the user JWT; the caller adds its seed to make a .creds file"),
      userPub: z.string().min(1),
      expiresAt: UnixMs.optional(),
      provisioned: RegisterReply.optional(),
      leafReconnect: z
        .literal(true)
        .optional()
        .describe(
          "minted through a leaf host whose scope now widens to this name: the hub remakes that host's connection (about a second); use the credential once the mesh answers it",
        ),
      othersValid: z
        .number()
        .int()
        .nonnegative()
        .optional()
        .describe("other credentials of this name that are still valid (neither revoked nor expired); they stay valid"),
    }),
  },
  revoke: {
    endpoint: "mesh",
    summary: "revoke every credential minted for a name (operator credential only)",
    args: z.object({ name: PrincipalName }),
    reply: z.object({ principal: PrincipalId, revoked: z.number().int().nonnegative().describe("credentials revoked") }),
  },
  grant: {
    endpoint: "mesh",
    summary: "what a name was minted with: profile, channels, role and spawn right (the operator, managers, and the name itself)",
    args: z.object({ name: PrincipalName }),
    reply: SpawnGrant,
  },
  "may-approve": {
    endpoint: "mesh",
    summary: "whether a name may answer the calling seat's permission asks (the operator, or its identity record's approve right names the caller)",
    args: z.object({ name: PrincipalName }),
    reply: z.object({
      principal: PrincipalId,
      allowed: z.boolean().describe("it may answer the caller's asks by the approve right (the seat's owner is the seat's own to know)"),
    }),
  },
  whoami: {
    endpoint: "mesh",
    summary: "what the mesh knows of the caller: its principal, and the profile its name was minted with",
    args: NoArgs,
    reply: z.object({
      principal: PrincipalId,
      profile: z
        .enum(PROFILES)
        .optional()
        .describe(
          "the profile this mesh minted the name with (`cli` for the operator's credential); absent on an open mesh, and for a name this mesh's store never minted",
        ),
    }),
  },
  ping: {
    endpoint: "mesh",
    summary: "is the mesh service up",
    args: NoArgs,
    reply: z.object({ space: SpaceName, pid: z.number().int().positive() }),
  },
} as const satisfies ControlTable;

/**
 * Artifact commands (`endpoint = artifact`), served by the mesh service, which alone reaches the
 * space's Object Store. Their own endpoint lets an agent's credential allow them with one
 * subject (`…ep.artifact.one.*.<o>.<a>`): a user JWT is sent whole on connect, and the server
 * refuses a CONNECT line over 4 KiB.
 */
export const ARTIFACT_COMMANDS = {
  "artifact-begin": {
    endpoint: "artifact",
    summary: "start storing an artifact (content-addressed): if the space holds these bytes and the caller may read them, nothing is sent",
    args: z.object({
      digest: ArtifactDigest,
      size: z.number().int().nonnegative().max(ARTIFACT_MAX_BYTES),
      name: z.string().min(1).max(255),
      mediaType: z.string().min(1).max(255),
      audience: z
        .array(ArtifactGrant)
        .max(16)
        .default([])
        .describe("who may read it besides the uploader (static meshes; an open mesh lets everyone); empty: the uploader only"),
    }),
    reply: z.object({
      known: z.boolean().describe("the space holds these bytes and the caller may read them: the audience was added, no upload follows"),
      upload: z.string().min(1).optional().describe("the upload to send chunks to (absent when known)"),
      chunkBytes: z.number().int().positive().describe("send chunks of at most this many raw bytes"),
      info: ArtifactInfo.optional().describe("when known: what is stored"),
    }),
  },
  "artifact-chunk": {
    endpoint: "artifact",
    summary: "the next chunk of an upload, in order from 0; resending the last one is harmless",
    args: z.object({ upload: z.string().min(1).max(64), seq: z.number().int().nonnegative(), data: Base64Chunk }),
    reply: z.object({ received: z.number().int().nonnegative().describe("bytes received so far") }),
  },
  "artifact-commit": {
    endpoint: "artifact",
    summary: "finish an upload: stored only if the bytes have the digest and size begun with",
    args: z.object({ upload: z.string().min(1).max(64) }),
    reply: ArtifactInfo,
  },
  "artifact-get": {
    endpoint: "artifact",
    summary: "read an artifact chunk by chunk: from the start, then from each reply's `next`, until info.size bytes; the reader checks the sha256",
    args: z.object({ digest: ArtifactDigest, cursor: z.number().int().positive().optional().describe("the previous reply's `next`") }),
    reply: z.object({
      info: ArtifactInfo,
      data: Base64Chunk.describe("the chunk's bytes, base64; empty past the last chunk"),
      next: z.number().int().positive().optional().describe("the cursor of the following chunk; the reader stops once it holds info.size bytes"),
    }),
  },
} as const satisfies ControlTable;

/**
 * Every control command Cotal defines, by name (names are unique across endpoints). The
 * manager's commands (spawn, despawn, stop, ps, status) join this table under their endpoint.
 */
export const CONTROL_COMMANDS = { ...MESH_COMMANDS, ...ARTIFACT_COMMANDS } as const satisfies ControlTable;
export type ControlCommand = keyof typeof CONTROL_COMMANDS;

/** What a caller passes for a command of `T` (defaults may be left out). */
export type TableArgs<T extends ControlTable, C extends keyof T> = z.input<T[C]["args"]>;
/** What a handler of a command of `T` receives (defaults filled in). */
export type TableParsedArgs<T extends ControlTable, C extends keyof T> = z.output<T[C]["args"]>;
/** The data of a successful reply to a command of `T`. */
export type TableReplyData<T extends ControlTable, C extends keyof T> = z.output<T[C]["reply"]>;

export type ControlArgs<C extends ControlCommand> = TableArgs<typeof CONTROL_COMMANDS, C>;
export type ControlReplyData<C extends ControlCommand> = TableReplyData<typeof CONTROL_COMMANDS, C>;

export type RegisterReply = ControlReplyData<"register">;
export type LookupReply = ControlReplyData<"lookup">;
export type JoinReply = ControlReplyData<"join">;
export type HistoryArgs = ControlArgs<"history">;
export type HistoryPage = ControlReplyData<"history">;
export type HistoryItem = HistoryPage["items"][number];
export type MintArgs = ControlArgs<"mint">;
export type MintReply = ControlReplyData<"mint">;
export type RevokeReply = ControlReplyData<"revoke">;
export type WhoamiReply = ControlReplyData<"whoami">;
export type PingReply = ControlReplyData<"ping">;
export type ArtifactInfo = ControlReplyData<"artifact-commit">;

/**
 * The JSON Schema documents of every command, by file stem: `control.<command>.args` and
 * `control.<command>.reply` (docs/schema/).
 */
export function controlWireTypes(table: ControlTable = CONTROL_COMMANDS): Record<string, z.ZodType> {
  return Object.fromEntries(
    Object.entries(table).flatMap(([command, spec]) => [
      [`control.${command}.args`, spec.args.describe(`Arguments of the ${spec.endpoint} endpoint's \`${command}\` command: ${spec.summary}.`)],
      [`control.${command}.reply`, spec.reply.describe(`Reply data of \`${command}\` (the \`data\` of a ControlReply with ok: true).`)],
    ]),
  );
}
