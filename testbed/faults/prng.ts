// A seeded pseudo-random generator (mulberry32): the same seed gives the same schedule, so a
// failing run replays exactly with `--seed`.

export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick from an empty list");
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** Eight lowercase letters and digits (unique ids within a run). */
  token(): string {
    let s = "";
    for (let i = 0; i < 8; i += 1) s += "abcdefghijklmnopqrstuvwxyz0123456789"[Math.floor(this.next() * 36)];
    return s;
  }
}

/** The seed of schedule `index` of a run seeded `seed`: each schedule replays on its own. */
export function scheduleSeed(seed: number, index: number): number {
  return (Math.imul(seed >>> 0, 0x9e3779b1) + Math.imul(index + 1, 0x85ebca6b)) >>> 0;
}
