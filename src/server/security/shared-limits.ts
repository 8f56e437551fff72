import { type FailureCounts, FailureLimiter, failureWait } from './failure-limiter.ts';
import { type LoginAttempts, LoginThrottle, pairKey } from './login-throttle.ts';
import { type BudgetWindow, FixedWindows } from './request-budget.ts';
import type { SharedCounts } from './shared-counts.ts';

// The limits of SEC-2b, SEC-2d and LOAD-1, counted in a store every instance shares (SCALE-4), so
// N instances behind a balancer give a guesser or a busy key one budget, not N. When the store
// cannot be reached, each limit counts in this process meanwhile (as a single instance would) and
// says so through `onError`: an outage of the store weakens the limits, it never refuses a request.

/** Failed authentications per subject, counted in the shared store (SEC-2b). */
export class SharedFailureLimiter implements FailureCounts {
  readonly #local: FailureLimiter;

  constructor(
    private readonly store: SharedCounts,
    private readonly limit: number,
    private readonly onError: (error: unknown) => void,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {
    this.#local = new FailureLimiter(limit, windowMs, now);
  }

  async retryAfter(subject: string): Promise<number> {
    const now = this.now();
    try {
      const window = await this.store.read(`fail:${subject}`, now);
      return window === undefined ? 0 : failureWait(window.count, this.limit, window.atMs + this.windowMs - now);
    } catch (error) {
      this.onError(error);
      return this.#local.retryAfter(subject);
    }
  }

  async forgive(subject: string): Promise<void> {
    try {
      await this.store.subtractIfPresent(`fail:${subject}`, this.now());
    } catch (error) {
      this.onError(error);
      await this.#local.forgive(subject);
    }
  }

  /** One round trip: the count after this failure says what the subject's budget was before it. */
  async recordFailure(subject: string): Promise<number> {
    const now = this.now();
    try {
      const windows = await this.store.addToWindows(new Map([[`fail:${subject}`, 1]]), now, this.windowMs);
      const window = windows.get(`fail:${subject}`);
      return window === undefined ? 0 : failureWait(window.count - 1, this.limit, window.atMs + this.windowMs - now);
    } catch (error) {
      this.onError(error);
      return this.#local.recordFailure(subject);
    }
  }
}

/**
 * Password guesses per account and the clients each account signed in from (SEC-2d), in the
 * shared store. An account's state is its run of consecutive failures (lapsing an hour after the
 * latest, `FORGET_AFTER_MS`); its wait follows from the count and the latest failure's time, by
 * the same rule as in memory (`LoginThrottle.waitAfterMs`). A known client is a count of failures
 * since its success, lapsing `KNOWN_FOR_MS` after it.
 */
export class SharedLoginThrottle implements LoginAttempts {
  readonly #local = new LoginThrottle();

