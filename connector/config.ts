// One place that turns a connector's options (and its environment) into settings: every default
// the seat runs with is named here once, so the hook socket, the seat, the hooks and the tools
// read the same numbers.
import path from "node:path";
import { DELIVERY } from "../schemas/index.js";
import type { EventPlaneOptions } from "./event-plane.js";
import type { InboxOptions } from "./inbox.js";
import type { Launch } from "./launch.js";

/** Defaults of the options below. */
export const DEFAULTS = {
  /** additionalContext budget of a draining hook, characters. */
  drainBudget: 9_000,
  /** Reply budget of `cotal_inbox` (and `cotal_history`), characters. */
  windowBudget: 20_000,
  /** Most messages one `cotal_inbox` reply returns. */
  windowMaxMessages: 50,
  /** How long a draining hook waits for the backlog present at join, ms. */
  readyTimeoutMs: 3_000,
  /** How long a hand-over waits for its hook's "written" confirmation, ms. */
  confirmTimeoutMs: 30_000,
  /** How long a managed seat's permission ask waits for a person before it is denied, ms. */
  approvalTimeoutMs: 300_000,
  /** How long a hand-started session's ask waits before the CLI's own prompt stands, ms. */
  handStartedApprovalMs: 60_000,
  /** The longest bound an ask may have, ms (the PermissionRequest hook waits a little longer: hooks.ts). */
  maxApprovalMs: 540_000,
} as const;

export interface ConnectorOptions {
  launch: Launch;
  /** Environment for the control directory (COTAL_CONTROL_DIR, XDG_RUNTIME_DIR). */
  env?: NodeJS.ProcessEnv;
  inbox?: InboxOptions;
  /** How often held durable mail is kept alive on the broker, ms (default: a third of the ack wait, at most 10 s). */
  keepAliveMs?: number;
  /** additionalContext budget of a draining hook, characters (default 9,000). */
  drainBudget?: number;
  /** Reply budget of `cotal_inbox`, characters (default 20,000). */
  windowBudget?: number;
  /** Most messages one `cotal_inbox` reply returns (default 50). */
  windowMaxMessages?: number;
  /** How long a draining hook waits for the initial backlog after join, ms (default 3,000). */
  readyTimeoutMs?: number;
  /** How long a hand-over waits for its hook's "written" confirmation, ms (default 30,000). */
  confirmTimeoutMs?: number;
  /**
   * Refuse hooks whose process ancestry does not include this connector's parent (its Claude)
   * or this process. Default on where /proc exists (Linux).
   */
  pairing?: boolean;
  /** The process that started this connector (its Claude); default `process.ppid`. */
  parentPid?: number;
  /** Presence heartbeat, ms (default the endpoint's 2 s). */
  heartbeatMs?: number;
  /**
   * When to join the mesh (presence, pulls). `first-use` (the default): on the first hook of a
   * session or the first tool call, so a connector started only for a health check (`claude mcp
   * list`) takes no mail and never appears on the roster. `start`: at once (tests, embedders).
   */
  joinOn?: "first-use" | "start";
  /** Publish the seat's activity on its event plane (default true; the launch's `noEvents` turns it off). */
  events?: boolean;
  /** The seat's state dir (default: the launch material's folder, else `<control dir>/<space>.<owner>.<actor>.state`). */
  stateDir?: string;
  /** Event plane tuning (tests). */
  eventPlane?: Pick<EventPlaneOptions, "retryMs" | "pollMs" | "firstWaitMs">;
  /**
   * How long a permission ask waits for a person, ms (default: the launch material's, else 5
   * minutes for a managed seat and 60 s for a hand-started session; at most 9 minutes).
   */
  approvalTimeoutMs?: number;
}

/** The options with every default applied. */
export interface ConnectorConfig {
  launch: Launch;
  env: NodeJS.ProcessEnv;
  inbox: InboxOptions;
  /** Fixed keep-alive period, ms; undefined: derived from the ack wait at join ({@link keepAlivePeriod}). */
  keepAliveMs: number | undefined;
  drainBudget: number;
  windowBudget: number;
  windowMaxMessages: number;
  readyTimeoutMs: number;
  confirmTimeoutMs: number;
  pairing: boolean;
  parentPid: number;
  heartbeatMs: number | undefined;
  joinOn: "first-use" | "start";
  /** Whether the event plane runs (the option and the launch's `noEvents` together). */
  events: boolean;
  /** The state dir given, if any; else {@link stateDirOf} picks one beside the control directory. */
  stateDir: string | undefined;
  eventPlane: ConnectorOptions["eventPlane"];
  /** Managed by Cotal (launch material): an ask nobody answers is denied; otherwise the CLI's prompt stands. */
  managed: boolean;
  approvalTimeoutMs: number;
}

