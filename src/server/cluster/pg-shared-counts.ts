import { openOwnConnections } from '../db/lease-connections.ts';
import * as limits from '../db/repositories/shared-limits.ts';
import type { DB } from '../db/types.ts';
import type { Backoff, SharedCounts, StoredCount } from '../security/shared-counts.ts';

/** How often lapsed counts are deleted (by each instance; a delete finds what the others left). */
const SWEEP_MS = 60_000;
/**
 * Connections of the counts' own: a flood of failed keys waits for these, never for the request
 * pool. Each opens in 2 s, a statement runs 5 s at most (PostgreSQL cancels it) and is answered in
 * 6 s or fails (a database that stopped answering, its packets dropped): a failure counts locally
 * meanwhile (shared-limits.ts), so a request waits seconds at worst, never for ever, and `close()` ends.
 */
const CONNECTIONS = 3;

/**
 * The shared counts in PostgreSQL (SCALE-4), in the UNLOGGED table `shared_limits`: counts are
 * worth no write-ahead log, and a crash of the server that empties the table only gives every
 * subject a fresh budget. Each operation is one statement, atomic under concurrent instances; a
 * lapsed row is reset by the write that finds it and deleted by a sweep once a minute. The
 * statements are `db/repositories/shared-limits.ts`.
 *
 * The counts run on a few connections of their own, opened on first use: a burst of failed
 * authentications (each one counted) cannot take the connections requests need, and a request
 * refused before any lookup (AUTH-2) runs no statement of the request pool.
 */
export class PgSharedCounts implements SharedCounts {
  readonly #db: DB;
  #sweep: NodeJS.Timeout | undefined;

  constructor(
    databaseUrl: string,
    private readonly onError: (error: unknown) => void,
  ) {
    this.#db = openOwnConnections(databaseUrl, CONNECTIONS, onError);
  }

  addToWindows(additions: ReadonlyMap<string, number>, nowMs: number, windowMs: number): Promise<Map<string, StoredCount>> {
    return limits.addToWindows(this.#db, additions, nowMs, windowMs);
  }

  addToRun(subject: string, nowMs: number, keepMs: number): Promise<StoredCount> {
    return limits.addToRun(this.#db, subject, nowMs, keepMs);
  }

  addToRunAfterWait(subject: string, nowMs: number, keepMs: number, backoff: Backoff): Promise<boolean> {
    return limits.addToRunAfterWait(this.#db, subject, nowMs, keepMs, backoff);
  }

  addIfBelow(subject: string, limit: number, nowMs: number): Promise<boolean> {
    return limits.addIfBelow(this.#db, subject, limit, nowMs);
  }

  subtractIfPresent(subject: string, nowMs: number): Promise<void> {
    return limits.subtractIfPresent(this.#db, subject, nowMs);
  }

  read(subject: string, nowMs: number): Promise<StoredCount | undefined> {
    return limits.readCount(this.#db, subject, nowMs);
  }

  put(subject: string, count: number, nowMs: number, keepMs: number): Promise<void> {
    return limits.putCount(this.#db, subject, count, nowMs, keepMs);
  }

  addIfPresent(subject: string): Promise<void> {
    return limits.addIfPresent(this.#db, subject);
  }

  remove(subject: string): Promise<void> {
    return limits.removeCount(this.#db, subject);
  }

  /** Starts the sweep of lapsed counts (the server; a command never counts). */
  start(): void {
    this.#sweep = setInterval(() => {
      limits.deleteLapsedCounts(this.#db, Date.now()).catch(this.onError);
    }, SWEEP_MS);
    this.#sweep.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.#sweep);
    await this.#db.destroy();
  }
}
