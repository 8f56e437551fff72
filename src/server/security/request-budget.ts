/**
 * Requests per subject (an API key, or a client address before a key is known) over fixed windows:
 * a subject's window opens with its first request and lasts `windowMs`; within it, `max` requests
 * pass. At most `capacity` subjects are remembered; past that the oldest window is forgotten, which
 * only ever gives that subject a fresh budget early.
 */
export class RequestBudget {
  readonly #windows = new Map<string, { count: number; startMs: number }>();

  constructor(
    readonly max: number,
    readonly windowMs: number,
    private readonly capacity = 10_000,
  ) {}

  /** Counts one request of `subject` at `nowMs`: what is left of its budget and when its window ends. */
  spend(subject: string, nowMs: number): { remaining: number; resetSeconds: number; exceeded: boolean } {
    let window = this.#windows.get(subject);
    if (window === undefined || window.startMs + this.windowMs <= nowMs) {
      // A new window goes to the end of the map, so the first entry is always the oldest.
      this.#windows.delete(subject);
      if (this.#windows.size >= this.capacity) this.#windows.delete(this.#windows.keys().next().value as string);
      window = { count: 0, startMs: nowMs };
      this.#windows.set(subject, window);
    }
    window.count++;
    return {
      remaining: Math.max(0, this.max - window.count),
      resetSeconds: Math.ceil((window.startMs + this.windowMs - nowMs) / 1000),
      exceeded: window.count > this.max,
    };
  }

  get size(): number {
    return this.#windows.size;
  }
}