export function resolveConfig(opts: ConnectorOptions): ConnectorConfig {
  const { launch } = opts;
  return {
    launch,
    env: opts.env ?? process.env,
    inbox: opts.inbox ?? {},
    keepAliveMs: opts.keepAliveMs,
    drainBudget: opts.drainBudget ?? DEFAULTS.drainBudget,
    windowBudget: opts.windowBudget ?? DEFAULTS.windowBudget,
    windowMaxMessages: opts.windowMaxMessages ?? DEFAULTS.windowMaxMessages,
    readyTimeoutMs: opts.readyTimeoutMs ?? DEFAULTS.readyTimeoutMs,
    confirmTimeoutMs: opts.confirmTimeoutMs ?? DEFAULTS.confirmTimeoutMs,
    pairing: opts.pairing ?? process.platform === "linux",
    parentPid: opts.parentPid ?? process.ppid,
    heartbeatMs: opts.heartbeatMs,
    joinOn: opts.joinOn ?? "first-use",
    events: opts.events !== false && !launch.noEvents,
    stateDir: opts.stateDir ?? launch.stateDir,
    eventPlane: opts.eventPlane,
    managed: launch.source === "material",
    approvalTimeoutMs: Math.min(
      DEFAULTS.maxApprovalMs,
      opts.approvalTimeoutMs ?? launch.approvalTimeoutMs ?? (launch.source === "material" ? DEFAULTS.approvalTimeoutMs : DEFAULTS.handStartedApprovalMs),
    ),
  };
}

/** The seat's state dir: the one configured, else `<control dir>/<space>.<owner>.<actor>.state`. */
export function stateDirOf(cfg: ConnectorConfig, controlDir: string): string {
  const { space, owner, name } = cfg.launch;
  return cfg.stateDir ?? path.join(controlDir, `${space}.${owner}.${name}.state`);
}

/**
 * How often held durable mail is kept alive: a third of the broker's ack wait (so two
 * keep-alives may be lost before a redelivery), between 100 ms and 10 s.
 */
export function keepAlivePeriod(cfg: ConnectorConfig, ackWaitMs: number | undefined): number {
  // When the seat cannot read its durable's ack wait, the one the mesh service configures.
  return cfg.keepAliveMs ?? Math.max(100, Math.min(10_000, Math.floor((ackWaitMs ?? DELIVERY.ackWaitMs) / 3)));
}

/** Tuning knobs read from the environment (documented in docs/connector.md). */
export function optionsFromEnv(env: NodeJS.ProcessEnv): Omit<ConnectorOptions, "launch"> {
  const num = (k: string) => {
    const v = Number(env[k]);
    return Number.isFinite(v) && v > 0 ? v : undefined;
  };
  const capacity = num("COTAL_INBOX_CAPACITY");
  const nakDelayMs = num("COTAL_INBOX_NAK_DELAY_MS");
  return {
    env,
    ...(capacity || nakDelayMs ? { inbox: { ...(capacity ? { capacity } : {}), ...(nakDelayMs ? { nakDelayMs } : {}) } } : {}),
    // "start": join at once instead of on the session's first hook or tool call (benchmarks, embedders).
    ...(env.COTAL_JOIN_ON === "start" ? { joinOn: "start" as const } : {}),
    // The event plane: COTAL_EVENTS=off turns it off; COTAL_STATE_DIR says where its WAL goes.
    ...(env.COTAL_EVENTS === "off" ? { events: false } : {}),
    ...(env.COTAL_STATE_DIR ? { stateDir: env.COTAL_STATE_DIR } : {}),
    // How long a permission ask waits for a person (a hand-started session's; a managed seat's comes in its launch material).
    ...(num("COTAL_APPROVAL_TIMEOUT_MS") ? { approvalTimeoutMs: num("COTAL_APPROVAL_TIMEOUT_MS")! } : {}),
  };
}
