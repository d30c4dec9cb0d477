import type { IncomingMessage } from "node:http";
import type { z } from "zod";
import { CotalError } from "../schemas/index.js";
import { isPermissionDenied } from "../broker/index.js";
import { tokenMatches } from "./token.js";

/** The largest body a write accepts, bytes. */
const MAX_BODY = 256 * 1024;

/** A refused or failed request: the status and what the page shows. */
export interface Refusal {
  status: number;
  error: string;
  code?: string;
}

/**
 * Whether a write may run (docs/web.md, Writes): its `Origin` is the dashboard's own (a browser
 * always sends it on a cross-origin request, so a page elsewhere is refused 403 even though the
 * browser would add the dashboard's cookie), and it carries the token in a header, which only a
 * page the dashboard served can read (the cookie alone is what a cross-site request would carry).
 */
export function writeRefusal(req: IncomingMessage, token: string): Refusal | undefined {
  const origin = req.headers.origin;
  const own = `http://${req.headers.host ?? ""}`;
  if (origin !== undefined && origin !== own) return { status: 403, error: `cross-site request refused: Origin ${origin} is not this dashboard (${own}).` };
  if (!tokenMatches(headerToken(req), token))
    return {
      status: 401,
      error: "a write needs the dashboard's token in a header (Authorization: Bearer TOKEN or X-Cotal-Token: TOKEN); the cookie alone is not enough.",
    };
  if (origin === undefined) return { status: 403, error: `a write needs an Origin header naming this dashboard (${own}).` };
  const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") return { status: 415, error: `a write's body must be JSON (Content-Type: application/json; got ${type || "none"}).` };
  return undefined;
}

function headerToken(req: IncomingMessage): string | undefined {
  const auth = req.headers.authorization;
  if (auth?.startsWith("Bearer ")) return auth.slice(7).trim();
  const x = req.headers["x-cotal-token"];
  return typeof x === "string" ? x.trim() : undefined;
}

/** Read a JSON body and check it against `schema`: the value, or a 400 naming each wrong field. */
export async function readBody<S extends z.ZodType>(req: IncomingMessage, schema: S): Promise<{ body: z.infer<S> } | { refused: Refusal }> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_BODY) return { refused: { status: 413, error: `the body is larger than ${MAX_BODY} bytes.` } };
    chunks.push(c);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return { refused: { status: 400, error: "the body is not JSON." } };
  }
  const r = schema.safeParse(raw);
  if (!r.success) return { refused: { status: 400, error: r.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; ") } };
  return { body: r.data };
}

/** A write that failed, as the page shows it: a broker or manager refusal verbatim, with its code. */
export function failureOf(err: unknown): Refusal {
  if (isPermissionDenied(err)) return { status: 403, error: `the broker refused it for this credential: ${(err as Error).message}`, code: "permission-denied" };
  if (err instanceof CotalError) return { status: 422, error: err.message, code: err.code };
  return { status: 500, error: (err as Error)?.message ?? String(err) };
}
