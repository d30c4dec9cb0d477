import { PrincipalId } from "./principal.js";
import { SeatPosture } from "./spawn.js";
import { z } from "zod";
import { LOCAL_OWNER } from "./principal.js";
import { ChannelName, LifecycleUid, PrincipalToken, RoleName, RuntimeName, SpaceName } from "./tokens.js";

/**
 * The launch material file (path in `COTAL_LAUNCH_MATERIAL`, mode 0600), written by the manager
 * or by `cotal spawn` for a connector: who the seat is, where the mesh is, and the per-launch
 * control token. Unknown keys are refused (a typo must not silently drop a setting).
 */
export const LaunchMaterial = z
  .strictObject({
    v: z.literal(1).default(1),
    server: z.string().min(1).describe("nats://host:port, host:port or cotal://host:port/space"),
    space: SpaceName,
    name: PrincipalToken.describe("the actor name; the principal is `<owner>.<name>`"),
    owner: PrincipalToken.default(LOCAL_OWNER),
    role: RoleName.optional(),
    channels: z.array(ChannelName).max(64).default([]),
    creds: z.string().min(1).optional().describe("path of the seat's .creds file (auth meshes)"),
    uid: LifecycleUid.optional().describe("lifecycle uid of this seat incarnation"),
    controlToken: z.string().min(32).max(512).describe("per-launch secret hooks present to the control endpoint"),
    controlDir: z.string().min(1).optional().describe("where the control socket goes (default: the per-user control directory)"),
    httpPort: z.number().int().min(0).max(65535).optional().describe("also serve hooks over loopback HTTP on this port (0 = an ephemeral port)"),
    description: z.string().max(1000).optional(),
    tags: z.array(z.string().max(64)).max(32).optional(),
    meta: z.record(z.string(), z.string().max(1000)).optional(),
    runtime: RuntimeName.optional().describe(
      "the agent CLI the seat runs (a runtime of the registry, or echo): its presence card says so, and its event plane reads that CLI's session file",
    ),
    noEvents: z.boolean().optional().describe("do not publish the seat's activity on its event plane (`cotal spawn --no-events`)"),
    spawnedBy: PrincipalId.optional().describe(
      "who spawned the seat (its owner): it may answer the seat's permission asks (docs/security.md, The approve right)",
    ),
    posture: SeatPosture.optional().describe("supervised: permission asks go to people over the mesh; absent: unattended"),
    approvalTimeoutMs: z
      .number()
      .int()
      .min(1_000)
      .max(540_000)
      .optional()
      .describe("how long a permission ask waits for a person before it is denied, ms (default 5 minutes)"),
    manager: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/)
      .optional()
      .describe("the manager instance that runs the seat: where its helpers are spawned (cotal_spawn, docs/manager.md)"),
  })
  .describe("A seat's launch material (COTAL_LAUNCH_MATERIAL).");
export type LaunchMaterial = z.infer<typeof LaunchMaterial>;
