// An OpenCode-family session as the event plane reads it (docs/events.md). OpenCode 1.18.33 keeps
// its sessions in SQLite (`opencode/opencode.db` in its data folder, in WAL mode; Kilo Code 7.7.7
// `kilo/kilo.db`), which Node 20 cannot read without a native or WASM dependency (and a WASM reader
// would miss what is still in the WAL). Cotal's plugin sees the same session live, as the CLI's
// events, so it writes a journal of it: one JSON line per transcript record
// (runtime/transcript-record.ts: Claude's shape), which the connector tails like any transcript.
// This maps what the plugin sees to those records. Tool arguments and results are never read: a
// call keeps its name and id, its end only its id.
//
// Pure (no I/O) and node-free: it is bundled into the plugin, which runs under the CLI's Bun.
import type { TranscriptRecord } from "../transcript-record.js";

/** A bus event of the CLI as a plugin's `event` hook gets it (the fields read here). */
export interface OpencodeEvent {
  type: string;
  properties?: Record<string, unknown>;
}

/** A part of a message, as `message.part.updated` carries it (1.18.33; only these fields are read). */
interface Part {
  id?: unknown;
  messageID?: unknown;
  type?: unknown;
  text?: unknown;
  synthetic?: unknown;
  ignored?: unknown;
  time?: { end?: unknown };
  tool?: unknown;
  callID?: unknown;
  state?: { status?: unknown };
}

/** What one session's journal has written so far (so an updated part is journaled once). */
interface SessionState {
  /** Prompts sent and not yet journaled, oldest first: each is journaled when OpenCode answers it (or an answer to a later one comes, or the turn ends). */
  prompts: Array<{ id: string; text: string; at: string }>;
  /** Assistant message ids (`message.updated`, role assistant): only their parts are the model's. */
  assistant: Set<string>;
  /** Text parts written. */
  texts: Set<string>;
  /** Text parts seen, not yet complete: written at the turn's end if they never complete (an aborted stream). */
  partial: Map<string, string>;
  /** Tool calls started, and ended. */
  started: Set<string>;
  ended: Set<string>;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/**
 * The journal's records for one OpenCode session at a time, in the order OpenCode emits its
 * events: `prompt` for a prompt of a main session (the person's or the manager's text; the mail a
 * hook added is not in it), `event` for each bus event of a main session, `turnEnded` when the
 * session goes idle or fails.
 *
 * OpenCode takes a prompt (and runs `chat.message`) as soon as it is sent, even while it is still
 * answering an earlier one; an answer names its prompt (an assistant message's `parentID`). So a
 * prompt is journaled when its answer starts: the plane's turns are the turns OpenCode ran, and a
 * prompt sent mid-turn does not cut the running one in two.
 */
export class SessionJournal {
  private readonly sessions = new Map<string, SessionState>();

  constructor(private readonly now: () => Date = () => new Date()) {}

  /** A prompt about to be sent: the user record that opens the turn. */
  prompt(sessionID: string, messageID: string, text: string): TranscriptRecord[] {
    const s = this.state(sessionID);
    if (text.trim() !== "") s.prompts.push({ id: messageID, text, at: this.at() });
    return [];
  }

  /** The records one bus event stands for (none for most). */
  event(e: OpencodeEvent): TranscriptRecord[] {
    const p = e.properties ?? {};
    const sessionID = str(p.sessionID);
    if (!sessionID) return [];
    if (e.type === "message.updated") {
      const info = p.info as { id?: unknown; role?: unknown; parentID?: unknown } | undefined;
      const id = str(info?.id);
      if (!id || info?.role !== "assistant") return [];
      const s = this.state(sessionID);
      if (s.assistant.has(id)) return [];
      s.assistant.add(id);
      // Its prompt, and any sent before it, are journaled now (before any of its parts).
      const upTo = s.prompts.findIndex((q) => q.id === str(info.parentID));
      return this.promptsUpTo(s, upTo);
    }
    const s = this.sessions.get(sessionID);
    if (e.type !== "message.part.updated" || !s) return [];
    const part = (p.part ?? {}) as Part;
    const id = str(part.id);
    const messageID = str(part.messageID);
    if (!id || !messageID || !s.assistant.has(messageID)) return [];
    if (part.type === "text") {
      const text = str(part.text);
      if (!text || part.synthetic === true || part.ignored === true || s.texts.has(id)) return [];
      // Written once complete (a streamed text part is updated as it grows).
      if (part.time?.end === undefined) {
        s.partial.set(id, text);
        return [];
      }
      return this.text(s, id, text);
    }
    if (part.type === "tool") {
      const callID = str(part.callID);
      if (!callID) return [];
      const out: TranscriptRecord[] = [];
      if (!s.started.has(callID)) {
        s.started.add(callID);
        const name = str(part.tool) ?? "tool";
        out.push({ type: "assistant", uuid: id, timestamp: this.at(), message: { role: "assistant", content: [{ type: "tool_use", id: callID, name }] } });
      }
      const status = part.state?.status;
      if ((status === "completed" || status === "error") && !s.ended.has(callID)) {
        s.ended.add(callID);
        out.push({ type: "user", uuid: `${id}:end`, timestamp: this.at(), message: { role: "user", content: [{ type: "tool_result", tool_use_id: callID }] } });
      }
      return out;
    }
    return [];
  }

  /**
   * The session's turn ended (`session.idle`: finished; `session.error`: failed): any text that
   * never completed, then the record that closes the run. The session's bookkeeping starts over
   * (a part updated after its turn ended is not journaled). Nothing for a session with no turn.
   */
  turnEnded(sessionID: string, how: "finished" | "failed"): TranscriptRecord[] {
    const s = this.sessions.get(sessionID);
    if (!s) return [];
    const out = [...s.partial].flatMap(([id, text]) => this.text(s, id, text));
    // Prompts nothing answered (a failed turn's, or ones OpenCode folded into a later answer).
    out.push(...this.promptsUpTo(s, s.prompts.length - 1));
    const uuid = `${sessionID}:end:${this.now().getTime()}`;
    out.push(
      how === "finished"
        ? { type: "assistant", uuid, timestamp: this.at(), message: { role: "assistant", content: [], stop_reason: "end_turn" } }
        : { type: "assistant", uuid, timestamp: this.at(), isApiErrorMessage: true, message: { role: "assistant", content: [] } },
    );
    this.sessions.delete(sessionID);
    return out;
  }

  /** Journal the waiting prompts up to index `upTo` (none when it is -1). */
  private promptsUpTo(s: SessionState, upTo: number): TranscriptRecord[] {
    return s.prompts.splice(0, upTo + 1).map((q) => ({ type: "user", uuid: q.id, timestamp: q.at, message: { role: "user", content: q.text } }));
  }

  private text(s: SessionState, id: string, text: string): TranscriptRecord[] {
    s.partial.delete(id);
    s.texts.add(id);
    return [{ type: "assistant", uuid: id, timestamp: this.at(), message: { role: "assistant", content: [{ type: "text", text }] } }];
  }

  private state(sessionID: string): SessionState {
    let s = this.sessions.get(sessionID);
    if (!s) {
      s = { prompts: [], assistant: new Set(), texts: new Set(), partial: new Map(), started: new Set(), ended: new Set() };
      this.sessions.set(sessionID, s);
    }
    return s;
  }

  private at(): string {
    return this.now().toISOString();
  }
}

/** A session id safe as a file name (OpenCode's are `ses_` and base62); anything else gets no journal. */
export const JOURNAL_SESSION = /^[A-Za-z0-9_-]{1,128}$/;
