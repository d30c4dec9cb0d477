// Claude session transcripts on disk (docs/manager.md "Transcript carry": `<config>/projects/<cwd with
// non-alphanumerics as '-'>/<session>.jsonl`): finding one by id, refusing names and duplicates,
// hashing, and copying one into a seat's private config dir with its hash checked.
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream, lstatSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { CotalError, SESSION_ID } from "../schemas/index.js";
import { sha256File } from "../runtime/index.js";

/** The Claude config dir of an environment: CLAUDE_CONFIG_DIR, else `~/.claude`. */
export function claudeConfigDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  return env.CLAUDE_CONFIG_DIR || path.join(env.HOME || os.homedir(), ".claude");
}

/** The project folder name Claude uses for a cwd: every non-alphanumeric character becomes `-`. */
export function projectDirName(cwd: string): string {
  return cwd.replace(/[^A-Za-z0-9]/g, "-");
}

/** One session transcript found on disk. */
export interface SessionFile {
  session: string;
  file: string;
  size: number;
  mtimeMs: number;
}

/** The session could not be found, or the argument is not a session id. */
export class SessionLookupError extends CotalError {
  constructor(code: "session-not-found" | "session-ambiguous" | "not-a-session-id", message: string, remedy: string) {
    super(code, message, { remedy });
  }
}

/** Every regular `<id>.jsonl` under `<config>/projects/*\/` (symlinks and other kinds skipped). */
export function listSessions(configDir: string): SessionFile[] {
  const projects = path.join(configDir, "projects");
  const out: SessionFile[] = [];
  let dirs: string[];
  try {
    dirs = readdirSync(projects);
  } catch {
    return out;
  }
  for (const d of dirs) {
    const dir = path.join(projects, d);
    if (!lstatSync(dir).isDirectory()) continue;
    for (const f of readdirSync(dir)) {
      const session = f.slice(0, -".jsonl".length);
      if (!f.endsWith(".jsonl") || !SESSION_ID.test(session)) continue;
      const st = lstatSync(path.join(dir, f));
      if (st.isFile()) out.push({ session, file: path.join(dir, f), size: st.size, mtimeMs: st.mtimeMs });
    }
  }
  return out;
}

/**
 * The session `id` under `configDir`: undefined when absent; refused when found twice (two
 * projects hold the same id: which one is meant cannot be told).
 */
export function findSession(configDir: string, id: string): SessionFile | undefined {
  const found = listSessions(configDir).filter((s) => s.session === id);
  if (found.length > 1) {
    throw new SessionLookupError(
      "session-ambiguous",
      `Session ${id} is in ${found.length} projects: ${found.map((s) => s.file).join(", ")}; nothing was carried.`,
      "Remove or move the copy you do not mean, then carry it again.",
    );
  }
  return found[0];
}

/** The titles a transcript gives itself (`summary` and `custom-title` records), from its first 256 KiB. */
async function titlesOf(file: string): Promise<string[]> {
  const fh = await open(file, "r");
  try {
    const buf = Buffer.alloc(256 * 1024);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    const titles: string[] = [];
    for (const line of buf.subarray(0, bytesRead).toString("utf8").split("\n")) {
      if (!line.includes("summary") && !line.includes("title")) continue;
      try {
        const r = JSON.parse(line) as { type?: string; summary?: unknown; customTitle?: unknown; title?: unknown };
        for (const t of [r.summary, r.customTitle, r.title]) if (typeof t === "string") titles.push(t);
      } catch {
        /* a torn or partial line: not a title */
      }
    }
    return titles;
  } finally {
    await fh.close();
  }
}

/** A session that matches a name, for the refusal that lists candidates. */
export interface SessionCandidate {
  session: string;
  digest: string;
  mtime: string;
  title: string;
}

/** Sessions whose title contains `name` (case-insensitive), newest first, at most 20. */
export async function sessionsNamed(configDir: string, name: string): Promise<SessionCandidate[]> {
  const want = name.toLowerCase();
  const out: SessionCandidate[] = [];
  for (const s of listSessions(configDir).sort((a, b) => b.mtimeMs - a.mtimeMs)) {
    const title = (await titlesOf(s.file)).find((t) => t.toLowerCase().includes(want));
    if (title !== undefined) out.push({ session: s.session, digest: await sha256File(s.file), mtime: new Date(s.mtimeMs).toISOString(), title });
    if (out.length >= 20) break;
  }
  return out;
}

/** The staged transcript does not have the bytes that were carried: the fork would name other bytes. */
export class TranscriptMismatchError extends CotalError {
  constructor(session: string, want: string, got: string) {
    super(
      "transcript-mismatch",
      `The transcript of session ${session} has ${got}, not the carried ${want}: its fork would read other bytes, so the seat was refused.`,
      {
        remedy: "Carry the session again (`cotal spawn --detach --resume <session> --on <instance>`).",
      },
    );
  }
}

/**
 * Copy a staged transcript into a seat's Claude config dir where `claude --resume <session>` finds
 * it (`<config>/projects/<cwd mangled>/<session>.jsonl`, 0600), hashing what is copied: bytes that
 * are not `digest` are refused (TranscriptMismatchError) and the copy removed. Without `file` (a
 * restarted seat), the copy already placed is checked instead.
 */
export async function placeTranscript(configDir: string, cwd: string, t: { session: string; file?: string | undefined; digest: string }): Promise<string> {
  const dir = path.join(configDir, "projects", projectDirName(cwd));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const dest = path.join(dir, `${t.session}.jsonl`);
  if (t.file === undefined) {
    // A restart: the copy placed at the first start must still be the carried bytes.
    const got = await sha256File(dest).catch(() => "absent");
    if (got !== t.digest) throw new TranscriptMismatchError(t.session, t.digest, got);
    return dest;
  }
  const hash = createHash("sha256");
  await pipeline(
    createReadStream(t.file),
    async function* (source: AsyncIterable<Buffer>) {
      for await (const chunk of source) {
        hash.update(chunk);
        yield chunk;
      }
    },
    createWriteStream(dest, { mode: 0o600 }),
  );
  const got = `sha256:${hash.digest("hex")}`;
  if (got !== t.digest) {
    rmSync(dest, { force: true });
    throw new TranscriptMismatchError(t.session, t.digest, got);
  }
  return dest;
}

/**
 * Where a seat that carries `t` resumes. Its first start (`file` given) places the carried copy and
 * forks it (`--resume <carried> --fork-session`); a restart checks the copy and continues the
 * seat's own fork, the newest other session in the project folder (`--resume <fork>`), so a
 * crash does not throw away what the seat did since; with no fork yet it forks again.
 */
export async function carriedResume(
  configDir: string,
  cwd: string,
  t: { session: string; file?: string | undefined; digest: string },
): Promise<{ session: string; fork: boolean }> {
  const dest = await placeTranscript(configDir, cwd, t);
  if (t.file !== undefined) return { session: t.session, fork: true };
  const dir = path.dirname(dest);
  const forks = readdirSync(dir)
    .map((f) => f.slice(0, -".jsonl".length))
    .filter((id) => id !== t.session && SESSION_ID.test(id) && lstatSync(path.join(dir, `${id}.jsonl`)).isFile())
    .map((id) => ({ id, mtimeMs: lstatSync(path.join(dir, `${id}.jsonl`)).mtimeMs }))
    .sort((a, b) => b.mtimeMs - a.mtimeMs);
  return forks[0] ? { session: forks[0].id, fork: false } : { session: t.session, fork: true };
}
