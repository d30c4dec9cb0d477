import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { z } from "zod";
import type { Logger } from "../broker/index.js";
import { ChannelName, PrincipalId } from "../schemas/index.js";
import { bindScope, hostHeaderAllowed, type BindScope } from "./bind.js";
import type { MeshView, Push } from "./mesh-view.js";
import { APP_CSS, APP_JS, pageHtml } from "./page.js";
import { tokenCookie, tokenProof } from "./token.js";
import { failureOf, readBody, writeRefusal, type Refusal } from "./write-gate.js";
import type { WriteMode } from "./write-routes.js";

/** Query parameters, checked at the boundary. */
const AgentQuery = z.object({ id: PrincipalId });
const ChannelQuery = z.object({
  name: ChannelName,
  limit: z.coerce.number().int().min(1).max(1_000).default(200),
});

/** Only our own files, scripts and SSE: an injected tag could neither run nor load anything. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** A running dashboard: where it listens, and how to stop it. */
export interface Dashboard {
  url: string;
  /** `url` with the token: what the starting user opens (the page then keeps it in a cookie). */
  link: string;
  port: number;
  host: string;
  close(): Promise<void>;
}

/**
 * Serve the dashboard for `view` on host:port. Live updates go to the page as server-sent events
 * (`/events`). With `writes` on, POST routes write as the person (docs/web.md, Writes), each
 * behind the write gate (write-gate.ts); read-only (the default), GET and HEAD only.
 */
