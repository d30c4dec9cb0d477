// The seat's hook socket: a unix socket in the per-user control directory that hooks talk to
// (also the custody lock), and optionally a loopback HTTP listener. Every request carries the
// per-launch token, compared in constant time; anything else is refused. ("Control" in Cotal
// names the mesh's request/reply rail; this socket only serves the session's hooks.)
import { createHash, timingSafeEqual } from "node:crypto";
import { chmodSync, statSync, unlinkSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { takeLockFile, type Logger } from "../broker/index.js";
import { CustodyHeldError } from "./errors.js";
import { DEFAULTS } from "./config.js";
import { frameLine, LineSplitter } from "./ndjson.js";
import type { SeatPaths } from "./paths.js";
import { HookConfirm, HookRequest, MAX_FRAME_BYTES, parseLine, PROTOCOL_VERSION, trimPayload, type HookResponse } from "./protocol.js";

/** How a hook reached the connector: the socket can hand mail over (a receipt), HTTP cannot. */
export interface HookVia {
  transport: "socket" | "http";
  canHandOver: boolean;
}

/** What the connector answers one hook run with; `receipt` marks a reply that hands mail over. */
export interface HookAnswer {
  reply: Record<string, unknown>;
  receipt?: string;
}

/** What the connector does with an authenticated hook request. */
export interface HookHandler {
  /**
   * Handle one hook run. `receipt` marks a reply that hands mail over: the connector acks it
   * only when the hook confirms the reply was written (`confirm`), and releases it otherwise.
   * Over HTTP no receipt is possible, so `canHandOver` is false there.
   */
  handle(req: HookRequest, via: HookVia): Promise<HookAnswer>;
  confirm(receipt: string): Promise<void>;
  release(receipt: string, why: string): void;
}

/** Constant-time token comparison (digests first, so lengths never leak or throw). */
export function tokenMatches(expected: string, presented: unknown): boolean {
  if (typeof presented !== "string") return false;
  const a = createHash("sha256").update(expected).digest();
  const b = createHash("sha256").update(presented).digest();
  return timingSafeEqual(a, b) && presented.length === expected.length;
}

function probe(socket: string, timeoutMs = 1_000): Promise<"live" | "stale"> {
  return new Promise((resolve) => {
    const c = net.connect(socket);
    const done = (r: "live" | "stale") => {
      clearTimeout(timer);
      c.destroy();
      resolve(r);
    };
    // A holder that accepts the connection is alive; one that never answers is treated as alive too.
    const timer = setTimeout(() => done("live"), timeoutMs);
    c.once("connect", () => done("live"));
    c.once("error", () => done("stale"));
  });
}

function listenOn(server: net.Server, socket: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => {
      server.off("listening", onListening);
      reject(err);
    };
    const onListening = () => {
      server.off("error", onError);
      resolve();
    };
    server.once("error", onError);
    server.once("listening", onListening);
    server.listen(socket);
  });
}

export interface HookSocketOptions {
  /** How long a hand-over waits for the hook's "written" confirmation, ms (default DEFAULTS.confirmTimeoutMs). */
  confirmTimeoutMs?: number;
  /** How long a connection may take to send its request, ms (default 5 s). */
  requestTimeoutMs?: number;
}

/**
 * Claim a principal's hook socket. Success means custody: this process is the one consuming
 * connector for the principal on this host. A socket that answers belongs to a live connector
 * (CustodyHeldError); one that refuses is stale (its holder died) and is replaced, under a
 * short-lived cleanup lock so two connectors starting together cannot both take it.
 */
export class HookSocket {
  private handler?: HookHandler;
  private token?: string;
  private markServing!: () => void;
  /** Resolves once serve() was called: requests arriving earlier wait for it (bounded). */
  private readonly serving = new Promise<void>((r) => (this.markServing = r));
  private httpServer?: http.Server;
  private readonly sockets = new Set<net.Socket>();
  private ino = 0;
  private closed = false;
  private watch?: NodeJS.Timeout;

  private constructor(
    readonly paths: SeatPaths,
    private server: net.Server,
    private readonly principal: string,
    private readonly log: Logger,
    private readonly opts: HookSocketOptions,
  ) {}

