/**
 * A map bounded by the bytes its values hold: the least recently used entries leave first. Values
 * report their own size (`sizeOf`); one that grows after it was stored says so with `grew`.
 */
export class ByteLru<V> {
  readonly #entries = new Map<string, V>();
  #bytes = 0;

  /** `capacity` in bytes; 0 keeps nothing. */
  constructor(
    readonly capacity: number,
    private readonly sizeOf: (value: V) => number,
  ) {}

  /** The value, which becomes the most recently used. */
  get(key: string): V | undefined {
    const value = this.#entries.get(key);
    if (value !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, value);
    }
    return value;
  }

  has(key: string): boolean {
    return this.#entries.has(key);
  }

  /** Keeps `value` unless it alone exceeds the capacity; older entries make room. */
  set(key: string, value: V): void {
    if (this.sizeOf(value) > this.capacity) return;
    this.delete(key);
    this.#entries.set(key, value);
    this.#bytes += this.sizeOf(value);
    this.#evict();
  }

  /** `value`, stored under `key`, now holds `bytes` more (ignored when it is no longer stored). */
  grew(key: string, value: V, bytes: number): void {
    if (this.#entries.get(key) !== value) return;
    this.#bytes += bytes;
    this.#evict();
  }

  delete(key: string): void {
    const value = this.#entries.get(key);
    if (value === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= this.sizeOf(value);
  }

  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.#entries.size, bytes: this.#bytes };
  }

  #evict(): void {
    for (const [key, value] of this.#entries) {
      if (this.#bytes <= this.capacity) break;
      this.#entries.delete(key);
      this.#bytes -= this.sizeOf(value);
    }
  }
}
