// Framing of mesh mail injected into a model's context. Everything a peer controls (body, names,
// roles, channel labels, ids) is neutralised so it can neither start a line of its own nor open
// or close a bracket: every body line carries the connector's gutter, and brackets, angle
// brackets, control, bidi and invisible tag characters are replaced by visible look-alikes.
import type { Part } from "../schemas/index.js";

/** Prefix of every line of peer text. Peer text never starts a line. */
export const GUTTER = "│ ";
/** Opening of every attribution line (only the connector writes one). */
export const HEADER_OPEN = "[cotal ";

/** One message as the framer needs it. Sender, kind and channel come from the subject. */
export interface FrameInput {
  kind: "dm" | "anycast" | "channel";
  /** Sender principal id, `<owner>.<actor>`. */
  from: string;
  /** The sender's role, if it declared one. */
  fromRole?: string;
  /** Who really sent it on the sender's behalf (the operator's `--impersonate`). */
  sentBy?: string;
  /** The role an anycast was addressed to. */
  toRole?: string;
  channel?: string;
  id: string;
  /** Send time as the sender stamped it (epoch ms; shown as ISO 8601). */
  ts: number;
  parts: readonly Part[];
  /** The agent may have seen it already (a redelivery, or a hand-over that was not confirmed). */
  possibleRepeat?: boolean;
  /** Backfilled from channel history at join, not received live. */
  historical?: boolean;
  /** The post mentions this agent. */
  mentionsYou?: boolean;
}

const NEWLINE = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Replace lone surrogates (invalid UTF-16) with U+FFFD. */
function wellFormed(s: string): string {
  return s.replace(LONE_SURROGATE, "\uFFFD");
}

const REPLACE: Record<string, string> = {
  "[": "\uFF3B", // ［
  "]": "\uFF3D", // ］
  "<": "\uFF1C", // ＜
  ">": "\uFF1E", // ＞
  "\u007F": "\u2421", // ␡
};

/** Invisible or direction-changing format characters (bidi overrides, zero-width, BOM, …). */
function isInvisibleFormat(cp: number): boolean {
  return (
    cp === 0x061c ||
    cp === 0x200b ||
    cp === 0x200e ||
    cp === 0x200f ||
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2060 && cp <= 0x2064) ||
    (cp >= 0x2066 && cp <= 0x2069) ||
    cp === 0xfeff ||
    (cp >= 0xe0000 && cp <= 0xe007f) // tag characters: invisible "ASCII smuggling"
  );
}

/**
 * Neutralise one line of peer text (it must hold no newline; see {@link neutralizeText}).
 * Tabs become spaces when `inline`, so a label cannot carry layout either.
 */
function neutralizeSegment(s: string, inline: boolean): string {
  let out = "";
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    const mapped = REPLACE[ch];
    if (mapped !== undefined) out += mapped;
    else if (cp === 0x09) out += inline ? " " : "\t";
    else if (cp < 0x20)
      out += String.fromCharCode(0x2400 + cp); // control pictures ␀…␟
    else if (cp >= 0x80 && cp <= 0x9f) out += "\uFFFD";
    else if (isInvisibleFormat(cp)) out += "\uFFFD";
    else out += ch;
  }
  return out;
}

/** Neutralise a label (name, role, channel, id): one line, no brackets, no controls; at most `max` characters. */
export function neutralizeInline(text: string, max = 200): string {
  const flat = neutralizeSegment(wellFormed(text).split(NEWLINE).join("\u2424"), true); // ␤
  const chars = Array.from(flat);
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : flat;
}

/** Neutralise multi-line peer text into lines (without the gutter). */
export function neutralizeText(text: string): string[] {
  return wellFormed(text)
    .split(NEWLINE)
    .map((l) => neutralizeSegment(l, false));
}

