import { z } from "zod";

/**
 * How often nats-server syncs JetStream writes to disk (`jetstream { sync_interval }`, nats-server
 * ≥ 2.10). `always` (Cotal's default) fsyncs every write before it is acknowledged, so an
 * acknowledged message survives a power cut; a duration (`2m`, nats-server's own default) syncs on
 * a timer and may lose what was acknowledged within the last interval (docs/performance.md has the cost).
 */
export const DEFAULT_SYNC = "always";

const DURATION = /^([1-9]\d*)(ms|s|m|h)$/;

/** `always`, or a positive duration with one unit: `500ms`, `30s`, `2m`, `1h`. */
export const SyncInterval = z
  .string()
  .trim()
  .refine((v) => v === "always" || DURATION.test(v), {
    message: "--sync must be `always` (fsync before every acknowledgement, the default) or a duration such as 500ms, 30s, 2m or 1h",
  });
export type SyncInterval = z.infer<typeof SyncInterval>;

/** The `sync_interval` line of a `jetstream {}` block. */
export function renderSyncInterval(sync: string): string {
  return `  sync_interval: ${sync === "always" ? "always" : JSON.stringify(sync)}`;
}

/** Whether writes acknowledged under this setting survive a power cut (only `always`). */
export function syncsBeforeAck(sync: string): boolean {
  return sync === "always";
}

/** The setting as people read it; a mesh.json from before `--sync` has none (its server ran nats-server's 2-minute default). */
export function describeSync(sync: string | undefined): string {
  if (sync === undefined) return "every 2m (nats-server's default: this mesh was started before cotal set sync_interval)";
  return sync === "always"
    ? "always (fsync before every acknowledgement)"
    : `every ${sync} (acknowledged writes of the last ${sync} can be lost on a power cut)`;
}
