import type { z } from "zod";
import { DmBody, InboxReadBody, PostBody, type PersonWriter } from "./writes.js";

/** One write route: its body's schema, and what it does with a checked body. */
export interface WriteRoute<S extends z.ZodType = z.ZodType> {
  schema: S;
  run(body: z.infer<S>): Promise<unknown>;
}

function route<S extends z.ZodType>(schema: S, run: (body: z.infer<S>) => Promise<unknown>): WriteRoute {
  return { schema, run: run as (body: unknown) => Promise<unknown> };
}

/**
 * What the dashboard may do, and as whom (docs/web.md): `read-only` (`cotal web --read-only`: no
 * write route at all), `off` (no person credential: read-only, and the page says why), or `on`:
 * the POST routes by path, and the person's inbox, every one as `as`.
 */
export type WriteMode =
  | { kind: "read-only" }
  | { kind: "off"; why: string }
  | { kind: "on"; as: string; routes: Record<string, WriteRoute>; reads: Record<string, ReadRoute>; streams: Record<string, StreamRoute>; steer: boolean };

/**
 * A GET route that streams server-sent events (a seat's terminal): started with the query and a
 * way to push one event; returns how to stop when the page goes.
 */
export type StreamRoute = (query: Record<string, string>, push: (event: string, data: unknown) => void) => () => void;

/** A GET route of the writing dashboard (the person's inbox, the open asks, what may be spawned), by path. */
export type ReadRoute = (query: Record<string, string>) => Promise<unknown>;

/** The person's reads: their inbox and its unread count. */
export function personReads(w: PersonWriter): Record<string, ReadRoute> {
  return {
    "/api/inbox": () => w.inbox(),
    "/api/inbox/count": async () => ({ unread: await w.unread() }),
  };
}

/** The person's routes: post, DM, mark read. */
export function personRoutes(w: PersonWriter): Record<string, WriteRoute> {
  return {
    "/api/post": route(PostBody, (b) => w.post(b)),
    "/api/dm": route(DmBody, (b) => w.dm(b)),
    "/api/inbox/read": route(InboxReadBody, (b) => w.markRead(b.seqs)),
  };
}

/** A route's body schema, for the routes the other modules add (steer, approvals). */
export { route as writeRoute };
