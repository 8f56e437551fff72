import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitOptions {
  /** How long to keep trying before failing; default 5 s. */
  timeoutMs?: number;
  /** Pause between tries; default 10 ms. */
  intervalMs?: number;
  /** What is awaited, for the failure message (a function to report the state at the time-out). */
  message?: string | (() => string);
  /**
   * What the awaited thing has done so far (rows loaded, bytes read): each time its answer changes,
   * the time-out starts again, so only a stall fails, however long the whole takes.
   */
  progress?: () => unknown | Promise<unknown>;
}

/**
 * Calls `condition` until it returns a truthy value (which it resolves with), every `intervalMs`,
 * and fails after `timeoutMs` with a message that says what was awaited. Use it wherever a test
 * would otherwise sleep a fixed time and hope the thing has happened by then.
 */
export async function waitFor<T>(condition: () => T | Promise<T>, options: WaitOptions = {}): Promise<NonNullable<T>> {
  const { timeoutMs = 5000, intervalMs = 10, message, progress } = options;
  let deadline = Date.now() + timeoutMs;
  let seen = await progress?.();
  let lastError: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as NonNullable<T>;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (progress) {
      const now = await progress();
      if (now !== seen) [seen, deadline] = [now, Date.now() + timeoutMs];
    }
    if (Date.now() >= deadline) {
      const what = typeof message === 'function' ? message() : (message ?? condition.toString());
      const cause =
        lastError === undefined ? '' : ` (last try threw: ${lastError instanceof Error ? lastError.message : String(lastError)})`;
      throw new Error(`waitFor: not so after ${timeoutMs} ms${progress ? ` without progress (at ${String(seen)})` : ''}: ${what}${cause}`);
    }
    await sleep(intervalMs);
  }
}

/**
 * A deliberate pause, where the waiting itself is the test (a client that must stall, a load that
 * must run for a while, a window in which something must NOT happen). Every call says why.
 */
export const delay = (ms: number): Promise<void> => sleep(ms);