  constructor(
    private readonly store: SharedCounts,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** One statement that counts the attempt only if the account's wait is over; while it waits, a read for how long. */
  async beginAttempt(account: string, now: number, enforce: boolean): Promise<number> {
    const subject = `login-account:${account}`;
    try {
      if (!enforce) {
        await this.store.addToRun(subject, now, LoginThrottle.FORGET_AFTER_MS);
        return 0;
      }
      if (await this.store.addToRunAfterWait(subject, now, LoginThrottle.FORGET_AFTER_MS, LoginThrottle.BACKOFF)) return 0;
      const run = await this.store.read(subject, now);
      const waitUntil = run === undefined ? now : run.atMs + LoginThrottle.waitAfterMs(run.count);
      // Refused: at least a second, even if the wait ran out between the two statements.
      return Math.max(1, Math.ceil((waitUntil - now) / 1000));
    } catch (error) {
      this.onError(error);
      return this.#local.beginAttempt(account, now, enforce);
    }
  }

  async claimKnownPass(account: string, address: string, now: number): Promise<boolean> {
    try {
      return await this.store.addIfBelow(`login-pair:${pairKey(account, address)}`, LoginThrottle.KNOWN_FAILURES, now);
    } catch (error) {
      this.onError(error);
      return this.#local.claimKnownPass(account, address, now);
    }
  }

  async recordSuccess(account: string, address: string, now: number): Promise<void> {
    try {
      await Promise.all([
        this.store.remove(`login-account:${account}`),
        this.store.put(`login-pair:${pairKey(account, address)}`, 0, now, LoginThrottle.KNOWN_FOR_MS),
      ]);
    } catch (error) {
      this.onError(error);
      await this.#local.recordSuccess(account, address, now);
    }
  }
}

/** A subject's window as this instance sees it: the shared count as of the last exchange, and its own requests since. */
interface SharedWindow {
  /** `shared + unsent`: what the limiter decides on. */
  count: number;
  startMs: number;
  shared: number;
  unsent: number;
}

/** How often an instance adds its requests to the shared counts and reads the others' (while it has requests to add). */
export const EXCHANGE_MS = 100;

/**
 * Requests per subject over fixed windows, one budget for every instance (LOAD-1, SCALE-4), with
 * the request path kept synchronous: each request is counted here and decided at once on the
 * shared count as of the last exchange plus this instance's requests since; every `exchangeMs`
 * while it has requests to add, the instance adds them to the shared store in one round trip and
 * reads back every subject's total and window start. A window opens with the subject's first
 * request anywhere, as in memory.
 *
 * The price is a bounded overshoot: what the other instances passed since this one's last
 * exchange is not yet seen here, so a budget of B over N instances passes at most B plus what the
 * other instances pass in one exchange interval and round trip, and never more than N × B in a
 * window (all instances bursting before any exchange). Requests refused count too, as in memory.
 */
export class SharedRequestBudget extends FixedWindows<SharedWindow> {
  #timer: NodeJS.Timeout | undefined;
  #exchanging = false;
  #closed = false;

  constructor(
    max: number,
    windowMs: number,
    private readonly store: SharedCounts,
    private readonly options: {
      /** Names this budget's subjects in the store (keys and addresses are budgets of their own). */
      prefix: string;
      onError: (error: unknown) => void;
      exchangeMs?: number;
      capacity?: number;
    },
  ) {
    super(max, windowMs, options.capacity ?? 10_000);
  }

  spend(subject: string, nowMs: number): BudgetWindow {
    const window = this.window(subject, nowMs);
    window.unsent++;
    window.count++;
    if (this.#timer === undefined && !this.#exchanging && !this.#closed) this.#schedule();
    return window;
  }

  protected open(nowMs: number): SharedWindow {
    return { count: 0, startMs: nowMs, shared: 0, unsent: 0 };
  }

  /** Stops exchanging (the server is closing); requests not yet added are not. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    this.#timer = setTimeout(() => void this.#exchange(), this.options.exchangeMs ?? EXCHANGE_MS);
    this.#timer.unref();
  }

  /**
   * Adds every subject's unsent requests in one round trip and takes the totals back. A window
   * that lapsed here meanwhile was replaced in the map, so the answer for it changes nothing;
   * after a failed round trip the requests stay unsent and go with the next.
   */
  async #exchange(): Promise<void> {
    this.#timer = undefined;
    const sent = new Map<string, { window: SharedWindow; requests: number }>();
    for (const [subject, window] of this.windows()) {
      if (window.unsent > 0) sent.set(this.options.prefix + subject, { window, requests: window.unsent });
    }
    if (sent.size === 0) return;
    this.#exchanging = true;
    let more = false;
    try {
      const additions = new Map([...sent].map(([subject, { requests }]) => [subject, requests]));
      const totals = await this.store.addToWindows(additions, Date.now(), this.windowMs);
      for (const [subject, { window, requests }] of sent) {
        window.unsent -= requests;
        const total = totals.get(subject);
        if (total !== undefined) {
          // Another instance may have opened the window earlier, or the store a new one since.
          window.shared = total.count;
          window.startMs = total.atMs;
        }
        window.count = window.shared + window.unsent;
      }
    } catch (error) {
      this.options.onError(error);
    } finally {
      this.#exchanging = false;
      for (const [, window] of this.windows()) more ||= window.unsent > 0;
      if (more && !this.#closed) this.#schedule();
    }
  }
}
