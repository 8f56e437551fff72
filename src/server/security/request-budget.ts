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

/**
 * Fixed windows per subject, the one counting both budgets share (this process's and the shared
 * one): a subject's window opens with its first request and lasts `windowMs`; at most `capacity`
 * subjects are remembered, the oldest window forgotten first. A subclass says what a window holds
 * (`open`) and how a request counts in it.
 */
export abstract class FixedWindows<W extends { count: number; startMs: number }> implements Budget {
  readonly #windows = new Map<string, W>();

  constructor(
    readonly max: number,
    readonly windowMs: number,
    private readonly capacity: number,
  ) {}

  abstract spend(subject: string, nowMs: number): BudgetWindow;

  /** A fresh window opened at `nowMs`, with nothing counted in it. */
  protected abstract open(nowMs: number): W;

  /**
   * The subject's window open at `nowMs`, opened now if it had none. Nothing is allocated for a
   * subject whose window is open (the rate limiter spends on every request).
   */
  protected window(subject: string, nowMs: number): W {
    let window = this.#windows.get(subject);
    if (window === undefined || window.startMs + this.windowMs <= nowMs) {
      // A new window goes to the end of the map, so the first entry is always the oldest.
      this.#windows.delete(subject);
      if (this.#windows.size >= this.capacity) this.#windows.delete(this.#windows.keys().next().value as string);
      window = this.open(nowMs);
      this.#windows.set(subject, window);
    }
    return window;
  }

  /** Every subject's window, oldest first. */
  protected windows(): IterableIterator<[string, W]> {
    return this.#windows.entries();
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

/** Requests per subject counted in this process. */
export class RequestBudget extends FixedWindows<{ count: number; startMs: number }> {
  constructor(max: number, windowMs: number, capacity = 10_000) {
    super(max, windowMs, capacity);
  }

  /**
   * Counts one request of `subject` at `nowMs` and answers its window, live: read what it says
   * with `remaining`, `resetSeconds` and `exceeded`.
   */
  spend(subject: string, nowMs: number): BudgetWindow {
    const window = this.window(subject, nowMs);
    window.count++;
    return window;
  }

  protected open(nowMs: number): { count: number; startMs: number } {
    return { count: 0, startMs: nowMs };
  }
}
