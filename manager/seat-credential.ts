import { existsSync, readFileSync } from "node:fs";
import type { NatsConnection } from "@nats-io/transport-node";
import type { z } from "zod";
import { awaitCredentialCarried, credsClaims, fixedDelays, MeshServiceUnavailableError, requestCredential, retry, writeSecret } from "../broker/index.js";
import { describeIssues, MESH_COMMANDS, parsePrincipal, type Principal } from "../schemas/index.js";

/**
 * How long a seat's credential lives (default 30 days, the longest the mesh service signs for a
 * manager's credential). The manager mints it again while the seat runs, once less than a third of
 * its life is left (docs/security.md, Credential lifetime and renewal).
 */
export const SEAT_CREDS_LIFETIME_MS = 30 * 24 * 3600_000;

/** What a seat's credential was minted for: asked again, as it was, at each renewal. */
export const SeatMint = MESH_COMMANDS.mint.args.omit({ userPub: true, expiresInMs: true, provision: true });
export type SeatMint = z.infer<typeof SeatMint>;

/** The file beside a seat's `.creds` that keeps its mint request (0600, like the credential). */
export function seatMintFile(credsFile: string): string {
  return credsFile.replace(/\.creds$/, ".mint.json");
}

/** Who mints, where, and for how long. */
export interface SeatMinter {
  space: string;
  /** The manager's credential's principal (default: the operator's tool). */
  caller?: Principal | undefined;
  /** Lifetime asked for (default SEAT_CREDS_LIFETIME_MS; the mesh service caps a manager's at 30 days). */
  lifetimeMs?: number | undefined;
  /** The server the seat connects to: a mint through a leaf host waits there until the hub carries the seat. */
  server?: string | undefined;
}

/**
 * Mint a seat's credential and write it, with the request that made it, atomically and 0600
 * (writeSecret: a seat reading its file at a reconnect sees the old bytes or the new, never half).
 * Returns when it expires (Unix ms; undefined: never, as an older mesh service signs for the operator).
 */
export async function mintSeatCredential(nc: NatsConnection, o: SeatMinter, credsFile: string, mint: SeatMint): Promise<number | undefined> {
  const { creds, reply } = await withRetryOnNoAnswer(() =>
    requestCredential(nc, o.space, { ...mint, expiresInMs: o.lifetimeMs ?? SEAT_CREDS_LIFETIME_MS }, o.caller),
  );
  writeSecret(seatMintFile(credsFile), `${JSON.stringify(SeatMint.parse(mint))}\n`);
  writeSecret(credsFile, creds);
  // On a leaf host whose scope just widened to this seat: it starts once the hub carries its name.
  if (reply.leafReconnect && o.server) await awaitCredentialCarried(o.server, credsFile, o.space, parsePrincipal(reply.principal));
  return reply.expiresAt;
}

/**
 * A mint through a leaf host can lose its answer: another seat's mint there remakes the host's
 * connection to the hub at that moment (leaf-scope.ts). It is asked again, with a new key (the
 * unanswered credential was never seen by anyone and expires unused), twice at most.
 */
function withRetryOnNoAnswer<T>(call: () => Promise<T>): Promise<T> {
  return retry(call, { delays: fixedDelays([0, 0, 0]), retryable: (err) => err instanceof MeshServiceUnavailableError });
}

/**
 * When a credential file is due for renewal: once less than a third of its life (signed to expiry)
 * is left. Undefined for a credential that never expires or cannot be read.
 */
export function renewalDueAt(credsFile: string): number | undefined {
  let claims;
  try {
    claims = credsClaims(readFileSync(credsFile));
  } catch {
    return undefined;
  }
  if (claims?.exp === undefined || claims.iat === undefined) return undefined;
  const life = claims.exp - claims.iat;
  return (claims.exp - life / 3) * 1000;
}

/** The mint request kept beside a seat's credential; undefined for a seat minted before it was kept. */
export function readSeatMint(credsFile: string): SeatMint | undefined {
  const file = seatMintFile(credsFile);
  if (!existsSync(file)) return undefined;
  const r = SeatMint.safeParse(JSON.parse(readFileSync(file, "utf8")));
  if (!r.success) throw new Error(`${file} is not a seat's mint request: ${describeIssues(r.error).join("; ")}`);
  return r.data;
}

/** What a renewal check did. */
export type Renewal = "renewed" | "not-due" | "no-request";

/**
 * Renew a running seat's credential when it is due: the same request minted again, written over its
 * file; the seat's connection reads the file at its next reconnect (broker connectMesh), at the
 * latest when the server closes it as its old credential expires. The old credential is not revoked:
 * it expires by itself, so the revocation list gains nothing. `no-request`: due, but its mint request
 * was not kept (a seat an older manager started): it lapses at its expiry.
 */
export async function renewSeatCredential(nc: NatsConnection, o: SeatMinter, credsFile: string, now = Date.now()): Promise<Renewal> {
  const due = renewalDueAt(credsFile);
  if (due === undefined || now < due) return "not-due";
  const mint = readSeatMint(credsFile);
  if (!mint) return "no-request";
  await mintSeatCredential(nc, o, credsFile, mint);
  return "renewed";
}

/** How often a manager looks for credentials due: a twelfth of their lifetime, between 250 ms and a minute. */
export function renewalCheckMs(lifetimeMs = SEAT_CREDS_LIFETIME_MS): number {
  return Math.min(60_000, Math.max(250, Math.floor(lifetimeMs / 12)));
}
