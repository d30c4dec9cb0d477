import type { Delivery, ProvisionReport, RosterEntry } from "../../broker/index.js";
import { ArtifactPart, messageText, principalId, type ChannelConfig, type CotalMessage } from "../../schemas/index.js";
import { formatDuration } from "../../schemas/index.js";
import { ago, clock, oneLine, table } from "./output.js";

/** "created 8", "up to date", "created 2, updated 1". */
export function formatProvision(p: ProvisionReport): string {
  const parts = [p.created.length ? `created ${p.created.length}` : "", p.updated.length ? `updated ${p.updated.length}` : ""].filter(Boolean);
  return parts.length ? `streams and buckets: ${parts.join(", ")}` : "streams and buckets up to date";
}

/** A sender as people should read it: `alice`, or `alice (sent by the operator local.cotal_cli)`. */
export function senderLabel(m: Pick<CotalMessage, "from" | "sentBy">): string {
  return `${oneLine(m.from.name)}${m.sentBy ? ` (sent by the operator ${oneLine(m.sentBy)})` : ""}`;
}

/** A message's attached files, ` [build.log, 5242880 bytes, sha256:…]` each: what `cotal fetch <digest>` reads. */
export function attachmentsLabel(m: Pick<CotalMessage, "parts">): string {
  return m.parts
    .flatMap((p) => {
      const a = ArtifactPart.safeParse(p);
      return a.success ? [` [${oneLine(a.data.name)}, ${a.data.size} bytes, ${a.data.digest}]`] : [];
    })
    .join("");
}

/** One line for a delivered message, e.g. `12:00:01 #general alice: hi` or `… dm alice: hi`. */
export function formatDelivery(d: Pick<Delivery, "message" | "kind" | "channel" | "role" | "historical" | "possibleRepeat">): string {
  const who = senderLabel(d.message);
  const files = attachmentsLabel(d.message);
  const text = (oneLine(messageText(d.message)) || (files ? "" : `(${d.message.parts.map((p) => p.kind).join(", ")})`)) + files;
  const where = d.kind === "channel" ? `#${oneLine(d.channel ?? "?")}` : d.kind === "dm" ? "dm" : `ask ${oneLine(d.role ?? "?")}`;
  const flags = [d.historical ? "[history]" : "", d.possibleRepeat ? "[repeat?]" : ""].filter(Boolean).join(" ");
  const mentions = d.message.mentions?.length ? ` (mentions ${d.message.mentions.map(oneLine).join(", ")})` : "";
  return `${flags ? flags + " " : ""}${clock(d.message.ts)} ${where} ${who}: ${text}${mentions}`;
}

/** A delivery as one JSON object (for `listen --json`). */
export function deliveryJson(d: Delivery): Record<string, unknown> {
  return {
    type: "message",
    kind: d.kind,
    from: principalId(d.from),
    ...(d.channel !== undefined ? { channel: d.channel } : {}),
    ...(d.role !== undefined ? { role: d.role } : {}),
    source: d.source,
    historical: d.historical,
    possibleRepeat: d.possibleRepeat,
    ...(d.seq !== undefined ? { seq: d.seq } : {}),
    text: messageText(d.message),
    message: d.message,
  };
}

/** A roster row as printed by `--json`. */
export interface RosterRow {
  id: string;
  name: string;
  role?: string;
  /** The agent CLI the seat runs (`claude`, `codex`, `echo`, …), as its card says. */
  runtime?: string;
  status: string;
  /** The condition's code (e.g. `rate_limit`), while one is set. */
  condition?: string;
  activity?: string;
  attention: string;
  channels: string[];
  /** Last presence write, ISO 8601. */
  lastSeen: string;
  lastSeenAgoMs: number;
}

/** A roster row as JSON. */
export function rosterJson(e: RosterEntry, now = Date.now()): RosterRow {
  return {
    id: e.id,
    name: e.name,
    ...(e.role ? { role: e.role } : {}),
    ...(e.presence.card.runtime ? { runtime: e.presence.card.runtime } : {}),
    status: e.status,
    ...(e.presence.condition ? { condition: e.presence.condition.code } : {}),
    ...(e.presence.activity ? { activity: e.presence.activity } : {}),
    attention: e.presence.attention,
    channels: e.presence.channels,
    lastSeen: new Date(e.seenAt).toISOString(),
    lastSeenAgoMs: Math.max(0, now - e.seenAt),
  };
}

/** The roster as an aligned table (`cotal status`): name, role, runtime, status, activity, last seen. */
export function rosterTable(rows: RosterRow[]): string[] {
  return table(
    ["NAME", "ROLE", "RUNTIME", "STATUS", "ACTIVITY", "SEEN"],
    rows.map((r) => [
      oneLine(r.name),
      oneLine(r.role ?? "-"),
      oneLine(r.runtime ?? "-"),
      r.condition && r.status !== "offline" ? `${r.status} (${r.condition})` : r.status,
      oneLine(r.activity ?? "-"),
      ago(r.lastSeenAgoMs),
    ]),
  );
}

/** A channel config as table cells: class, replay, window, description. */
export function channelRow(name: string, c: ChannelConfig, configured: boolean): string[] {
  return [name, c.class, c.replay ? "yes" : "no", formatDuration(c.windowSeconds * 1000), oneLine(c.description ?? (configured ? "-" : "(defaults)"))];
}
