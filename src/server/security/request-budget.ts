/**
 * Requests per subject (an API key, or a client address before a key is known) over fixed windows:
 * a subject's window opens with its first request and lasts `windowMs`; within it, `max` requests
 * pass. At most `capacity` subjects are remembered; past that the oldest window is forgotten, which
 * only ever gives that subject a fresh budget early.
 */
/** A subject's current window: the requests counted in it, and when it opened. */
export interface BudgetWindow {
  readonly count: number;
  readonly startMs: number;
}

/** What the rate limiter asks of a budget, kept in this process or shared (`SharedRequestBudget`, SCALE-4). */
export interface Budget {
  readonly max: number;
  /** Counts one request of `subject` at `nowMs` and answers its window. */
  spend(subject: string, nowMs: number): BudgetWindow;
  remaining(window: BudgetWindow): number;
  resetSeconds(window: BudgetWindow, nowMs: number): number;
  exceeded(window: BudgetWindow): boolean;
}

export class RequestBudget implements Budget {
  readonly #windows = new Map<string, { count: number; startMs: number }>();

  constructor(
    readonly max: number,
    readonly windowMs: number,
    private readonly capacity = 10_000,
  ) {}

  /**
   * Counts one request of `subject` at `nowMs` and answers its window, live: read what it says
   * with `remaining`, `resetSeconds` and `exceeded`. Nothing is allocated for a subject whose window
   * is open (the rate limiter spends on every request).
   */
  spend(subject: string, nowMs: number): BudgetWindow {
    let window = this.#windows.get(subject);
    if (window === undefined || window.startMs + this.windowMs <= nowMs) {
      // A new window goes to the end of the map, so the first entry is always the oldest.
      this.#windows.delete(subject);
      if (this.#windows.size >= this.capacity) this.#windows.delete(this.#windows.keys().next().value as string);
      window = { count: 0, startMs: nowMs };
      this.#windows.set(subject, window);
    }
    window.count++;
    return window;
  }

  /** What is left of the window's budget. */
  remaining(window: BudgetWindow): number {
    return Math.max(0, this.max - window.count);
  }

  /** Seconds until the window ends, as of `nowMs`. */
  resetSeconds(window: BudgetWindow, nowMs: number): number {
    return Math.ceil((window.startMs + this.windowMs - nowMs) / 1000);
  }

  /** Whether the window holds more requests than the budget. */
  exceeded(window: BudgetWindow): boolean {
    return window.count > this.max;
  }

  get size(): number {
    return this.#windows.size;
  }
}
