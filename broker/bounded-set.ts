// A set with a cap: past it, the oldest insertion is forgotten. Used where ids are remembered
// only to flag or drop repeats (the endpoint's acked ids, the connector's handed and given-back
// mail), so an old id may safely be forgotten and memory must not grow with a process's
// lifetime. A Set keeps insertion order, which makes it a FIFO at no cost; an LRU library
// (lru-cache) would add a dependency and per-entry bookkeeping for less.
export class BoundedSet<T> {
  readonly #items = new Set<T>();

  /** `cap`: how many items are kept at most (the oldest go first). */
  constructor(readonly cap: number) {
    if (!(cap > 0)) throw new RangeError(`BoundedSet cap must be positive, got ${cap}`);
  }

  /** Add (or refresh to newest) `item`; the oldest goes when the cap is passed. */
  add(item: T): void {
    this.#items.delete(item);
    this.#items.add(item);
    if (this.#items.size > this.cap) this.#items.delete(this.#items.values().next().value as T);
  }

  has(item: T): boolean {
    return this.#items.has(item);
  }

  delete(item: T): boolean {
    return this.#items.delete(item);
  }

  get size(): number {
    return this.#items.size;
  }

  /** Oldest first. */
  values(): T[] {
    return [...this.#items];
  }
}
