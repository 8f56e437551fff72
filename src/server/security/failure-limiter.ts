/**
 * Failed authentications per subject (client address, or legacy e-mail digest) in a fixed
 * one-minute window: stricter than the per-key rate limit because these are guesses (SEC-2b).
 * Counted in this process (`FailureLimiter`), or in a store every instance shares
 * (`SharedFailureLimiter` in shared-limits.ts, SCALE-4), so a guesser cannot multiply the budget by
 * the number of instances behind the balancer. Only failure paths ask, so a shared store's round
 * trip never slows a request that authenticates.
 */
export interface FailureCounts {
  /** Seconds until `subject` may try again, or 0 when it is not throttled. */
  retryAfter(subject: string): Promise<number>;
  /** Counts a failure, and answers what `retryAfter` said just before it: atomic, so concurrent callers each see the ones before. */
  recordFailure(subject: string): Promise<number>;
  /** Takes back one failure counted in the subject's open window (an attempt counted before its check, which then passed or was refused). */
  forgive(subject: string): Promise<void>;
}

/** The seconds a subject waits, given its window: none below the limit, at least one above it. */
export const failureWait = (failures: number, limit: number, remainingMs: number): number =>
  failures >= limit ? Math.max(1, Math.ceil(remainingMs / 1000)) : 0;

/** Failures counted in this process: one per data folder (SQLite), each throttling what it sees. */
export class FailureLimiter implements FailureCounts {
  private readonly windows = new Map<string, { start: number; failures: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  async retryAfter(subject: string): Promise<number> {
    return this.wait(subject, this.now());
  }

  async recordFailure(subject: string): Promise<number> {
    const now = this.now();
    const wait = this.wait(subject, now);
    const window = this.windows.get(subject);
    if (!window || now - window.start >= this.windowMs) {
      this.windows.set(subject, { start: now, failures: 1 });
      if (this.windows.size > 100_000) this.sweep(now);
    } else {
      window.failures++;
    }
    return wait;
  }

  async forgive(subject: string): Promise<void> {
    const window = this.windows.get(subject);
    if (window && this.now() - window.start < this.windowMs && window.failures > 0) window.failures--;
  }

  private wait(subject: string, now: number): number {
    const window = this.windows.get(subject);
    if (!window) return 0;
    const elapsed = now - window.start;
    if (elapsed >= this.windowMs) {
      this.windows.delete(subject);
      return 0;
    }
    return failureWait(window.failures, this.limit, this.windowMs - elapsed);
  }

  private sweep(now: number): void {
    for (const [subject, window] of this.windows) {
      if (now - window.start >= this.windowMs) this.windows.delete(subject);
    }
  }
}
