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

/** Connect to the mesh, with a typed error that names the remedy when it fails. */
export async function connectMesh(addr: MeshAddress): Promise<NatsConnection> {
  const servers = serverUrl(addr.server);
  try {
    return await connect({
      servers,
      name: addr.name ?? "cotal",
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      // Async stack traces cost a third of client CPU under load; errors here carry causes instead.
      noAsyncTraces: true,
      ...(addr.inboxPrefix ? { inboxPrefix: addr.inboxPrefix } : {}),
      ...(addr.creds ? { authenticator: credsAuthenticator(readFileSync(addr.creds)) } : {}),
    });
  } catch (cause) {
    throw new MeshUnavailableError(servers, cause);
  }
}