  static async claim(paths: SeatPaths, principal: string, log: Logger, opts: HookSocketOptions = {}): Promise<HookSocket> {
    const cs = new HookSocket(paths, net.createServer(), principal, log, opts);
    await cs.bind();
    cs.watch = setInterval(() => void cs.checkBinding(), 5_000);
    cs.watch.unref();
    return cs;
  }

  private async bind(): Promise<void> {
    const { socket, cleanupLock } = this.paths;
    for (let attempt = 0; attempt < 100; attempt++) {
      const server = net.createServer((c) => this.onConnection(c));
      try {
        await listenOn(server, socket);
        this.server = server;
        chmodSync(socket, 0o600);
        this.ino = statSync(socket).ino;
        return;
      } catch (err) {
        server.close();
        if ((err as NodeJS.ErrnoException).code !== "EADDRINUSE") throw err;
      }
      if ((await probe(socket)) === "live") throw new CustodyHeldError(this.principal, socket);
      // Stale: remove it, but only while holding the cleanup lock (its holder may have died
      // mid-cleanup: the lock goes stale after its grace).
      const lock = takeLockFile(cleanupLock, { content: String(process.pid) });
      if (!lock.taken) {
        await sleep(20 + Math.random() * 30);
        continue;
      }
      try {
        if ((await probe(socket)) === "stale") {
          try {
            unlinkSync(socket);
            this.log.info({ socket }, "removed a stale hook socket (its connector died)");
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
          }
        }
      } finally {
        lock.release();
      }
    }
    throw new CustodyHeldError(this.principal, socket);
  }

  /** Re-create the socket if something removed it (e.g. a tmp cleaner); warn if another took it. */
  private async checkBinding(): Promise<void> {
    if (this.closed) return;
    let ino: number | undefined;
    try {
      ino = statSync(this.paths.socket).ino;
    } catch {
      ino = undefined;
    }
    if (ino === this.ino) return;
    if (ino !== undefined) {
      this.log.error({ socket: this.paths.socket }, "the hook socket was replaced by another process; hooks may reach another connector");
      return;
    }
    this.log.warn({ socket: this.paths.socket }, "the hook socket was removed; re-creating it");
    // Close the old listener first: closing a unix listener unlinks its path.
    await new Promise<void>((r) => this.server.close(() => r()));
    try {
      const server = net.createServer((c) => this.onConnection(c));
      await listenOn(server, this.paths.socket);
      chmodSync(this.paths.socket, 0o600);
      this.ino = statSync(this.paths.socket).ino;
      this.server = server;
    } catch (err) {
      this.log.error({ err }, "could not re-create the hook socket");
    }
  }

  /**
   * Start answering hooks. A request that arrives before this (the connector is still joining)
   * waits for it, up to 10 s, rather than being turned away.
   */
  serve(handler: HookHandler, token: string): void {
    this.handler = handler;
    this.token = token;
    this.markServing();
  }

