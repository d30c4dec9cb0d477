// The restart policy (docs/manager.md, Supervision and fencing): what one exit of a seat's process
// means for the seat. Pure, so a live exit and one a restarted manager finds in the log (its
// predecessor died before acting on it) are judged alike.

/** How a seat's process ended. */
export interface ExitStatus {
  code: number | null;
  signal: string | null;
}

/** What the policy weighs for one exit. */
export interface ExitFacts {
  exit: ExitStatus;
  /** When it exited, Unix ms. */
  exitAt: number;
  /** The incarnation joined before (a restarted incarnation counts as joined). */
  joined: boolean;
  /** When its earlier exits were restarted, Unix ms (those within the window count). */
  restartsAt: number[];
  /** Restarts allowed within `windowMs`. */
  restarts: number;
  windowMs: number;
  /** The name of the known blocking screen the seat showed last, if any. */
  blockedBy?: string | undefined;
}

/** The verdict: retire, saying why, or restart; `recent` is the exits within the window, this one included. */
export interface ExitVerdict {
  retire?: string;
  recent: number[];
}

export function exitVerdict(f: ExitFacts): ExitVerdict {
  const recent = [...f.restartsAt.filter((t) => f.exitAt - t < f.windowMs), f.exitAt];
  if (!f.joined)
    return {
      recent,
      retire: f.blockedBy ? `failed: the seat stopped on ${f.blockedBy}, then ${describeExit(f.exit)}` : `failed: ${describeExit(f.exit)} before it joined`,
    };
  if (recent.length > f.restarts)
    return { recent, retire: `crash loop: exited ${recent.length} times within ${Math.round(f.windowMs / 1000)} s, last ${describeExit(f.exit)}` };
  return { recent };
}

export function describeExit(e: ExitStatus): string {
  return e.signal ? `killed by ${e.signal}` : e.code === null ? "gone (exit status unknown)" : `exit code ${e.code}`;
}
