import { closeSync, fstatSync, openSync, readFileSync } from "node:fs";
import { AuthorizationError, connect, createInbox, UserAuthenticationExpiredError, type Authenticator, type NatsConnection } from "@nats-io/transport-node";
import { assertToken, CotalError, parsePrincipal, ValidationError, type Principal } from "../schemas/index.js";
import { SERVICE_PRINCIPALS } from "./auth/permissions.js";
import { nkeyFromSeed } from "./auth/native-nkeys.js";
import { InsecureSecretError } from "./auth/secret-files.js";
import { AuthenticationRefusedError, MeshUnavailableError } from "./errors.js";
import { RenewalWait } from "./renewal-wait.js";

/** Where a mesh is and how to authenticate to it. */
export interface MeshAddress {
  /** `nats://host:port`, `host:port`, or a `cotal://host:port/space` link. */
  server: string;
  /** Path of a `.creds` file; absent on open meshes. */
  creds?: string | undefined;
  /** Connection name shown by the server (monitoring, logs). */
  name?: string | undefined;
  /** Reply-inbox prefix; identities may only subscribe to their own (`_INBOX.<owner>.<actor>`). */
  inboxPrefix?: string | undefined;
  /**
   * A long-lived service whose `creds` file another process renews (the host manager): when the
   * server refuses its credential because it expired, keep presenting the file until it holds a
   * renewed one, instead of closing (broker/renewal-wait.ts).
   */
  awaitRenewal?: boolean | undefined;
}

/** A parsed `cotal://host:port/space` link. */
export interface MeshLink {
  server: string;
  space: string;
}

