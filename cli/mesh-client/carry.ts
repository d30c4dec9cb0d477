// `cotal spawn --resume <session> --on <instance>`: find the session's transcript here, carry it to
// the target manager (docs/manager.md "Transcript carry") and return its claim.
import { stat } from "node:fs/promises";
import { credsCaller, uploadTransfer, type ControlParty } from "../../broker/index.js";
import { carryRuntime } from "../../runtimes/index.js";
import { sha256File } from "../../runtime/index.js";
import { SESSION_ID } from "../../schemas/index.js";
import { UsageError } from "../terminal/errors.js";
import { callManager } from "./manager-calls.js";
import { progressBar } from "../terminal/progress.js";
import type { MeshSession } from "./session.js";

/** What a carry did: the claim a spawn presents, and what was sent. */
export interface Carried {
  session: string;
  instance: string;
  digest: string;
  size: number;
  /** Bytes this run sent (0: the manager or the broker already held them). */
  sent: number;
  chunks: number;
  claim: string;
  /** Where the transcript was found: here, or on the manager's host. */
  from: "local" | "manager";
}

/** The line a carry ends with. */
export function carriedLine(c: Carried): string {
  if (c.from === "manager") return `session ${c.session} found on ${c.instance}'s host: ${c.digest}, ${c.size} bytes, nothing sent`;
  return `carried session ${c.session} to ${c.instance}: ${c.digest}, ${c.sent} of ${c.size} bytes sent in ${c.chunks} chunks`;
}

/**
 * Refuse what is not a session id: a name is looked up among the titles of the transcripts here
 * and refused with the candidates (id, sha256, modification time), so the user picks the id.
 */
export async function requireSessionId(arg: string, configDir: string): Promise<void> {
  if (SESSION_ID.test(arg)) return;
  const candidates = await carryRuntime().sessions.named(configDir, arg);
  if (candidates.length === 0) {
    throw new UsageError(`${JSON.stringify(arg)} is not a session id, and no session under ${configDir} is titled like it.`, {
      remedy: "Pass the session's id (the UUID its transcript file is named by).",
    });
  }
  const rows = candidates.map((c) => `  ${c.session}  ${c.digest}  ${c.mtime}  ${c.title.slice(0, 60)}`);
  throw new UsageError(
    `${JSON.stringify(arg)} is a session name, not an id; ${candidates.length === 1 ? "this session matches" : `these ${candidates.length} sessions match`}:\n${rows.join("\n")}`,
    {
      remedy: "Pass the id of the one you mean to --resume.",
    },
  );
}

/**
 * Carry a transcript file to `instance`: hash it, ask the manager whether it holds these bytes
 * (then nothing is sent; else it starts taking the chunks as they pass), upload what the broker
 * does not hold yet, and have the manager check and stage it. Resolves with the one-time claim.
 */
export async function carryFile(
  party: ControlParty,
  t: { instance: string; session: string; file: string },
  onProgress?: (stored: number, size: number) => void,
): Promise<Carried> {
  const size = (await stat(t.file)).size;
  const digest = await sha256File(t.file);
  const call = { target: t.instance, timeoutMs: 120_000 };
  const begun = await callManager(party.nc, party.space, "carry-begin", party.me, { session: t.session, digest, size }, call);
  const base = { session: t.session, instance: t.instance, digest, size, from: "local" as const };
  if (begun.known) return { ...base, sent: 0, chunks: 0, claim: begun.claim };
  const up = await uploadTransfer(party, { instance: t.instance, file: t.file, digest, size }, (stored) => onProgress?.(stored, size));
  const staged = await callManager(party.nc, party.space, "carry-commit", party.me, { session: t.session, digest, size }, call);
  return { ...base, sent: up.sent, chunks: up.chunks, claim: staged.claim };
}

/**
 * Find `arg` under this user's Claude config dir and carry it to `instance`; a session not here is
 * resolved on the manager's host (carry-resolve). A name, or an id found twice, is refused.
 */
export async function carrySession(s: MeshSession, arg: string, instance: string, opts: { bar: boolean }): Promise<Carried> {
  const store = carryRuntime().sessions;
  const configDir = store.dir(process.env);
  await requireSessionId(arg, configDir);
  const party = { nc: s.nc, space: s.target.space, me: credsCaller(s.target.creds) };
  const found = store.find(configDir, arg);
  if (!found) {
    const r = await callManager(s.nc, s.target.space, "carry-resolve", party.me, { session: arg }, { target: instance, timeoutMs: 60_000 });
    return { session: arg, instance, digest: r.digest, size: r.size, sent: 0, chunks: 0, claim: r.claim, from: "manager" };
  }
  const bar = progressBar("carrying", found.size, opts.bar);
  try {
    return await carryFile(party, { instance, session: arg, file: found.file }, (stored) => bar.update(stored));
  } finally {
    bar.stop();
  }
}
