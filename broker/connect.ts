import { readFileSync } from "node:fs";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { assertToken, ValidationError } from "../schemas/index.js";
import { MeshUnavailableError } from "./errors.js";

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

/** Normalise a server string (accepts links) to a NATS URL. */
export function serverUrl(server: string): string {
  if (server.startsWith("cotal://")) return parseMeshLink(server).server;
  return server.includes("://") ? server : `nats://${server}`;
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

/**
 * Connect to the mesh, with a typed error that names the remedy when it fails. With a Cotal
 * credential, replies come on that identity's own inbox prefix (the only one it may read).
 */
export async function connectMesh(addr: MeshAddress): Promise<NatsConnection> {
  const servers = serverUrl(addr.server);
  const creds = addr.creds ? readFileSync(addr.creds) : undefined;
  const owner = creds ? credsPrincipal(creds) : undefined;
  const inboxPrefix = addr.inboxPrefix ?? (owner ? `_INBOX.${owner}` : undefined);
  try {
    return await connect({
      servers,
      name: addr.name ?? "cotal",
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      // Async stack traces cost a third of client CPU under load; errors here carry causes instead.
      noAsyncTraces: true,
      ...(inboxPrefix ? { inboxPrefix } : {}),
      ...(creds ? { authenticator: credsAuthenticator(creds) } : {}),
    });
  } catch (cause) {
    throw new MeshUnavailableError(servers, cause);
  }
}