  private async waitServing(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.serving, new Promise<void>((r) => (timer = setTimeout(r, 10_000)))]);
    clearTimeout(timer);
  }

  /** Also serve hooks over loopback HTTP (`POST /hook/<Event>`, `Authorization: Bearer <token>`). */
  async listenHttp(port: number): Promise<number> {
    const server = http.createServer((req, res) => void this.onHttp(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
    server.keepAliveTimeout = 30_000;
    this.httpServer = server;
    return (server.address() as net.AddressInfo).port;
  }

  private onConnection(c: net.Socket): void {
    if (this.closed) {
      c.destroy();
      return;
    }
    this.sockets.add(c);
    c.on("close", () => this.sockets.delete(c));
    c.on("error", () => undefined);
    const frames = new LineSplitter();
    let stage: "request" | "confirm" | "done" = "request";
    let receipt: string | undefined;
    let settled = false;
    const settle = (how: "confirm" | "release", why: string) => {
      if (settled || !receipt) return;
      settled = true;
      clearTimeout(confirmTimer);
      if (how === "confirm") void this.handler?.confirm(receipt).catch((err) => this.log.error({ err }, "ack after hook receipt failed"));
      else this.handler?.release(receipt, why);
    };
    let confirmTimer: NodeJS.Timeout | undefined;
    const requestTimer = setTimeout(() => c.destroy(), this.opts.requestTimeoutMs ?? 5_000);
    c.on("close", () => {
      clearTimeout(requestTimer);
      settle("release", stage === "confirm" ? "hook ended without confirming its reply was written" : "connection closed");
    });
    c.setEncoding("utf8");
    c.on("data", (chunk: string) => {
      const lines = frames.push(chunk);
      if (lines === "overflow") {
        this.log.warn("a hook frame exceeded the size limit; connection dropped");
        c.destroy();
        return;
      }
      for (const line of lines) {
        if (stage === "request") {
          stage = "done";
          clearTimeout(requestTimer);
          void this.answer(c, line).then((r) => {
            if (r) {
              receipt = r;
              stage = "confirm";
              confirmTimer = setTimeout(() => {
                settle("release", "hook did not confirm its reply in time");
                c.destroy();
              }, this.opts.confirmTimeoutMs ?? DEFAULTS.confirmTimeoutMs);
            }
          });
        } else if (stage === "confirm") {
          const conf = HookConfirm.safeParse(parseLine(line));
          if (conf.success && conf.data.receipt === receipt) {
            stage = "done";
            settle("confirm", "written");
          }
          c.end();
        }
      }
    });
  }

  /** Authenticate and handle one request line; returns the receipt if the reply hands mail over. */
  private async answer(c: net.Socket, line: string): Promise<string | undefined> {
    const send = (r: HookResponse) => {
      if (!c.destroyed) c.write(frameLine(r));
    };
    const parsed = HookRequest.safeParse(parseLine(line));
    if (!parsed.success) {
      send({ v: PROTOCOL_VERSION, ok: false, error: "malformed request" });
      c.end();
      return undefined;
    }
    await this.waitServing();
    if (!this.handler || !this.token || !tokenMatches(this.token, parsed.data.token)) {
      this.log.warn({ event: parsed.data.event }, "refused a hook request with a wrong token");
      send({ v: PROTOCOL_VERSION, ok: false, error: "refused" });
      c.end();
      return undefined;
    }
    try {
      const r = await this.handler.handle(parsed.data, { transport: "socket", canHandOver: true });
      if (c.destroyed) {
        if (r.receipt) this.handler.release(r.receipt, "hook went away before the reply was sent");
        return undefined;
      }
      send({ v: PROTOCOL_VERSION, ok: true, reply: r.reply, ...(r.receipt ? { receipt: r.receipt } : {}) });
      if (!r.receipt) c.end();
      return r.receipt;
    } catch (err) {
      this.log.error({ err, event: parsed.data.event }, "hook handling failed");
      send({ v: PROTOCOL_VERSION, ok: false, error: "internal error" });
      c.end();
      return undefined;
    }
  }

  private async onHttp(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const reply = (status: number, body: Record<string, unknown>) => {
      const text = JSON.stringify(body);
      res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
      res.end(text);
    };
    const m = /^\/hook\/([A-Za-z]+)$/.exec(req.url ?? "");
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? "");
    if (req.method !== "POST" || !m) return reply(404, {});
    await this.waitServing();
    if (!this.handler || !this.token || !tokenMatches(this.token, auth?.[1])) {
      this.log.warn({ url: req.url }, "refused an http hook request with a wrong token");
      return reply(401, {});
    }
    let body = "";
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > 4 * MAX_FRAME_BYTES) return reply(413, {});
      body += (chunk as Buffer).toString("utf8");
    }
    const raw = parseLine(body);
    const request = HookRequest.safeParse({
      v: PROTOCOL_VERSION,
      token: auth![1],
      event: m[1],
      payload: raw && typeof raw === "object" ? trimPayload(raw as Record<string, unknown>) : {},
      pids: [],
    });
    if (!request.success) return reply(200, {}); // never block the session on a payload we cannot read
    try {
      const r = await this.handler.handle(request.data, { transport: "http", canHandOver: false });
      reply(200, r.reply);
    } catch (err) {
      this.log.error({ err }, "http hook handling failed");
      reply(200, {});
    }
  }

  /** Stop listening, drop connections (open hand-overs are released) and remove the socket. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.watch) clearInterval(this.watch);
    for (const c of this.sockets) c.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
    if (this.httpServer) {
      this.httpServer.closeAllConnections();
      await new Promise<void>((r) => this.httpServer!.close(() => r()));
    }
    try {
      if (statSync(this.paths.socket).ino === this.ino) unlinkSync(this.paths.socket);
    } catch {
      // already gone
    }
  }
}
