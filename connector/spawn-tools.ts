// The helper tools (docs/connector.md, Helpers): offered only to a seat whose
// credential carries the spawn right. cotal_personas lists what it may spawn, cotal_spawn starts a
// helper, cotal_despawn retires one, cotal_handover makes another agent (or the operator) answer
// for one. The manager checks every request against the seat's grant; the broker refuses a
// credential without the right before any manager sees it.
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { ChannelName, OpeningPrompt, PrincipalId, PrincipalToken, RoleName, SeatAgent } from "../schemas/index.js";
import type { HelperDesk } from "./helpers.js";
import * as text from "./model-text.js";

/** How the tool module closes an argument object (tools.ts `closed`: unknown and identity keys refused). */
export type Closer = <T extends z.ZodRawShape>(tool: string, shape: T) => z.ZodObject<T>;
type Domain = (what: string, fn: () => Promise<CallToolResult>) => Promise<CallToolResult>;

const ok = (t: string): CallToolResult => ({ content: [{ type: "text", text: t }] });

/** A helper's name, as cotal_spawn answered it or cotal_roster shows it (bare actor). */
const HelperName = PrincipalToken.describe("The helper's seat name (as cotal_spawn answered it).");

export function registerSpawnTools(server: McpServer, desk: HelperDesk, closed: Closer, domain: Domain): void {
  server.registerTool(
    "cotal_personas",
    {
      description:
        "List the personas (agent files) you may spawn helpers of with cotal_spawn: each one's seat name, runtime, role and channels, or why it cannot be spawned; and how many helpers you hold of your limit.",
      inputSchema: closed("cotal_personas", {}),
    },
    () => domain("list the personas you may spawn", async () => ok(text.personasText(await desk.personas()))),
  );

  server.registerTool(
    "cotal_spawn",
    {
      description:
        "Start a helper seat of a persona you may spawn (cotal_personas lists them) on your manager. It answers to you: it never reads, posts or takes a role beyond what you may, " +
        "it counts against your helper limit and the budget caps, and it retires when you are retired unless you hand it over (cotal_handover).",
      inputSchema: closed("cotal_spawn", {
        persona: PrincipalToken.describe("The persona (agent file) to spawn."),
        helper: PrincipalToken.optional().describe("Its seat name (default: the agent file's name; a taken name gets _2, _3…)."),
        channels: z.array(ChannelName).max(64).optional().describe("Channels it joins (default: its agent file's); each must be one you may read and post on."),
        role: RoleName.optional().describe("Its role (default: its agent file's); only your own."),
        model: z.string().min(1).max(200).optional().describe("Its model (default: its agent file's)."),
        prompt: OpeningPrompt.optional(),
        runtime: SeatAgent.optional().describe("echo (runs no model, for trials) or the persona's own runtime (the default)."),
      }),
    },
    ({ persona, helper, channels, role, model, prompt, runtime }) =>
      domain(`spawn a helper of ${persona}`, async () => {
        const r = await desk.spawn({
          persona,
          ...(runtime ? { agent: runtime } : {}),
          ...(helper ? { name: helper } : {}),
          ...(channels ? { channels } : {}),
          ...(role ? { role } : {}),
          ...(model ? { model } : {}),
          ...(prompt ? { prompt } : {}),
        });
        return ok(text.spawnedText(r, persona));
      }),
  );

  server.registerTool(
    "cotal_despawn",
    {
      description: "Retire a helper you spawned (or were handed): its process stops, its credential is revoked, its name is free.",
      inputSchema: closed("cotal_despawn", { helper: HelperName }),
    },
    ({ helper }) => domain(`retire ${helper}`, async () => ok(text.despawnedText(helper, await desk.despawn(helper)))),
  );

  server.registerTool(
    "cotal_handover",
    {
      description:
        "Hand a helper you answer for over, so it outlives you: to another agent allowed to spawn its persona (within that agent's limit and scope), or, with no `to`, to the operator.",
      inputSchema: closed("cotal_handover", {
        helper: HelperName,
        to: PrincipalId.optional().describe("The agent that answers for it from now on, <owner>.<actor> (default: the operator)."),
      }),
    },
    ({ helper, to }) => domain(`hand ${helper} over`, async () => ok(text.handedOverText(helper, await desk.handover(helper, to)))),
  );
}
