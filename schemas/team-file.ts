import { SeatPosture } from "./spawn.js";
// `cotal.yaml`: one file that declares a space — its channels, personas, seats, budgets and server
// settings — for `cotal up -f` to converge the running mesh to (docs/team-file.md). This zod schema
// is the single source: the CLI validates with it and docs/schema/cotal-yaml.schema.json is
// rendered from it (editors complete and check the file with that).
import { z } from "zod";
import { AgentFrontmatter } from "./agent-file.js";
import { ChannelClass } from "./channel.js";
import { ManagerInstance } from "./manager-commands.js";
import { SeatAgent } from "./seat-log.js";
import { TerminalHost } from "./terminal-host.js";
import { OpeningPrompt } from "./spawn.js";
import { ChannelName, PrincipalToken, RoleName, SpaceName } from "./tokens.js";

/** A duration with its unit (`30s`, `15m`, `24h`, `7d`); a bare number would be read as milliseconds, which nobody means. */
const DURATION = "must be a duration with a unit, such as 30s, 15m, 24h or 7d";
const Duration = z.string({ error: DURATION }).regex(/^\d+(\.\d+)?(ms|s|m|h|d|w)$/, DURATION);

/** A size in bytes: a whole number, or one with a unit (KB, MB, GB: powers of 1000; KiB, MiB, GiB: of 1024). */
const ByteSize = z.union([
  z.number().int().positive(),
  z.string().regex(/^\d+\s*(B|KB|KiB|MB|MiB|GB|GiB|TB|TiB)?$/i, "must be a size such as 512MiB, 2GiB or 1000000 (bytes)"),
]);

const Count = z.number().int().positive();

/**
 * What one team file may hold. 256 names is what a channel's `read`/`write` list holds, so a file
 * never declares more seats (after `count`), channels or personas than it could name; 1 MiB is far
 * more than such a file takes with inline personas of a few pages each (longer texts belong in
 * agent files named by `file:`), and keeps a wrong file (a log, a dump) from being parsed at all.
 */
export const TEAM_FILE_LIMITS = { bytes: 1024 * 1024, channels: 256, seats: 256, personas: 256 } as const;

/** Everyone: every seat of the file. */
export const EVERY_SEAT = "*";

/**
 * Who may read or post on a channel: seats of the file by key (every seat `count` makes), personas
 * of the file (every seat that names one), or `"*"` (every seat of the file); a list or `"*"` alone.
 */
const Audience = z.union([z.literal(EVERY_SEAT), z.array(z.union([z.literal(EVERY_SEAT), PrincipalToken])).max(TEAM_FILE_LIMITS.seats)]);
export type TeamAudience = z.infer<typeof Audience>;

/** A channel's settings; what it leaves out is the space-wide default (`cotal channels defaults`). */
export const TeamChannel = z
  .strictObject({
    class: ChannelClass.optional().describe("live (at-most-once, online members only) or durable (held for members while away); default durable"),
    replay: z.boolean().optional().describe("whether a joiner is shown recent history; default true"),
    window: Duration.optional().describe("how far back joiners see history, e.g. 24h (at least 1s); default 24h"),
    description: z.string().max(1000).optional().describe("what the channel is for"),
    instructions: z.string().max(4000).optional().describe("shown to agents when they join"),
    read: Audience.optional().describe(
      'who may read it: seats or personas of this file, or "*" for every seat; the broker refuses the others; default the seats that join it',
    ),
    write: Audience.optional().describe(
      'who may post on it: seats or personas of this file, or "*" for every seat; the broker refuses the others; default the seats that join it',
    ),
  })
  .describe("A channel of the space; `{}` for the defaults.");
export type TeamChannel = z.infer<typeof TeamChannel>;

/** A persona from an agent file on disk. */
export const TeamPersonaFile = z
  .strictObject({
    file: z.string().min(1).describe("an agent file (docs/manager.md, Agent files), relative to cotal.yaml's folder"),
  })
  .describe("A persona read from an agent file.");

/** A persona written inline: an agent file's frontmatter keys (its name is the persona's key) and its text. */
export const TeamPersonaInline = AgentFrontmatter.omit({ name: true })
  .extend({ text: z.string().max(100_000).optional().describe("the persona itself: the agent file's markdown body") })
  .describe("A persona written inline: an agent file's keys (without name) and its text.");

/** A persona: an agent file by path, or inline. `cotal up -f` writes it as `.cotal/agents/<name>.md` under each seat's cwd. */
export const TeamPersona = z.union([TeamPersonaFile, TeamPersonaInline]);
export type TeamPersona = z.infer<typeof TeamPersona>;

