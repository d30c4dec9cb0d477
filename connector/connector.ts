// One seat's connector: it holds custody of the principal on this host, is the seat's only mesh
// client, answers the session's hooks and serves its MCP tools. This file only wires the parts:
//   custody.ts        the hook socket claim, the token, the local files
//   seat.ts           the mesh session: join, inbox, keep-alive, presence, wake
//   hook-responder.ts what each hook is answered (presence, drained mail)
//   mcp-front.ts      the MCP servers, the doorbell, acks of cotal_inbox replies
//   config.ts         options and their defaults, in one place
import path from "node:path";
import type { CotalMcpServer } from "./mcp-server.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Endpoint, Logger } from "../broker/index.js";
import { principal } from "../schemas/index.js";
import { resolveConfig, stateDirOf, type ConnectorConfig, type ConnectorOptions } from "./config.js";
import { Custody } from "./custody.js";
import { EventPlane } from "./event-plane.js";
import { HookResponder } from "./hook-responder.js";
import type { HookAnswer, HookHandler, HookVia } from "./hook-socket.js";
import type { HookRequest } from "./protocol.js";
import { McpFront } from "./mcp-front.js";
import { cliFacetOf } from "./cli-facet.js";
import { Seat, type ConnectorStatus } from "./seat.js";

export class Connector implements HookHandler {
  /** Loopback HTTP hook port, when serving hooks over HTTP. */
  httpPort?: number;
  private closing?: Promise<void>;

  private constructor(
    private readonly custody: Custody,
    private readonly seat: Seat,
    private readonly hooks: HookResponder,
    private readonly front: McpFront,
  ) {}

  /**
   * Claim custody of the principal on this host (refusing if another live connector holds it),
   * then connect, and join at once or on first use. Nothing is pulled before custody is held.
   */
  static async start(opts: ConnectorOptions): Promise<Connector> {
    const cfg = resolveConfig(opts);
    const log = Seat.logger(cfg);
    const custody = await Custody.claim(cfg, principal(cfg.launch.owner, cfg.launch.name), log);
    let seat: Seat | undefined;
    try {
      const front = new McpFront(() => seat!, log);
      seat = await Seat.connect(
        cfg,
        log,
        () => custody.takeReturnedIds(),
        (w) => front.ring(w),
        (ep) => eventPlane(cfg, custody.dir, ep, log),
      );
      seat.plane?.startForLeftovers();
      const hooks = new HookResponder(seat, cfg);
      custody.writeLocalFiles(cfg.launch.source, cfg.parentPid);
      const c = new Connector(custody, seat, hooks, front);
      custody.serve(c);
      if (cfg.launch.httpPort !== undefined) c.httpPort = await custody.socket.listenHttp(cfg.launch.httpPort);
      if (cfg.joinOn === "start") await seat.activate("start");
      else log.info("connected; joining on the session's first hook or tool call");
      return c;
    } catch (err) {
      await seat?.abort();
      await custody.release();
      throw err;
    }
  }

  /** This seat's principal id, `<owner>.<actor>`. */
  get id(): string {
    return this.seat.id;
  }

  /** Whether this connector has joined (a session attached, or joinOn "start"). */
  get joined(): boolean {
    return this.seat.joined;
  }

  /** How often held durable mail is kept alive on the broker, ms (0 until joined). */
  get keepAliveMs(): number {
    return this.seat.keepAliveMs;
  }

  /** Join the mesh now, if not yet joined (a hook or tool call does it otherwise). */
  activate(why: string): Promise<void> {
    return this.seat.activate(why);
  }

  /** Resolves once joined and the backlog present at join reached the inbox (or the wait timed out). */
  ready(): Promise<void> {
    return this.seat.ready();
  }

  /** Who and how this seat is right now, with inbox counts. */
  status(): ConnectorStatus {
    return this.seat.status();
  }

  /** Answer one hook run: the hook socket calls this (see HookResponder). */
  handle(req: HookRequest, via: HookVia): Promise<HookAnswer> {
    return this.hooks.handle(req, via);
  }

  /** The hook wrote the reply that carried hand-over `receipt`: ack its mail. */
  confirm(receipt: string): Promise<void> {
    return this.hooks.confirm(receipt);
  }

  /** The reply carrying `receipt` was not written: its mail stays, flagged as a possible repeat. */
  release(receipt: string, why: string): void {
    this.hooks.release(receipt, why);
  }

  /** The additionalContext a draining hook would get now (it hands the mail over). */
  drainContext(event: "SessionStart" | "UserPromptSubmit", canHandOver = true): ReturnType<HookResponder["drainContext"]> {
    return this.hooks.drainContext(event, canHandOver);
  }

  /** Serve the MCP tools on `transport` (stdio in production, in-memory in tests). */
  serve(transport: Transport): Promise<CotalMcpServer> {
    return this.front.serve(transport);
  }

  /**
   * Leave once: stop answering hooks (the socket and local files go), then the seat leaves the
   * mesh (held mail back to the broker, offline presence), then the MCP servers close.
   */
  close(reason = "shutdown"): Promise<void> {
    this.closing ??= (async () => {
      this.seat.log.info({ reason, joined: this.seat.joined }, "leaving the mesh");
      this.seat.beginLeaving();
      await this.custody.release();
      await this.seat.leave((ids) => this.custody.noteReturnedIds(ids));
      await this.front.close();
    })();
    return this.closing;
  }
}

/** The seat's event plane (docs/events.md), unless turned off; it starts when the seat joins. */
function eventPlane(cfg: ConnectorConfig, controlDir: string, ep: Endpoint, log: Logger): EventPlane | undefined {
  if (!cfg.events) return undefined;
  const dir = path.join(stateDirOf(cfg, controlDir), "events");
  // The agent CLI's session file, read as the plane's transcript records (Claude's as is, Codex's rollout mapped).
  const transcript = cliFacetOf(cfg.launch.runtime).transcript;
  return new EventPlane({ ep, dir, log: log.child({ component: "event-plane" }), transcript, ...cfg.eventPlane });
}

export type { ConnectorStatus };
