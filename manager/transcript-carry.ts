// The manager's side of transcript carry (docs/manager.md "Transcript carry"): read
// an uploaded transcript from this instance's transfer bucket through the mesh service, verify
// its sha256, stage it 0600 under the state dir, remove the broker copy and issue a one-time
// claim (10 minutes) that a `spawn --resume` presents.
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, copyFileSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { callXfer, readTransfer, type Logger } from "../broker/index.js";
import { claudeConfigDir, findSession, sha256File } from "../claude/index.js";
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
    super(
      "digest-mismatch",
      `The carried transcript read back as ${size} bytes with ${got}, not ${want}; nothing was staged and the broker copy was removed.`,
      {
        remedy: "Carry it again; if it happens again the bytes are damaged on the way.",
      },
    );
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
  nc: NatsConnection;
  space: string;
  instance: string;
  stateDir: string;
  /** Who the manager calls the mesh service as (its credential's principal). */
  caller: Principal;
  log: Logger;
  /** This host's Claude config dir, where carry-resolve looks (default CLAUDE_CONFIG_DIR or ~/.claude). */
  claudeConfigDir?: string;
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
  }

  /** Drop expired claims and staged transcripts untouched for the TTL (and any partial read). */
  sweep(now = Date.now()): void {
    for (const [c, v] of this.claims) if (v.expiresAt <= now) this.claims.delete(c);
    for (const [d, s] of this.staged) {
      if (now - s.touched < this.ttl) continue;
      this.staged.delete(d);
      rmSync(s.file, { force: true });
      this.o.log.info({ digest: d, session: s.session }, "staged transcript swept");
    }
    for (const f of readdirSync(this.dir)) {
      const p = join(this.dir, f);
      if (f.endsWith(".part") && now - statSync(p).mtimeMs >= this.ttl) rmSync(p, { force: true });
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
    return { known: false, bucket: names.xferBucket(this.o.space, this.o.instance) };
  }

  /** Read the uploaded object, hash it while writing a 0600 `.part`, keep it only if it is the announced bytes. */
  async commit(a: Args<"carry-commit">): Promise<Reply<"carry-commit">> {
    const party = { nc: this.o.nc, space: this.o.space, me: this.o.caller };
    const t = { instance: this.o.instance, digest: a.digest };
    const part = `${this.file(a.digest)}.${randomBytes(4).toString("hex")}.part`;
    const hash = createHash("sha256");
    const fh = await open(part, "wx", 0o600);
    let size: number;
    try {
      size = await readTransfer(party, t, async (chunk) => {
        hash.update(chunk);
        await fh.write(chunk);
      });
    } catch (err) {
      await fh.close();
      rmSync(part, { force: true });
      throw err;
    }
    await fh.close();
    const got = `sha256:${hash.digest("hex")}`;
    // The broker copy goes either way: staged here, or not the bytes announced.
    await callXfer(party.nc, party.space, "xfer-remove", party.me, t, { timeoutMs: 30_000 }).catch((err: unknown) =>
      this.o.log.warn({ err, digest: a.digest }, "removing the broker copy failed (it expires with the bucket's max age)"),
    );
    if (got !== a.digest || size !== a.size) {
      rmSync(part, { force: true });
      throw new CarryDigestError(a.digest, got, size);
    }
    renameSync(part, this.file(a.digest));
    this.o.log.info({ session: a.session, digest: a.digest, size }, "transcript staged");
    return this.claim(this.stage(a.session, a.digest, size, this.file(a.digest)));
  }

  /** A session on this host (its Claude config dir): stage a copy and claim it. */
  async resolve(a: Args<"carry-resolve">): Promise<Reply<"carry-resolve">> {
    const found = findSession(this.o.claudeConfigDir ?? claudeConfigDir(), a.session);
    if (!found) {
      throw new CotalError("session-not-found", `Session ${a.session} is neither on this host nor on manager ${this.o.instance}'s host; nothing was carried.`, {
        remedy: "Check the id (`ls ~/.claude/projects/*/`), or run the command where the session's transcript is.",
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
