/**
 * The port of the counts every instance shares (SCALE-4): what the shared rate limit, failure
 * limiter and login throttle (shared-limits.ts) need of a store, implemented on PostgreSQL and on
 * Redis in cluster/. A count is kept per subject with a time (`atMs`: when its window opened, or
 * its latest event) and lapses at a time of its own; a lapsed count reads as none. Times are the
 * callers' clocks (instances keep theirs in step, as NTP does), so a test's clock moves them too.
 */
export interface StoredCount {
  count: number;
  atMs: number;
}

/** When a run of failures makes its subject wait: none for the first `free`, then `baseMs` doubling per failure, at most `maxMs`. */
export interface Backoff {
  free: number;
  baseMs: number;
  maxMs: number;
}

export interface SharedCounts {
  /**
   * Adds to each subject's count in its fixed window of `windowMs`: a lapsed or missing window
   * opens at `nowMs` with the count added. Answers every subject's window as it now stands.
   */
  addToWindows(additions: ReadonlyMap<string, number>, nowMs: number, windowMs: number): Promise<Map<string, StoredCount>>;
  /** Adds one to a run of events that lapses `keepMs` after its latest (a lapsed run starts again at one), marking `nowMs` the latest. */
  addToRun(subject: string, nowMs: number, keepMs: number): Promise<StoredCount>;
  /**
   * `addToRun`, only when the run's wait after its latest event (`backoff`, by its count) is over,
   * in one atomic step: true when added; false (nothing added) while the subject must wait.
   */
  addToRunAfterWait(subject: string, nowMs: number, keepMs: number, backoff: Backoff): Promise<boolean>;
  /** Adds one to the subject's count when it has one that has not lapsed by `nowMs` and is below `limit`, atomically: true when added. */
  addIfBelow(subject: string, limit: number, nowMs: number): Promise<boolean>;
  /** Takes one from the subject's count when it has one above zero that has not lapsed by `nowMs`. */
  subtractIfPresent(subject: string, nowMs: number): Promise<void>;
  /** The subject's count, unless it lapsed by `nowMs`. */
  read(subject: string, nowMs: number): Promise<StoredCount | undefined>;
  /** Sets a subject's count as of `nowMs`, lapsing `keepMs` later. */
  put(subject: string, count: number, nowMs: number, keepMs: number): Promise<void>;
  /** Adds one to the subject's count if it has one, leaving its times. */
  addIfPresent(subject: string): Promise<void>;
  remove(subject: string): Promise<void>;
}
