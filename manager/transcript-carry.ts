// The manager's side of transcript carry (docs/manager.md "Transcript carry"): take an uploaded
// transcript as its chunks pass (broker/xfer-receive.ts), and from this instance's transfer stream
// what did not pass, hashing it on the way into a 0600 file; keep it only if it has the announced
// sha256, remove the broker copy and issue a one-time claim (10 minutes) that a `spawn --resume`
// presents.
import { randomBytes } from "node:crypto";
import { chmodSync, copyFileSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { callXfer, TransferReceiver, type Logger, type Received } from "../broker/index.js";
import { carryRuntime } from "../runtimes/index.js";
import { sha256File } from "../runtime/index.js";
import { CARRY_TTL_MS, CotalError, names, type Principal, type TableParsedArgs, type TableReplyData, type MANAGER_COMMANDS } from "../schemas/index.js";

type Args<C extends "carry-begin" | "carry-commit" | "carry-resolve"> = TableParsedArgs<typeof MANAGER_COMMANDS, C>;
type Reply<C extends "carry-begin" | "carry-commit" | "carry-resolve"> = TableReplyData<typeof MANAGER_COMMANDS, C>;

/** A claim that is unknown, used, expired, or for another session. */
export class ClaimRefusedError extends CotalError {
  constructor(why: string) {
    super("bad-claim", `The transcript claim ${why}; nothing was started.`, {
      remedy: "Carry the session again (`cotal spawn --detach --resume <session> --on <instance>`): it issues a fresh claim.",
    });
  }
}

/** The uploaded bytes are not the ones announced. */
export class CarryDigestError extends CotalError {
  constructor(want: string, got: string, size: number) {
    super("digest-mismatch", `The carried transcript arrived as ${size} bytes with ${got}, not ${want}; nothing was staged and the broker copy was removed.`, {
      remedy: "Carry it again; if it happens again the bytes are damaged on the way.",
    });
  }
}

/** A staged transcript: what a claim hands to a spawn. */
export interface StagedTranscript {
  session: string;
  digest: string;
  size: number;
  file: string;
}

interface Staged extends StagedTranscript {
  touched: number;
}

export interface TranscriptDeskOptions {
  /** The connection the manager serves its rail on: chunks are taken live there. */
  nc: NatsConnection;
  /** Its JetStream connection (jetStreamConnection): the transfer stream is read there. Default `nc`. */
  js?: NatsConnection;
  space: string;
  instance: string;
  stateDir: string;
  /** Who the manager calls the mesh service as (its credential's principal). */
  caller: Principal;
  log: Logger;
  /** This host's session store, where carry-resolve looks (default: the carry runtime's, e.g. CLAUDE_CONFIG_DIR or ~/.claude). */
  sessionDir?: string;
  /** Claims and staged files live this long (default CARRY_TTL_MS). */
  ttlMs?: number;
}

/**
 * Staged transcripts and their one-time claims. Claims live in memory: a restarted manager
 * honours none, and its staging folder is emptied at start (the user carries again; a re-run of
 * bytes still in the bucket sends nothing).
 */
export class TranscriptDesk {
  readonly dir: string;
  private readonly staged = new Map<string, Staged>();
  private readonly claims = new Map<string, { digest: string; session: string; expiresAt: number }>();
  /** Transfers begun here and not yet committed, by digest: their chunks are taken as they pass. */
  private readonly receiving = new Map<string, { receiver: TransferReceiver; size: number; touched: number }>();
  /** Commits under way, by digest: a second commit of the same bytes waits for the first. */
  private readonly committing = new Map<string, Promise<Staged>>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly o: TranscriptDeskOptions) {
    this.dir = join(o.stateDir, "carry");
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    this.sweeper = setInterval(() => this.sweep(), Math.min(30_000, this.ttl)).unref();
  }

  private get ttl(): number {
    return this.o.ttlMs ?? CARRY_TTL_MS;
  }

  stop(): void {
    clearInterval(this.sweeper);
    for (const r of this.receiving.values()) void r.receiver.abort();
    this.receiving.clear();
  }

  /** Drop expired claims, transfers and staged transcripts untouched for the TTL (and any partial read). */
  sweep(now = Date.now()): void {
    for (const [c, v] of this.claims) if (v.expiresAt <= now) this.claims.delete(c);
    for (const [d, r] of this.receiving) {
      if (now - Math.max(r.touched, r.receiver.active) < this.ttl) continue;
      this.receiving.delete(d);
      void r.receiver.abort();
      this.o.log.info({ digest: d }, "unfinished transfer swept");
    }
    for (const [d, s] of this.staged) {
      if (now - s.touched < this.ttl) continue;
      this.staged.delete(d);
      rmSync(s.file, { force: true });
      this.o.log.info({ digest: d, session: s.session }, "staged transcript swept");
    }
    const receiving = new Set([...this.receiving.values()].map((r) => r.receiver.file));
    for (const f of readdirSync(this.dir)) {
      const p = join(this.dir, f);
      if (f.endsWith(".part") && !receiving.has(p) && now - statSync(p).mtimeMs >= this.ttl) rmSync(p, { force: true });
    }
  }

  private claim(s: Staged): Reply<"carry-commit"> {
    s.touched = Date.now();
    const claim = randomBytes(16).toString("hex");
    const expiresAt = Date.now() + this.ttl;
    this.claims.set(claim, { digest: s.digest, session: s.session, expiresAt });
    return { claim, session: s.session, digest: s.digest, size: s.size, expiresAt };
  }

  private stage(session: string, digest: string, size: number, file: string): Staged {
    const s: Staged = { session, digest, size, file, touched: Date.now() };
    this.staged.set(digest, s);
    return s;
  }

  private file(digest: string): string {
    return join(this.dir, `${digest.slice("sha256:".length)}.jsonl`);
  }

  /**
   * These bytes staged here already (checked again: a staged file changed on disk is dropped and
   * carried anew): a fresh claim, nothing to send. Else where to upload.
   */
  async begin(a: Args<"carry-begin">): Promise<Reply<"carry-begin">> {
    let s = this.staged.get(a.digest);
    if (s && (await sha256File(s.file).catch(() => undefined)) !== s.digest) {
      this.o.log.warn({ digest: s.digest, file: s.file }, "a staged transcript changed on disk: dropped, it is carried again");
      this.staged.delete(s.digest);
      rmSync(s.file, { force: true });
      s = undefined;
    }
    if (s && s.size === a.size) return { known: true, ...this.claim(s.session === a.session ? s : this.stage(a.session, s.digest, s.size, s.file)) };
    this.receiver(a.digest, a.size);
    return { known: false, stream: names.xferStream(this.o.space, this.o.instance) };
  }

  /** The transfer of `digest` being received here (begun now, or kept from an earlier begin of the same bytes). */
  private receiver(digest: string, size: number): TransferReceiver {
    const had = this.receiving.get(digest);
    if (had && had.size === size) {
      had.touched = Date.now();
      return had.receiver;
    }
    void had?.receiver.abort();
    const receiver = new TransferReceiver({
      nc: this.o.nc,
      js: this.o.js ?? this.o.nc,
      space: this.o.space,
      instance: this.o.instance,
      digest,
      size,
      file: `${this.file(digest)}.${randomBytes(4).toString("hex")}.part`,
      log: this.o.log,
    });
    this.receiving.set(digest, { receiver, size, touched: Date.now() });
    return receiver;
  }

  /**
   * The upload is stored: take from the stream what did not pass here, and keep the file only if
   * it is the announced bytes (hashed as they were written). The broker copy goes either way.
   */
  async commit(a: Args<"carry-commit">): Promise<Reply<"carry-commit">> {
    let staging = this.committing.get(a.digest);
    if (!staging) {
      staging = this.receive(a).finally(() => this.committing.delete(a.digest));
      this.committing.set(a.digest, staging);
    }
    const s = await staging;
    return this.claim(s.session === a.session ? s : this.stage(a.session, s.digest, s.size, s.file));
  }

  private async receive(a: Args<"carry-commit">): Promise<Staged> {
    const receiver = this.receiver(a.digest, a.size);
    this.receiving.delete(a.digest);
    let got: Received;
    try {
      got = await receiver.finish();
    } catch (err) {
      await receiver.abort();
      throw err;
    }
    if (got.digest !== a.digest || got.size !== a.size) {
      await receiver.abort();
      await this.removeBrokerCopy(a.digest);
      throw new CarryDigestError(a.digest, got.digest, got.size);
    }
    renameSync(receiver.file, this.file(a.digest));
    this.o.log.info({ session: a.session, digest: a.digest, size: got.size, live: got.live }, "transcript staged");
    // Staged: the claim need not wait for the purge (a 50 MB one takes a while on a loaded host).
    void this.removeBrokerCopy(a.digest);
    return this.stage(a.session, a.digest, got.size, this.file(a.digest));
  }

  /** Purge the stream's copy of a transfer; a failure is logged (the copy expires with the stream's max age). */
  private async removeBrokerCopy(digest: string): Promise<void> {
    await callXfer(this.o.nc, this.o.space, "xfer-remove", this.o.caller, { instance: this.o.instance, digest }, { timeoutMs: 30_000 }).catch((err: unknown) =>
      this.o.log.warn({ err, digest }, "removing the broker copy failed (it expires with the stream's max age)"),
    );
  }

  /** A session on this host (its session store: Claude's config dir): stage a copy and claim it. */
  async resolve(a: Args<"carry-resolve">): Promise<Reply<"carry-resolve">> {
    const store = carryRuntime().sessions;
    const found = store.find(this.o.sessionDir ?? store.dir(process.env), a.session);
    if (!found) {
      throw new CotalError("session-not-found", `Session ${a.session} is neither on this host nor on manager ${this.o.instance}'s host; nothing was carried.`, {
        remedy: `Check the id (the session files under ${carryRuntime().sessions.dir(process.env)}), or run the command where the session's transcript is.`,
      });
    }
    const part = `${join(this.dir, a.session)}.part`;
    copyFileSync(found.file, part);
    chmodSync(part, 0o600);
    const digest = await sha256File(part);
    renameSync(part, this.file(digest));
    return this.claim(this.stage(a.session, digest, statSync(this.file(digest)).size, this.file(digest)));
  }

  /** Take a claim (once): the staged transcript it names. */
  take(claim: string | undefined, session: string): StagedTranscript {
    if (!claim) throw new ClaimRefusedError("is missing (a spawn with --resume presents the claim its carry issued)");
    const c = this.claims.get(claim);
    this.claims.delete(claim);
    if (!c || c.expiresAt <= Date.now()) throw new ClaimRefusedError("is unknown, used or expired");
    if (c.session !== session) throw new ClaimRefusedError(`is for session ${c.session}, not ${session}`);
    const s = this.staged.get(c.digest);
    if (!s) throw new ClaimRefusedError("names a transcript that is no longer staged");
    s.touched = Date.now();
    return { session, digest: s.digest, size: s.size, file: s.file };
  }

  /** The staged file of a digest, if still here (a restarted seat re-reads it). */
  stagedFile(digest: string): string | undefined {
    const s = this.staged.get(digest);
    if (s) s.touched = Date.now();
    return s?.file;
  }
}
