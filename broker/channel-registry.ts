import type { KV } from "@nats-io/kv";
import { assertChannel, CHANNEL_DEFAULTS_KEY, ChannelConfig, DEFAULT_CHANNEL_CONFIG, eventPlaneOf } from "../schemas/index.js";

/** A channel's effective settings, with where they came from. */
export interface ResolvedChannel {
  name: string;
  config: ChannelConfig;
  /** true when the channel has its own record (not only defaults). */
  configured: boolean;
}

/** The channel registry (KV cotal_channels_<space>): per-channel settings over space defaults. */
export class ChannelRegistry {
  constructor(private readonly kv: KV) {}

  /** Space-wide defaults (the `=defaults` key), or the built-in ones. */
  async defaults(): Promise<ChannelConfig> {
    const e = await this.kv.get(CHANNEL_DEFAULTS_KEY);
    if (!e || e.operation !== "PUT") return DEFAULT_CHANNEL_CONFIG;
    return { ...DEFAULT_CHANNEL_CONFIG, ...ChannelConfig.partial().parse(e.json()) };
  }

  /** The effective settings of one channel. */
  async get(channel: string): Promise<ResolvedChannel> {
    assertChannel(channel);
    const defaults = await this.defaults();
    const e = await this.kv.get(channel);
    const r: ResolvedChannel =
      !e || e.operation !== "PUT"
        ? { name: channel, config: defaults, configured: false }
        : { name: channel, config: { ...defaults, ...ChannelConfig.partial().parse(e.json()) }, configured: true };
    // An event plane is a rolling window (EVENTS_): read live and by history, never held for a member.
    if (eventPlaneOf(channel)) r.config = { ...r.config, class: "live" };
    return r;
  }

  /** Merge `patch` into a channel's settings (or the defaults, with `=defaults`). */
  async set(channel: string, patch: Partial<ChannelConfig>): Promise<ChannelConfig> {
    if (channel !== CHANNEL_DEFAULTS_KEY) assertChannel(channel);
    const current = channel === CHANNEL_DEFAULTS_KEY ? await this.defaults() : (await this.get(channel)).config;
    const next = ChannelConfig.parse({ ...current, ...patch });
    await this.kv.put(channel, JSON.stringify(next));
    return next;
  }

  /** Every configured channel. */
  async list(): Promise<ResolvedChannel[]> {
    const keys: string[] = [];
    for await (const k of await this.kv.keys()) if (k !== CHANNEL_DEFAULTS_KEY) keys.push(k);
    return Promise.all(keys.sort().map((k) => this.get(k)));
  }
}
