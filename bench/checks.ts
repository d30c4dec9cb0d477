// What a bench run must show besides its figures: per part, what was sent, what arrived, what
// arrived twice and what the broker still held afterwards. A run whose counts do not add up
// fails (the entry exits 1; the smoke tests in test/bench/ assert the same) instead of printing
// figures of a run that lost, repeated or stranded messages.

/** The counts of one part of a bench (e.g. `latency cotal`). */
export interface Tally {
  /** Operations issued: DMs published, posts × members, hooks run, seats spawned, bytes carried. */
  sent: number;
  /** Of them, completed as expected (received, answered, joined, stored), each counted once. */
  received: number;
  /** Arrivals of something already received. */
  duplicates: number;
  /** Left over after the run: messages pending or unacknowledged on the part's consumers. */
  pending: number;
}

/** Tallies by part. */
export type Tallies = Record<string, Tally>;

/** `tallies` under `prefix` (`latency` + `cotal` → `latency cotal`), to gather a bench's parts into one record. */
export function under(prefix: string, tallies: Record<string, Tally>): Tallies {
  return Object.fromEntries(Object.entries(tallies).map(([k, t]) => [`${prefix} ${k}`, t]));
}

/** One line per broken invariant (nothing sent, something lost, repeated or left pending); empty when sound. */
export function unsound(tallies: Tallies): string[] {
  const parts = Object.entries(tallies);
  if (!parts.length) return ["no part reported its counts"];
  const out: string[] = [];
  for (const [part, t] of parts) {
    if (!(t.sent > 0)) out.push(`${part}: nothing was sent`);
    if (t.received !== t.sent) out.push(`${part}: ${t.received} of ${t.sent} received`);
    if (t.duplicates !== 0) out.push(`${part}: ${t.duplicates} duplicate deliveries`);
    if (t.pending !== 0) out.push(`${part}: ${t.pending} left pending or unacknowledged`);
  }
  return out;
}

/** Counts arrivals by id: first arrivals and repeats. */
export class Arrivals {
  readonly #seen = new Set<string>();
  #duplicates = 0;

  /** Record an arrival of `id`; true when it is the first. */
  add(id: string): boolean {
    if (this.#seen.has(id)) {
      this.#duplicates += 1;
      return false;
    }
    this.#seen.add(id);
    return true;
  }

  has(id: string): boolean {
    return this.#seen.has(id);
  }

  get received(): number {
    return this.#seen.size;
  }

  get duplicates(): number {
    return this.#duplicates;
  }

  tally(sent: number, pending: number): Tally {
    return { sent, received: this.received, duplicates: this.duplicates, pending };
  }
}