export async function serveDashboard(view: MeshView, opts: { host: string; port: number; log: Logger; token: string; writes?: WriteMode }): Promise<Dashboard> {
  const checked = bindScope(opts.host);
  if ("problem" in checked) throw new Error(checked.problem);
  const scope = checked.scope;
  const clients = new Set<ServerResponse>();
  let port = opts.port;
  const server = createServer((req, res) => {
    handle(view, { scope, token: opts.token, port, writes: opts.writes ?? { kind: "read-only" } }, clients, req, res, opts.log).catch((err: unknown) => {
      // The path only: a query may hold the token, and the log must not.
      opts.log.warn({ err, path: new URL(req.url ?? "/", "http://dashboard.invalid").pathname }, "a dashboard request failed");
      if (!res.headersSent) send(res, 500, "application/json", JSON.stringify({ error: (err as Error).message }));
      else res.end();
    });
  });
  const unsubscribe = view.onPush((p) => {
    for (const res of clients) sse(res, p.type, p.type === "state" ? p.state : p.type === "post" ? p.post : { agent: p.agent, entries: p.entries });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  const shown = opts.host.includes(":") ? `[${opts.host}]` : opts.host;
  return {
    url: `http://${shown}:${port}/`,
    link: `http://${shown}:${port}/?token=${opts.token}`,
    port,
    host: opts.host,
    close: async () => {
      unsubscribe();
      for (const res of clients) res.end();
      await closeServer(server);
    },
  };
}

/** What every request is checked against: the bind scope (Host header) and the token. */
interface Gate {
  scope: BindScope;
  token: string;
  port: number;
  writes: WriteMode;
}

async function handle(view: MeshView, gate: Gate, clients: Set<ServerResponse>, req: IncomingMessage, res: ServerResponse, log: Logger): Promise<void> {
  if (!hostHeaderAllowed(req.headers.host, gate.scope))
    return send(res, 421, "text/plain", "This dashboard answers only requests for a loopback host (localhost, 127.0.0.1, [::1]).\n");
  const url = new URL(req.url ?? "/", "http://dashboard.invalid");
  if (req.method !== "GET" && req.method !== "HEAD") {
    const w = gate.writes;
    if (w.kind !== "on" || req.method !== "POST") {
      res.setHeader("Allow", w.kind === "on" ? "GET, HEAD, POST" : "GET, HEAD");
      if (w.kind === "off") return json(res, 405, { error: `The dashboard is read-only: ${w.why}` });
      return send(res, 405, "text/plain", w.kind === "on" ? "GET, HEAD or POST only.\n" : "The dashboard is read-only: GET only.\n");
    }
    return write(w, gate.token, req, res, url.pathname, log);
  }
  const proof = url.pathname === "/favicon.ico" ? "cookie" : tokenProof(req, url, gate.token, gate.port);
  if (!proof) return refuse(res, url.pathname);
  // The link's token moves into a cookie, and out of the address bar and history.
  if (proof === "query" && url.pathname === "/") {
    res.writeHead(303, { ...HEADERS, Location: "/", "Set-Cookie": tokenCookie(gate.port, gate.token) });
    return void res.end();
  }
  url.searchParams.delete("token");
  const query = Object.fromEntries(url.searchParams);
  switch (url.pathname) {
    case "/":
      // The token for the page's write header, in the page itself: only a page that holds the
      // cookie gets it, and another origin cannot read the response (docs/web.md, Writes).
      return send(res, 200, "text/html; charset=utf-8", pageHtml(gate.writes.kind === "on" ? gate.token : undefined));
    case "/app.js":
      return send(res, 200, "text/javascript; charset=utf-8", APP_JS);
    case "/app.css":
      return send(res, 200, "text/css; charset=utf-8", APP_CSS);
    case "/favicon.ico":
      res.writeHead(204, HEADERS);
      return void res.end();
    case "/api/state":
      return json(res, 200, view.state());
    case "/api/agent": {
      const q = AgentQuery.safeParse(query);
      if (!q.success) return json(res, 400, { error: `id: ${q.error.issues[0]?.message ?? "invalid"}` });
      return json(res, 200, await view.agent(q.data.id));
    }
    case "/api/channel": {
      const q = ChannelQuery.safeParse(query);
      if (!q.success) return json(res, 400, { error: q.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ") });
      try {
        return json(res, 200, { channel: q.data.name, posts: await view.channel(q.data.name, q.data.limit) });
      } catch (err) {
        return json(res, 403, { error: `not readable with this credential: ${(err as Error).message}` });
      }
    }
    case "/api/me": {
      const w = gate.writes;
      return json(
        res,
        200,
        w.kind === "on" ? { writes: "on", as: w.as, steer: w.steer } : w.kind === "off" ? { writes: "off", why: w.why } : { writes: "read-only" },
      );
    }
    case "/events": {
      res.writeHead(200, { ...HEADERS, "Content-Type": "text/event-stream", Connection: "keep-alive" });
      clients.add(res);
      req.on("close", () => clients.delete(res));
      sse(res, "backlog", view.backlog());
      sse(res, "state", view.state());
      log.debug({ clients: clients.size }, "a page connected");
      return;
    }
    default: {
      const stream = gate.writes.kind === "on" ? gate.writes.streams[url.pathname] : undefined;
      if (stream) {
        res.writeHead(200, { ...HEADERS, "Content-Type": "text/event-stream", Connection: "keep-alive" });
        const stop = stream(query, (event, data) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`));
        req.on("close", stop);
        return;
      }
      const read = gate.writes.kind === "on" ? gate.writes.reads[url.pathname] : undefined;
      if (!read) return send(res, 404, "text/plain", "Not found.\n");
      try {
        return json(res, 200, await read(query));
      } catch (err) {
        return refusal(res, failureOf(err));
      }
    }
  }
}

/** A POST: the write gate, then its route with a checked body, as the person. */
async function write(
  w: Extract<WriteMode, { kind: "on" }>,
  token: string,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  log: Logger,
): Promise<void> {
  const route = w.routes[path];
  if (!route) {
    // Not a write route: a read (or nothing) takes no POST.
    res.setHeader("Allow", "GET, HEAD");
    return send(res, 405, "text/plain", "GET or HEAD only here.\n");
  }
  const refused = writeRefusal(req, token);
  if (refused) return refusal(res, refused);
  const b = await readBody(req, route.schema);
  if ("refused" in b) return refusal(res, b.refused);
  try {
    const result = await route.run(b.body);
    log.info({ path, as: w.as }, "the dashboard wrote as the person");
    return json(res, 200, result);
  } catch (err) {
    log.warn({ err, path, as: w.as }, "a dashboard write failed");
    return refusal(res, failureOf(err));
  }
}

function refusal(res: ServerResponse, r: Refusal): void {
  json(res, r.status, { error: r.error, ...(r.code ? { code: r.code } : {}) });
}

/** No token: nothing of the mesh, only how to get in. */
function refuse(res: ServerResponse, path: string): void {
  const why = "This dashboard needs its token: open the link `cotal web` printed, or run `cotal web --url` on its host for it.";
  if (path.startsWith("/api/") || path === "/events") return json(res, 401, { error: why });
  res.setHeader("WWW-Authenticate", 'Bearer realm="cotal web"');
  send(res, 401, "text/plain; charset=utf-8", `${why}\n`);
}

const HEADERS = {
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Content-Security-Policy": CSP,
} as const;

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { ...HEADERS, "Content-Type": type });
  res.end(body);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, "application/json; charset=utf-8", JSON.stringify(body));
}

/** One server-sent event: JSON on one `data:` line (JSON.stringify never emits a raw newline). */
function sse(res: ServerResponse, event: Push["type"] | "backlog", data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
