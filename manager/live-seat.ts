import type { Logger } from "../broker/index.js";
import type { RuntimeAdapter } from "../runtime/index.js";
import { wakeDue } from "../runtime/index.js";
import type { SeatProcess } from "./process-host.js";
import type { Rejoining } from "./restart-policy.js";
import type { SeatFiles } from "./seat-launcher.js";
import type { SeatTerminal } from "./seat-terminal.js";
import type { SeatView } from "../schemas/index.js";

// A seat this manager runs, as it lives in memory beside its record: its process and terminal,
// what its presence said last, and the wake typed into it. The seat log holds the rest.

/** The presence fields the manager reads (a seat's own record; only its lifecycle uid is trusted as an id). */
export interface SeatPresence {
  status?: string;
  lifecycleUid?: string;
  unread?: number;
  attention?: string;
  condition?: { code?: string; message?: string };
  activeAt?: number;
}

/** A running seat's state in this manager's memory. */
export interface LiveSeat {
  /** Agent CLI seats: the terminal the manager reads and types into. */
  terminal?: SeatTerminal;
  /** The last non-blank screen seen while it started (a TUI's exit may blank it). */
  lastScreen?: string;
  /** When the manager last typed a wake prompt (unset once the seat worked). */
  wokenAt?: number | undefined;
  /**
   * What the manager saw on a working seat's screen that says its model refuses its credentials
   * (Claude retries a 401 for minutes before its hooks say so), and when it last looked.
   */
  authOnScreen?: string | undefined;
  screenCheckedAt?: number;
  waking?: boolean;
  /**
   * The seat's presence as last written. Records are written only when they change (protocol
   * 0.3), so a wake that could not happen yet (the screen not ready) is tried again from this on
   * the manager's own heartbeat rather than on the next presence write.
   */
  lastPresence?: SeatPresence;
  proc: SeatProcess;
  files: SeatFiles;
  joinedEpoch?: number;
  stopping: boolean;
  restartsAt: number[];
  /** The restarted incarnations before this one that exited before joining (restart-policy.ts); unset once one joins. */
  rejoining?: Rejoining | undefined;
}

/**
 * Wake an idle Claude seat that holds mail its attention lets through: type a short prompt into
 * its terminal, so the next turn's hook hands the mail over (the channel push is not available
 * to count on). Never into a seat that is working, waiting (approval or input), has a person
 * attached, or whose screen is not its empty input screen; at most once per WAKE_EVERY_MS (or
 * the runtime's longer `rewakeAfterMs`) unless it worked in between.
 */
export async function wakeIfDue(seat: string, l: LiveSeat, adapter: RuntimeAdapter, p: SeatPresence, log: Logger): Promise<void> {
  if (!l.terminal) return;
  if (p.status === "working" || p.status === "waiting") {
    l.wokenAt = undefined; // it is busy: the next idle moment may be woken again at once
    return;
  }
  if (p.status !== "idle" || !(typeof p.unread === "number" && p.unread > 0) || p.attention === "dnd") return;
  if (!wakeDue(l.wokenAt, Date.now(), adapter)) return;
  if (l.waking) return;
  l.waking = true;
  try {
    if (await l.terminal.attached()) return;
    if (adapter.classifyScreen(await l.terminal.screen()).kind !== "ready") return;
    await l.terminal.type(adapter.wakePrompt, adapter.submitDelayMs);
    l.wokenAt = Date.now();
    log.info({ seat, unread: p.unread }, "woke an idle seat holding mail (typed into its terminal)");
  } finally {
    l.waking = false;
  }
}

/**
 * A seat that is working reads its screen at most every 10 s: a model call refused for its
 * credentials shows there as `auth` in ps long before Claude gives up and its StopFailure hook
 * sets the condition. Cleared once it works or idles again.
 */
export async function readAuthOnScreen(seat: string, l: LiveSeat, adapter: RuntimeAdapter | undefined, log: Logger): Promise<void> {
  if (!l.terminal || l.lastPresence?.status !== "working") {
    l.authOnScreen = undefined;
    return;
  }
  if (l.screenCheckedAt !== undefined && Date.now() - l.screenCheckedAt < 10_000) return;
  l.screenCheckedAt = Date.now();
  const seen = adapter ? adapter.authFailureOnScreen(await l.terminal.screen()) : undefined;
  if (seen && !l.authOnScreen) log.warn({ seat, screen: seen }, "a seat's model calls are refused for its credentials");
  l.authOnScreen = seen;
}

/** What ps shows of a running seat's presence: its status and its condition while one is set (e.g. `auth`: its model calls fail). */
export function presenceOf(l: LiveSeat | undefined): Pick<SeatView, "presence"> {
  const p = l?.lastPresence;
  if (!p?.status) return {};
  if (l?.authOnScreen) return { presence: { status: p.status, condition: "auth", message: l.authOnScreen } };
  const code = typeof p.condition?.code === "string" ? p.condition.code : undefined;
  const message = code && typeof p.condition?.message === "string" ? p.condition.message.slice(0, 200) : undefined;
  const activeAt = typeof p.activeAt === "number" && Number.isInteger(p.activeAt) ? p.activeAt : undefined;
  return { presence: { status: p.status, ...(code ? { condition: code } : {}), ...(message ? { message } : {}), ...(activeAt ? { activeAt } : {}) } };
}
