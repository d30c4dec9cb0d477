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
  /** This incarnation itself joined (a restarted one may exit before it could). Default: `joined`. */
  joinedNow?: boolean;
  /** Restarted incarnations that exited before joining, one after another: since when, and how many (unset: the last one joined). */
  rejoining?: Rejoining | undefined;
  /** When its earlier exits were restarted, Unix ms (those within the window count). */
  restartsAt: number[];
  /** Restarts allowed within `windowMs`. */
  restarts: number;
  windowMs: number;
  /** The name of the known blocking screen the seat showed last, if any. */
  blockedBy?: string | undefined;
}

/** The verdict: retire, saying why, or restart; `recent` is the exits within the window that count against it. */
export interface ExitVerdict {
  retire?: string;
  recent: number[];
  /** Restart only after this pause, ms (a restarted incarnation that could not join). */
  pauseMs?: number;
  /** Carried to the next incarnation: the restarted ones that have not joined, this one included. */
  rejoining?: Rejoining;
}

/** Restarted incarnations that exited before they joined, one after another. */
export interface Rejoining {
  /** When the first of them exited, Unix ms. */
  since: number;
  /** How many exited. */
  tries: number;
}

/** The first pause before starting again an incarnation that exited before it joined; it doubles up to REJOIN_PAUSE_MAX_MS. */
export const REJOIN_PAUSE_MS = 1_000;
export const REJOIN_PAUSE_MAX_MS = 15_000;

export function exitVerdict(f: ExitFacts): ExitVerdict {
  const recent = [...f.restartsAt.filter((t) => f.exitAt - t < f.windowMs), f.exitAt];
  if (!f.joined)
    return {
      recent,
      retire: f.blockedBy ? `failed: the seat stopped on ${f.blockedBy}, then ${describeExit(f.exit)}` : `failed: ${describeExit(f.exit)} before it joined`,
    };
  // A restarted incarnation that exits before it joins did not crash as the seat: most often the
  // mesh could not take its join (a cluster electing leaders, a node down). It does not count
  // against the crash loop; it is tried again after a pause that doubles, for one window.
  if (f.joinedNow === false) {
    const since = f.rejoining?.since ?? f.exitAt;
    const tries = (f.rejoining?.tries ?? 0) + 1;
    const earlier = f.restartsAt.filter((t) => f.exitAt - t < f.windowMs);
    if (f.exitAt - since >= f.windowMs)
      return {
        recent: earlier,
        retire: `failed: restarted ${tries} times, it could not join for ${Math.round((f.exitAt - since) / 1000)} s, last ${describeExit(f.exit)} before it joined`,
      };
    return { recent: earlier, pauseMs: Math.min(REJOIN_PAUSE_MS * 2 ** (tries - 1), REJOIN_PAUSE_MAX_MS), rejoining: { since, tries } };
  }
  if (recent.length > f.restarts)
    return { recent, retire: `crash loop: exited ${recent.length} times within ${Math.round(f.windowMs / 1000)} s, last ${describeExit(f.exit)}` };
  return { recent };
}

export function describeExit(e: ExitStatus): string {
  return e.signal ? `killed by ${e.signal}` : e.code === null ? "gone (exit status unknown)" : `exit code ${e.code}`;
}
