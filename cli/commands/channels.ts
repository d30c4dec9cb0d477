import type { Command } from "commander";
import { z } from "zod";
import { CHANNEL_DEFAULTS_KEY, type ChannelConfig } from "../../schemas/index.js";
import { postCounts } from "../../web/index.js";
import { jsonOption, meshOptions, resolveTarget } from "../mesh-client/mesh-target.js";
import { isPermissionDenied } from "../../broker/index.js";
import { requireProfile, UsageError } from "../terminal/errors.js";

const CONFIGURE = "change channel settings (only the mesh host's operator credential can; run `cotal channels` there)";
import { channelRow } from "../terminal/format.js";
import { printJson, printLines, table } from "../terminal/output.js";
import { withSession } from "../mesh-client/session.js";
import { channelName, duration, parseInput } from "../terminal/validate.js";

const SettingFlags = z.object({
  replay: z.boolean().optional(),
  window: duration.optional().refine((ms) => ms === undefined || ms >= 1000, "window must be at least 1s"),
  class: z.enum(["live", "durable"], { message: "class must be live or durable" }).optional(),
  description: z.string().max(1000, "description must be at most 1000 characters").optional(),
  instructions: z.string().max(4000, "instructions must be at most 4000 characters").optional(),
  json: z.boolean().optional(),
});

function patchOf(f: z.infer<typeof SettingFlags>): Partial<ChannelConfig> {
  return {
    ...(f.replay !== undefined ? { replay: f.replay } : {}),
    ...(f.window !== undefined ? { windowSeconds: Math.round(f.window / 1000) } : {}),
    ...(f.class !== undefined ? { class: f.class } : {}),
    ...(f.description !== undefined ? { description: f.description } : {}),
    ...(f.instructions !== undefined ? { instructions: f.instructions } : {}),
  };
}

function settingOptions(cmd: Command): Command {
  return cmd
    .option("--replay", "show joiners recent history")
    .option("--no-replay", "do not show joiners history")
    .option("--window <duration>", "how far back joiners see history, e.g. 24h")
    .option("--class <class>", "live (at-most-once, online only) or durable (held for members while away)")
    .option("--description <text>", "what the channel is for")
    .option("--instructions <text>", "shown to agents when they join");
}

/** `cotal channels list|set|defaults`: the channel registry. */
export function registerChannels(program: Command): void {
  const channels = program
    .command("channels")
    .summary("list channels and change their settings")
    .description("The channel registry: each channel's replay, window, class and description, over space-wide defaults.");

  const list = channels.command("list").description("list configured channels and channels with stored posts");
  jsonOption(meshOptions(list)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(z.object({ json: z.boolean().optional() }), raw);
    const target = resolveTarget(raw);
    const result = await withSession(target, async (s) => {
      const registry = await s.channels();
      const defaults = await registry.defaults();
      const configured = await s.configuredChannels();
      // Post counts need the stream's info, which only the operator's credential may read.
      const posts = await (s.mayReadStreams ? postCounts(s.jsm, target.space) : Promise.resolve(undefined)).catch((err: unknown) => {
        if (isPermissionDenied(err)) return undefined;
        throw err;
      });
      const all = new Set([...configured.map((c) => c.name), ...(posts?.keys() ?? [])]);
      const rows = await Promise.all([...all].sort().map((n) => configured.find((c) => c.name === n) ?? registry.get(n)));
      return { defaults, channels: rows.map((r) => ({ ...r, posts: posts ? (posts.get(r.name) ?? 0) : null })) };
    });
    if (f.json) {
      printJson(result);
      return;
    }
    printLines(
      ...table(
        ["CHANNEL", "CLASS", "REPLAY", "WINDOW", "POSTS", "DESCRIPTION"],
        [
          withPosts(channelRow("(defaults)", result.defaults, true), "-"),
          ...result.channels.map((c) => withPosts(channelRow(c.name, c.config, c.configured), c.posts === null ? "-" : String(c.posts))),
        ],
      ),
    );
  });

  const set = settingOptions(channels.command("set").description("change a channel's settings").argument("<name>", "channel name"));
  jsonOption(meshOptions(set)).action(async (name: string, raw: Record<string, unknown>) => {
    const f = parseInput(SettingFlags.extend({ name: channelName }), { ...raw, name }, { name: "<name>" });
    const patch = patchOf(f);
    if (Object.keys(patch).length === 0) {
      throw new UsageError("Nothing to set.", { remedy: "Pass at least one of --replay, --no-replay, --window, --class, --description, --instructions." });
    }
    const target = resolveTarget(raw);
    requireProfile(target.creds, ["operator"], CONFIGURE);
    const config = await withSession(target, async (s) => (await s.channels()).set(f.name, patch));
    if (f.json) printJson({ name: f.name, config });
    else printLines(...table(["CHANNEL", "CLASS", "REPLAY", "WINDOW", "DESCRIPTION"], [channelRow(f.name, config, true)]));
  });

  const defaults = settingOptions(
    channels.command("defaults").description("show or change the space-wide defaults every channel without its own setting uses"),
  );
  jsonOption(meshOptions(defaults)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(SettingFlags, raw);
    const patch = patchOf(f);
    const target = resolveTarget(raw);
    if (Object.keys(patch).length) requireProfile(target.creds, ["operator"], CONFIGURE);
    const config = await withSession(target, async (s) => {
      const registry = await s.channels();
      return Object.keys(patch).length ? registry.set(CHANNEL_DEFAULTS_KEY, patch) : registry.defaults();
    });
    if (f.json) printJson(config);
    else printLines(...table(["CHANNEL", "CLASS", "REPLAY", "WINDOW", "DESCRIPTION"], [channelRow("(defaults)", config, true)]));
  });
}

function withPosts(row: string[], posts: string): string[] {
  return [...row.slice(0, 4), posts, ...row.slice(4)];
}