/** A seat (or `count` of them) the space runs. */
export const TeamSeat = z
  .strictObject({
    agent: SeatAgent.optional().describe(
      "what runs: echo (built in, no model) or an agent CLI (a runtime of the registry: docs/runtimes.md); default: the registry's default runtime",
    ),
    persona: PrincipalToken.optional().describe(
      "an agent file: a persona of this file, or `.cotal/agents/<persona>.md` under the seat's cwd on its manager's host",
    ),
    role: RoleName.optional().describe("a role whose anycasts the seat takes"),
    terminal: TerminalHost.optional().describe(
      "the terminal host: tmux (default for agent CLIs), pty, or process (echo); `runtime`, its old name, is read too",
    ),
    manager: ManagerInstance.optional().describe("the manager instance that runs it (`cotal ps`); default this host's"),
    count: Count.max(32).optional().describe("how many such seats: the first is named as the key, the others <key>_2, <key>_3…; default 1"),
    restart: z
      .strictObject({
        max: z.number().int().min(0).max(100).optional().describe("restarts allowed within the window; default 3"),
        window: Duration.optional().describe("the policy's window (1s to 24h); default 60s"),
      })
      .optional()
      .describe("the restart policy: more restarts than max within the window retire the seat (a crash loop)"),
    model: z.string().min(1).max(200).optional().describe("the model (agent CLI seats)"),
    channels: z.array(ChannelName).max(64).optional().describe("channels the seat joins (reads and posts); each must be declared under channels"),
    cwd: z.string().min(1).max(4096).optional().describe("the seat's working directory, relative to cotal.yaml's folder; default that folder on this host"),
    prompt: OpeningPrompt.optional(),
    events: z.boolean().optional().describe("publish the seat's activity on its event plane (docs/events.md); default true"),
    posture: SeatPosture.optional().describe(
      "unattended (default) or supervised: permission asks go to people over the mesh (`cotal approvals`; runtimes with approvals, docs/runtimes.md)",
    ),
  })
  .describe("A seat: one agent process under a name, run by a manager.");
export type TeamSeat = z.infer<typeof TeamSeat>;

/** Server settings: used when `cotal up -f` starts the mesh; a running mesh with other settings is refused (`cotal down` first). */
export const TeamServer = z
  .strictObject({
    open: z.boolean().optional().describe("open mode: no authentication, for local demos; default false (static auth)"),
    host: z
      .string()
      .regex(/^[A-Za-z0-9.:_-]+$/, "must be a host name or an IP address such as 127.0.0.1")
      .optional()
      .describe("address to listen on; default 127.0.0.1"),
    port: z.number().int().min(1).max(65535).optional().describe("client port; default 4222 (a free one when it is taken)"),
    cluster: z
      .literal([1, 3, 5], { error: "must be 1, 3 or 5 (JetStream needs a majority of an odd number of nodes)" })
      .optional()
      .describe("nodes of a local JetStream cluster (1, 3 or 5); default 1"),
    sync: z
      .string()
      .regex(/^(always|[1-9]\d*(ms|s|m|h))$/, "must be always or a duration such as 500ms, 30s, 2m or 1h")
      .optional()
      .describe("when JetStream syncs writes to disk: always (default) or a duration"),
    storeDir: z.string().min(1).optional().describe("the JetStream store folder, relative to cotal.yaml's folder; default .cotal/jetstream"),
    limits: z
      .strictObject({
        chatBytes: ByteSize.optional().describe("most bytes of channel posts stored; default 1GiB"),
        dmBytes: ByteSize.optional().describe("most bytes of waiting DMs stored; default 512MiB"),
        taskBytes: ByteSize.optional().describe("most bytes of waiting anycasts stored; default 256MiB"),
        seatLogBytes: ByteSize.optional().describe("most bytes of the seat log; default 128MiB"),
        artifactBytes: ByteSize.optional().describe("most bytes of attached files stored; default 1GiB"),
        eventsBytes: ByteSize.optional().describe("most bytes of event planes stored; default 256MiB"),
        chatPerSender: Count.optional().describe("most posts one sender keeps on one channel; default 10000"),
        chatMaxAge: Duration.optional().describe("how long channel posts are kept, e.g. 30d (0d: for ever); default 90d"),
        dmBacklog: Count.optional().describe("most DMs one sender may have waiting for one recipient; default 10000"),
        maxDisk: ByteSize.optional().describe("static mode: JetStream disk the space may use in all; default 4GiB"),
        maxMemory: ByteSize.optional().describe("static mode: JetStream memory the space may use in all; default 256MiB"),
      })
      .optional()
      .describe("storage limits (as `cotal up`'s flags of the same names)"),
  })
  .describe("How the mesh is started (as `cotal up`'s flags).");
export type TeamServer = z.infer<typeof TeamServer>;

/** Run budget caps (docs/runs.md), written to `.cotal/budget.json` for this host's managers. */
export const TeamBudgets = z
  .strictObject({
    daily: z.number().nonnegative().optional().describe("USD per UTC day over every recorded run"),
    task: z.number().nonnegative().optional().describe("USD per task marker over its recorded runs"),
  })
  .describe("Run budget caps in USD.");
export type TeamBudgets = z.infer<typeof TeamBudgets>;

/** `cotal.yaml`. */
export const TeamFile = z
  .strictObject({
    space: SpaceName.optional().describe("the space; default the mesh's (default)"),
    server: TeamServer.optional(),
    channels: z.record(ChannelName, TeamChannel.nullable()).optional().describe("channels by name"),
    personas: z.record(PrincipalToken, TeamPersona).optional().describe("personas (agent files) by name, for seats to name"),
    seats: z.record(PrincipalToken, TeamSeat.nullable()).optional().describe("seats by name"),
    budgets: TeamBudgets.optional(),
  })
  .describe("cotal.yaml: a space declared in one file, for `cotal up -f` (docs/team-file.md).");
export type TeamFile = z.infer<typeof TeamFile>;
