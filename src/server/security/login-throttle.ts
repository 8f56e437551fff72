import type { Backoff } from './shared-counts.ts';

/**
 * Password guesses per account (SEC-2d), across every client address: NIST SP 800-63B §5.2.2 and
 * OWASP ASVS 2.2.1 ask that guessing one account is throttled however many addresses it comes
 * from. The address budget (`FailureLimiter`) cannot see that: 300 addresses each stay under it.
 *
 * - An account gets `FREE_FAILURES` consecutive failures; from then on every failure makes it wait
 *   1 s, 2 s, 4 s … at most `MAX_WAIT_MS` before the next password is even checked, and attempts
 *   during the wait answer 429 without counting, so the wait never grows past the cap. A success
 *   clears the count.
 * - So a stranger can hold an account's password logins back for a minute at a time, never longer,
 *   and a known client keeps its way in: an address the account signed in from within
 *   `KNOWN_FOR_MS` skips the account's wait and the address's failure budget (one attacker's
 *   failures at a shared NAT do not lock out the people who sign in there). That pass has a budget
 *   of its own: `KNOWN_FAILURES` consecutive failures from the pair end it until the next success,
 *   so someone else at the owner's address gets a handful of guesses, not a bypass.
 *
 * Accounts are keyed by e-mail digest whether or not a user has that e-mail, so a throttled answer
 * tells nothing about which e-mails exist. Kept in this process (`LoginThrottle`), or in a store
 * every instance shares (`SharedLoginThrottle` in shared-limits.ts, SCALE-4), so guesses spread
 * over the instances behind a balancer add up to one account's count.
 */
export interface LoginAttempts {
  /**
   * Counts an attempt at the account before its password is checked, in one atomic step with the
   * check of its wait (SEC-2d): answers 0 once counted, or the seconds the account must still wait,
   * counting nothing. So any number of concurrent attempts past the free ones are refused, not
   * checked: each sees the count the ones before it left. `enforce` false (a known client) counts
   * without asking about the wait. A success then clears the count (`recordSuccess`).
   */
  beginAttempt(account: string, now: number, enforce: boolean): Promise<number>;
  /**
   * Claims the known client's pass for one attempt: true when this address signed in to this
   * account lately and has failed fewer than `KNOWN_FAILURES` times since, the attempt counted
   * against that budget in the same atomic step (a success gives it back).
   */
  claimKnownPass(account: string, address: string, now: number): Promise<boolean>;
  recordSuccess(account: string, address: string, now: number): Promise<void>;
}

/** Password guesses counted in this process: one per data folder (SQLite). */
export class LoginThrottle implements LoginAttempts {
  static readonly FREE_FAILURES = 5;
  static readonly MAX_WAIT_MS = 60_000;
  static readonly KNOWN_FOR_MS = 30 * 24 * 60 * 60 * 1000;
  static readonly KNOWN_FAILURES = 5;
  /** An account's failures are forgotten after this long without one. */
  static readonly FORGET_AFTER_MS = 60 * 60 * 1000;

  private readonly accounts = new Map<string, { failures: number; lastFailure: number; waitUntil: number }>();
  private readonly pairs = new Map<string, { lastSuccess: number; failures: number }>();

  constructor(private readonly maxEntries = 100_000) {}

  /** The waits of `waitAfterMs`, as the shared stores apply them in one statement (shared-counts.ts). */
  static readonly BACKOFF: Backoff = { free: LoginThrottle.FREE_FAILURES, baseMs: 1000, maxMs: LoginThrottle.MAX_WAIT_MS };

  /** How long an account waits after its `failures`-th consecutive failure: nothing for the free ones. */
  static waitAfterMs(failures: number): number {
    const { free, baseMs, maxMs } = LoginThrottle.BACKOFF;
    const beyond = failures - free;
    return beyond < 0 ? 0 : Math.min(baseMs * 2 ** Math.min(beyond, 16), maxMs);
  }

  // Each method's check and count run without an await between them: atomic within this process.
  async beginAttempt(account: string, now: number, enforce: boolean): Promise<number> {
    let state = this.accounts.get(account);
    if (state && now - state.lastFailure >= LoginThrottle.FORGET_AFTER_MS) {
      this.accounts.delete(account);
      state = undefined;
    }
    if (enforce && state && state.waitUntil > now) return Math.ceil((state.waitUntil - now) / 1000);
    if (!state) {
      state = { failures: 0, lastFailure: now, waitUntil: 0 };
      this.remember(this.accounts, account, state, (s) => now - s.lastFailure >= LoginThrottle.FORGET_AFTER_MS);
    }
    state.failures++;
    state.lastFailure = now;
    state.waitUntil = now + LoginThrottle.waitAfterMs(state.failures);
    return 0;
  }

  async claimKnownPass(account: string, address: string, now: number): Promise<boolean> {
    const pair = this.pairs.get(pairKey(account, address));
    if (pair === undefined || now - pair.lastSuccess >= LoginThrottle.KNOWN_FOR_MS || pair.failures >= LoginThrottle.KNOWN_FAILURES) {
      return false;
    }
    pair.failures++;
    return true;
  }

  async recordSuccess(account: string, address: string, now: number): Promise<void> {
    this.accounts.delete(account);
    const key = pairKey(account, address);
    this.pairs.delete(key); // re-inserted last: the oldest pairs are the first to go when full
    this.remember(this.pairs, key, { lastSuccess: now, failures: 0 }, (p) => now - p.lastSuccess >= LoginThrottle.KNOWN_FOR_MS);
  }

  /** Adds an entry; when full, drops stale entries, then the oldest, so guessing random e-mails cannot grow memory. */
  private remember<T>(map: Map<string, T>, key: string, value: T, stale: (value: T) => boolean): void {
    if (map.size >= this.maxEntries) {
      for (const [k, v] of map) if (stale(v)) map.delete(k);
      for (const k of map.keys()) {
        if (map.size < this.maxEntries) break;
        map.delete(k);
      }
    }
    map.set(key, value);
  }
}

/** The account and address a known client is kept under. */
export const pairKey = (account: string, address: string) => `${account}\n${address}`;
