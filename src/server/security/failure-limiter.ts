/**
 * Counts failed authentications per subject (client address, or legacy e-mail digest) in a
 * fixed one-minute window. Stricter than the per-key rate limit because these are guesses
 * (SEC-2b). In memory: one process per data folder, or per instance behind a
 * balancer, each throttling what it sees.
 */
export class FailureLimiter {
  private readonly windows = new Map<string, { start: number; failures: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Seconds until `subject` may try again, or 0 when it is not throttled. */
  retryAfter(subject: string): number {
    const window = this.windows.get(subject);
    if (!window) return 0;
    const elapsed = this.now() - window.start;
    if (elapsed >= this.windowMs) {
      this.windows.delete(subject);
      return 0;
    }
    return window.failures >= this.limit ? Math.max(1, Math.ceil((this.windowMs - elapsed) / 1000)) : 0;
  }

  recordFailure(subject: string): void {
    const now = this.now();
    const window = this.windows.get(subject);
    if (!window || now - window.start >= this.windowMs) {
      this.windows.set(subject, { start: now, failures: 1 });
      if (this.windows.size > 100_000) this.sweep(now);
    } else {
      window.failures++;
    }
  }

  private sweep(now: number): void {
    for (const [subject, window] of this.windows) {
      if (now - window.start >= this.windowMs) this.windows.delete(subject);
    }
  }
}