/** Parse a `cotal://host:port/space` link into a NATS URL and a space. */
export function parseMeshLink(link: string): MeshLink {
  let url: URL;
  try {
    url = new URL(link);
  } catch (cause) {
    throw new ValidationError("mesh link", [`${JSON.stringify(link)} is not a URL; use cotal://host:port/space`], { cause });
  }
  if (url.protocol !== "cotal:") throw new ValidationError("mesh link", [`${JSON.stringify(link)} must start with cotal://`]);
  const space = decodeURIComponent(url.pathname.replace(/^\//, ""));
  assertToken("space", "space", space);
  return { server: `nats://${url.hostname}:${url.port || "4222"}`, space };
}

/** Normalise a server string (accepts links) to a NATS URL; a comma-separated list (a cluster's nodes) stays a list. */
export function serverUrl(server: string): string {
  return serverUrls(server).join(",");
}

/**
 * Every server a connection may use: `a:4222,b:4222` (how `cotal up --cluster` records its nodes)
 * names several, so a client whose node is lost reconnects to another (it also learns the rest
 * of the cluster from the server it reached).
 */
export function serverUrls(server: string): string[] {
  return server
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => (s.startsWith("cotal://") ? parseMeshLink(s).server : s.includes("://") ? s : `nats://${s}`));
}

/**
 * The principal a `.creds` file was minted for (its user JWT's name, `<owner>.<actor>`), or
 * undefined when the file is not a Cotal credential.
 */
export function credsPrincipal(creds: Uint8Array): string | undefined {
  const m = /-----BEGIN NATS USER JWT-----\s*([A-Za-z0-9_.-]+)\s*-+END/.exec(new TextDecoder().decode(creds));
  const payload = m?.[1]?.split(".")[1];
  if (!payload) return undefined;
  try {
    const name = (JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { name?: unknown }).name;
    return typeof name === "string" && /^[A-Za-z0-9_]+\.[A-Za-z0-9_]+$/.test(name) ? name : undefined;
  } catch {
    return undefined;
  }
}

/** A credentials file that cannot be read, or is not a NATS user credential. */
export class InvalidCredsError extends CotalError {
  constructor(
    readonly file: string,
    reason: string,
    cause?: unknown,
  ) {
    super("invalid-creds", `The credential file ${file} is not a valid NATS credential: ${reason}.`, {
      remedy: "Pass a .creds file written by `cotal mint` (--creds / COTAL_CREDS); on the mesh host, `cotal up` rewrites its own.",
      cause,
    });
  }
}

const JWT_BLOCK = /-----BEGIN NATS USER JWT-----\s*?\n\s*([^\s]+)\s*\n\s*------END NATS USER JWT------/;
const SEED_BLOCK = /-----BEGIN USER NKEY SEED-----\s*?\n\s*([^\s]+)\s*\n\s*------END USER NKEY SEED------/;

function decodeSegment(segment: string | undefined): Record<string, unknown> | undefined {
  if (!segment || !/^[A-Za-z0-9_-]+$/.test(segment)) return undefined;
  try {
    const v: unknown = JSON.parse(Buffer.from(segment, "base64url").toString("utf8"));
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Why `bytes` is not a NATS user credential (a user JWT and the matching user seed), or
 * undefined when it is one. Checked before connecting, so a broken file is reported as such
 * and not as an unreachable server.
 */
export function credsProblem(bytes: Uint8Array): string | undefined {
  const text = new TextDecoder().decode(bytes);
  const jwt = JWT_BLOCK.exec(text)?.[1];
  if (!jwt) return "it has no NATS USER JWT block";
  const [header, payload, sig] = jwt.split(".");
  const h = decodeSegment(header);
  const p = decodeSegment(payload);
  if (!h || !p || !sig || jwt.split(".").length !== 3 || h.typ !== "JWT") return "its user JWT is malformed";
  const seed = SEED_BLOCK.exec(text)?.[1];
  if (!seed) return "it has no USER NKEY SEED block";
  let pub: string;
  try {
    pub = nkeyFromSeed(seed).getPublicKey();
  } catch {
    return "its user seed is malformed";
  }
  if (!pub.startsWith("U")) return "its seed is not a user seed";
  if (typeof p.sub === "string" && p.sub !== pub) return "its seed does not belong to its JWT";
  return undefined;
}

/**
 * Read a `.creds` file for connecting: refused when other users could read it (it holds a
 * seed), when it is missing, or when it is not a NATS user credential.
 */
export function readCredsFile(file: string): Buffer {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    throw new InvalidCredsError(file, code === "ENOENT" ? "there is no such file" : `it cannot be read (${code ?? "error"})`, cause);
  }
  let bytes: Buffer;
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new InvalidCredsError(file, "it is not a file");
    const mode = st.mode & 0o7777;
    if (mode & 0o077) throw new InsecureSecretError(file, mode, 0o600);
    bytes = readFileSync(fd);
  } finally {
    closeSync(fd);
  }
  const problem = credsProblem(bytes);
  if (problem) throw new InvalidCredsError(file, problem);
  return bytes;
}

/**
 * The authenticator of a connection made with a `.creds` file: the file is read again at every
 * (re)connect, so a credential renewed in place (a seat's, by its manager; the host manager's, by
 * `cotal up`) is what the next connection presents, and when the server closes a connection whose
 * JWT expired the client comes back on the renewed one (docs/security.md, Credential lifetime and
 * renewal). A file that cannot be read at that moment (removed with a retired seat's folder) leaves
 * the last bytes read: the server judges them.
 */
export function credsFileAuthenticator(file: string, first: Uint8Array, presented?: (creds: Uint8Array) => void): Authenticator {
  let last = first;
  return (nonce?: string) => {
    try {
      last = readCredsFile(file);
    } catch {
      // Keep the last good bytes: a refusal then comes from the server, with its reason.
    }
    presented?.(last);
    // Once per connect: the JWT and the seed come from the same read.
    return credsBytesAuthenticator(last)(nonce);
  };
}

/**
 * The authenticator of a credential's bytes: its JWT, its public key and the server's nonce signed
 * with its seed. nats.js's own does the same through tweetnacl, in JavaScript, run cold in a short
 * `cotal` process; this signs with node:crypto (auth/native-nkeys.ts).
 */
export function credsBytesAuthenticator(creds: Uint8Array): Authenticator {
  return (nonce?: string) => {
    const text = new TextDecoder().decode(creds);
    const jwt = JWT_BLOCK.exec(text)?.[1];
    const seed = SEED_BLOCK.exec(text)?.[1];
    if (!jwt || !seed) throw new InvalidCredsError("in use", credsProblem(creds) ?? "it cannot be parsed");
    const kp = nkeyFromSeed(seed);
    const sig = nonce ? Buffer.from(kp.sign(new TextEncoder().encode(nonce))).toString("base64") : "";
    return { jwt, nkey: kp.getPublicKey(), sig };
  };
}

/**
 * A fresh inbox under the connection's own inbox prefix (what connectMesh set): the only one its
 * credential may subscribe to. nats.js has the prefix at run time, not in its types.
 */
export function ownInbox(nc: NatsConnection): string {
  return createInbox((nc as NatsConnection & { options?: { inboxPrefix?: string } }).options?.inboxPrefix);
}

/**
 * Connect to the mesh, with a typed error that names the remedy when it fails. With a Cotal
 * credential, replies come on that identity's own inbox prefix (the only one it may read), and
 * every reconnect reads the credential file again (credsFileAuthenticator).
 */
export async function connectMesh(addr: MeshAddress): Promise<NatsConnection> {
  const list = serverUrls(addr.server);
  const servers = list.join(",");
  const creds = addr.creds ? readCredsFile(addr.creds) : undefined;
  const owner = creds ? credsPrincipal(creds) : undefined;
  const inboxPrefix = addr.inboxPrefix ?? (owner ? `_INBOX.${owner}` : undefined);
  const wait = creds && addr.creds && addr.awaitRenewal ? new RenewalWait(addr.creds, creds, (c) => credsExpired(c, CLOCK_SKEW_MS)) : undefined;
  try {
    const nc = await connect({
      servers: list,
      name: addr.name ?? "cotal",
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      // Async stack traces cost a third of client CPU under load; errors here carry causes instead.
      noAsyncTraces: true,
      ...(inboxPrefix ? { inboxPrefix } : {}),
      ...(creds && addr.creds ? { authenticator: credsFileAuthenticator(addr.creds, creds, (c) => wait?.present(c)) } : {}),
      ...wait?.options(),
    });
    wait?.watch(nc);
    return nc;
  } catch (cause) {
    if (cause instanceof AuthorizationError || cause instanceof UserAuthenticationExpiredError) {
      // The server says only "Authorization Violation": what the credential itself shows is the best reason.
      const reason = !creds ? "no-credential" : cause instanceof UserAuthenticationExpiredError || credsExpired(creds) ? "expired" : "refused";
      throw new AuthenticationRefusedError(servers, reason, cause);
    }
    throw new MeshUnavailableError(servers, cause);
  }
}

/** What a credential's user JWT says of itself (unverified: the server is the judge). */
export interface CredsClaims {
  /** The principal id (`<owner>.<actor>`). */
  name?: string;
  /** The user's public key (revocations name it). */
  sub?: string;
  /** Expiry, seconds since the epoch. */
  exp?: number;
  /** When it was signed, seconds since the epoch. */
  iat?: number;
  /** Cotal's tags: `cotal-space:<space>`, `cotal-profile:<profile>` (credentials minted since #12). */
  tags: string[];
  /** Subjects it may publish on. */
  pubAllow: string[];
  /** Subjects it may subscribe to. */
  subAllow: string[];
}

/**
 * How far a server's clock may run ahead of this host's: a credential within this of its expiry,
 * refused, is taken as expired (RenewalWait waits for its renewal rather than closing).
 */
const CLOCK_SKEW_MS = 5_000;

/** Whether a credential's own expiry has passed, or passes within `slackMs`. */
function credsExpired(creds: Uint8Array, slackMs = 0): boolean {
  const exp = credsClaims(creds)?.exp;
  return exp !== undefined && exp * 1000 <= Date.now() + slackMs;
}

/** Decode the user JWT of a `.creds` file's bytes; undefined when there is none. */
export function credsClaims(creds: Uint8Array): CredsClaims | undefined {
  const p = decodeSegment(JWT_BLOCK.exec(new TextDecoder().decode(creds))?.[1]?.split(".")[1]);
  if (!p) return undefined;
  const nats = (p.nats ?? {}) as { tags?: unknown; pub?: { allow?: unknown }; sub?: { allow?: unknown } };
  const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
  return {
    ...(typeof p.name === "string" ? { name: p.name } : {}),
    ...(typeof p.sub === "string" ? { sub: p.sub } : {}),
    ...(typeof p.exp === "number" ? { exp: p.exp } : {}),
    ...(typeof p.iat === "number" ? { iat: p.iat } : {}),
    tags: strings(nats.tags),
    pubAllow: strings(nats.pub?.allow),
    subAllow: strings(nats.sub?.allow),
  };
}

/** The principal id a `.creds` file was minted for (undefined: no file, or not a Cotal credential). */
export function credsFileOwner(creds: string | undefined): string | undefined {
  return creds ? credsPrincipal(readFileSync(creds)) : undefined;
}

/** Who a connection made with `creds` is on the control rail: the credential's principal, else the host's CLI. */
export function credsCaller(creds: string | undefined): Principal {
  const id = credsFileOwner(creds);
  return id ? parsePrincipal(id) : SERVICE_PRINCIPALS.cli;
}