function describePart(p: Part): string[] {
  switch (p.kind) {
    case "text":
      return neutralizeText((p as { text: string }).text);
    case "data": {
      const d = p as { data: unknown; mediaType?: string };
      const media = d.mediaType ? ` ${neutralizeInline(d.mediaType, 80)}` : "";
      return [`(data${media}) ${neutralizeInline(JSON.stringify(d.data) ?? "null", 100_000)}`];
    }
    case "artifact": {
      const a = p as { name: string; mediaType: string; size: number; digest: string; bucket?: string };
      const where = a.bucket ? `, in ${neutralizeInline(a.bucket, 120)}` : "";
      return [`(artifact ${neutralizeInline(a.name, 120)}, ${neutralizeInline(a.mediaType, 80)}, ${a.size} bytes, ${neutralizeInline(a.digest, 71)}${where})`];
    }
    default: {
      const { kind, ...fields } = p;
      const size = Buffer.byteLength(JSON.stringify(fields));
      return [`(extension ${neutralizeInline(kind, 80)}, ${size} bytes of fields)`];
    }
  }
}

/** Epoch ms as ISO 8601 (a time no Date can hold reads as `?`). */
function isoTime(ms: number): string {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? "?" : d.toISOString();
}

/** The attribution line of a message: kind, sender, channel or role, time, id, flags. */
export function frameHeader(m: FrameInput, extra?: string): string {
  const from = neutralizeInline(m.from, 140);
  const role =
    (m.fromRole ? ` (role ${neutralizeInline(m.fromRole, 64)})` : "") + (m.sentBy ? ` (sent by the operator ${neutralizeInline(m.sentBy, 140)})` : "");
  let what: string;
  if (m.kind === "dm") what = `DM from ${from}${role}`;
  else if (m.kind === "anycast") what = `anycast to role ${neutralizeInline(m.toRole ?? "?", 64)} from ${from}${role}`;
  else what = `#${neutralizeInline(m.channel ?? "?", 255)} from ${from}${role}`;
  const flags = [
    m.mentionsYou ? "mentions you" : "",
    m.historical ? "from history" : "",
    m.possibleRepeat ? "possible repeat" : "",
    extra ? neutralizeInline(extra, 80) : "",
  ].filter((f) => f !== "");
  const tail = flags.length ? ` · ${flags.join(" · ")}` : "";
  return `${HEADER_OPEN}${what} · ${isoTime(m.ts)} · id ${neutralizeInline(m.id, 128)}${tail}]`;
}

/** The body lines of a message, each starting with the gutter. */
export function frameBody(m: Pick<FrameInput, "parts">): string[] {
  const lines = m.parts.flatMap(describePart);
  return (lines.length ? lines : [""]).map((l) => (l === "" ? GUTTER.trimEnd() : GUTTER + l));
}

/** One framed entry: the attribution line, then the gutter-prefixed body. */
export function frameMessage(m: FrameInput): string {
  return [frameHeader(m), ...frameBody(m)].join("\n");
}

/**
 * Split a framed message into parts of at most `maxChars` characters each (header included),
 * for replies too small to hold it whole. Long lines are cut (on code points) and continued
 * on a new gutter line; every part starts with the attribution line marked `part i/n`.
 */
export function frameParts(m: FrameInput, maxChars: number): string[] {
  const headerRoom = frameHeader(m, "part 9999/9999").length + 1;
  const room = Math.max(200, maxChars - headerRoom);
  const lines: string[] = [];
  for (const line of frameBody(m)) {
    if (line.length <= room) {
      lines.push(line);
      continue;
    }
    const cps = Array.from(line.slice(GUTTER.length));
    const step = room - GUTTER.length;
    for (let i = 0; i < cps.length; i += step) lines.push(GUTTER + cps.slice(i, i + step).join(""));
  }
  const chunks: string[][] = [];
  let cur: string[] = [];
  let size = 0;
  for (const l of lines) {
    if (cur.length && size + l.length + 1 > room) {
      chunks.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(l);
    size += l.length + 1;
  }
  if (cur.length) chunks.push(cur);
  return chunks.map((c, i) => [frameHeader(m, `part ${i + 1}/${chunks.length}`), ...c].join("\n"));
}

/** Strip characters that must never reach a frame even from the connector's own lines. */
export function safeLabel(text: string, max = 200): string {
  return neutralizeInline(text, max);
}
