import { z } from "zod";

/** live: core delivery only (at-most-once); durable: plus a per-member durable consumer. */
export const ChannelClass = z.enum(["live", "durable"]);
export type ChannelClass = z.infer<typeof ChannelClass>;

/** A channel's settings (KV cotal_channels_<space>, key = channel name; `=defaults` for all). */
export const ChannelConfig = z
  .object({
    replay: z.boolean().describe("whether a joiner is shown recent history"),
    windowSeconds: z.number().int().positive().describe("how far back joiners see history"),
    class: ChannelClass,
    description: z.string().max(1000).optional(),
    instructions: z.string().max(4000).optional().describe("shown to agents when they join"),
  })
  .describe("Settings of a channel.");
export type ChannelConfig = z.infer<typeof ChannelConfig>;

/** The key under which space-wide defaults are stored. */
export const CHANNEL_DEFAULTS_KEY = "=defaults";

/** Defaults when neither the channel nor the space sets anything: durable, 24 h replay. */
export const DEFAULT_CHANNEL_CONFIG: ChannelConfig = {
  replay: true,
  windowSeconds: 24 * 3600,
  class: "durable",
};
