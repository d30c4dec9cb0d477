import { z } from "zod";
import { AllowSpawn, SeatPosture, SpawnLimit } from "./spawn.js";
import { ChannelName, PrincipalToken, RoleName, RuntimeName } from "./tokens.js";

/** Capabilities an agent may be granted. */
export const Capability = z.enum(["spawn"]);

/** Frontmatter of `.cotal/agents/<name>.md`; the markdown body is the persona. Unknown keys are refused. */
export const AgentFrontmatter = z
  .strictObject({
    name: PrincipalToken,
    role: RoleName.optional(),
    description: z.string().optional(),
    tags: z.array(z.string()).default([]),
    subscribe: z.array(ChannelName).default([]).describe("channels joined at start"),
    allowSubscribe: z.array(ChannelName).default([]),
    allowPublish: z.array(ChannelName).default([]),
    model: z.string().optional(),
    runtime: RuntimeName.optional().describe("the agent CLI that runs this persona (docs/runtimes.md); default: the registry's default runtime"),
    agent: z.string().optional().describe("a subagent name to run as (runtimes that have subagents)"),
    launchOptions: z.record(z.string(), z.union([z.string(), z.boolean(), z.number()])).default({}),
    allowedTools: z
      .array(z.string().min(1).max(200))
      .max(200)
      .default([])
      .describe(
        "permission rules (in its runtime's syntax) a managed seat may use without asking (it runs dontAsk: anything else is refused), e.g. Read, Bash(npm test:*)",
      ),
    capabilities: z.array(Capability).default([]),
    allowSpawn: AllowSpawn.default([]).describe(
      "personas (agent files) a seat of this persona may spawn helpers of with cotal_spawn, when the operator spawns it (docs/manager.md, Helpers); a helper spawned by an agent may not carry it",
    ),
    spawnLimit: SpawnLimit.optional(),
    posture: SeatPosture.optional().describe(
      "unattended (default): what allowedTools does not name is refused; supervised: it is asked of a person over the mesh (`cotal approvals`; runtimes with approvals, docs/runtimes.md)",
    ),
  })
  .describe("Frontmatter of an agent file.");
export type AgentFrontmatter = z.infer<typeof AgentFrontmatter>;
