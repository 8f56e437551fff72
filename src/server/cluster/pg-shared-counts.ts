import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { hearConnectionErrors } from '../db/pg-pool.ts';
import type { Database, DB } from '../db/types.ts';
import type { Backoff, SharedCounts, StoredCount } from '../security/shared-counts.ts';

/** How often lapsed counts are deleted (by each instance; a delete finds what the others left). */
const SWEEP_MS = 60_000;
/** Connections of the counts' own: a flood of failed keys waits for these, never for the request pool. */
const CONNECTIONS = 3;
/**
 * How long a connection may take to open, a statement to run (PostgreSQL cancels it), and a
 * statement to be answered at all (a database that stopped answering, its packets dropped). A
 * failure counts locally meanwhile (shared-limits.ts): a request waits seconds at worst, never
 * for ever, and `close()` ends.
 */
const TIMEOUTS = { connectionTimeoutMillis: 2000, statement_timeout: 5000, query_timeout: 6000 };

interface Row {
  subject: string;
  hits: number;
  /** int8, which this pool reads as text. */
  at_ms: string;
}

/**
 * The shared counts in PostgreSQL (SCALE-4), in the UNLOGGED table `shared_limits`: counts are
 * worth no write-ahead log, and a crash of the server that empties the table only gives every
 * subject a fresh budget. Each operation is one statement, atomic under concurrent instances; a
 * lapsed row is reset by the write that finds it and deleted by a sweep once a minute.
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
    const pool = new pg.Pool({ connectionString: databaseUrl, max: CONNECTIONS, ...TIMEOUTS });
    // Without a listener a connection's error is an uncaught exception that ends the process.
    hearConnectionErrors(pool, onError);
    this.#db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  }

  /**
   * One statement for every subject, in a fixed order so that two instances adding the same
   * subjects lock their rows in the same order and never deadlock.
   */
  async addToWindows(additions: ReadonlyMap<string, number>, nowMs: number, windowMs: number): Promise<Map<string, StoredCount>> {
    const subjects = [...additions.keys()].sort();
    const counts = subjects.map((subject) => additions.get(subject) as number);
    const { rows } = await sql<Row>`
      INSERT INTO shared_limits AS l (subject, hits, at_ms, expires_ms)
      SELECT subject, hits, ${nowMs}::bigint, ${nowMs + windowMs}::bigint
      FROM unnest(${subjects}::text[], ${counts}::integer[]) AS a(subject, hits)
      ORDER BY subject
      ON CONFLICT (subject) DO UPDATE SET
        hits = CASE WHEN l.expires_ms <= ${nowMs}::bigint THEN excluded.hits ELSE l.hits + excluded.hits END,
        at_ms = CASE WHEN l.expires_ms <= ${nowMs}::bigint THEN excluded.at_ms ELSE l.at_ms END,
        expires_ms = CASE WHEN l.expires_ms <= ${nowMs}::bigint THEN excluded.expires_ms ELSE l.expires_ms END
      RETURNING subject, hits, at_ms`.execute(this.#db);
    return new Map(rows.map((row) => [row.subject, { count: row.hits, atMs: Number(row.at_ms) }]));
  }

  async addToRun(subject: string, nowMs: number, keepMs: number): Promise<StoredCount> {
    const { rows } = await sql<Row>`
      INSERT INTO shared_limits AS l (subject, hits, at_ms, expires_ms)
      VALUES (${subject}, 1, ${nowMs}::bigint, ${nowMs + keepMs}::bigint)
      ON CONFLICT (subject) DO UPDATE SET
        hits = CASE WHEN l.expires_ms <= ${nowMs}::bigint THEN 1 ELSE l.hits + 1 END,
        at_ms = excluded.at_ms,
        expires_ms = excluded.expires_ms
      RETURNING subject, hits, at_ms`.execute(this.#db);
    const row = rows[0] as Row;
    return { count: row.hits, atMs: Number(row.at_ms) };
  }

  async addToRunAfterWait(subject: string, nowMs: number, keepMs: number, backoff: Backoff): Promise<boolean> {
    // The row is locked by the upsert, so the wait is judged on the count no other attempt can change meanwhile.
    const { rows } = await sql<Row>`
      INSERT INTO shared_limits AS l (subject, hits, at_ms, expires_ms)
      VALUES (${subject}, 1, ${nowMs}::bigint, ${nowMs + keepMs}::bigint)
      ON CONFLICT (subject) DO UPDATE SET
        hits = CASE WHEN l.expires_ms <= ${nowMs}::bigint THEN 1 ELSE l.hits + 1 END,
        at_ms = excluded.at_ms,
        expires_ms = excluded.expires_ms
      WHERE l.expires_ms <= ${nowMs}::bigint
        OR l.hits < ${backoff.free}
        OR l.at_ms + LEAST(${backoff.baseMs}::bigint * power(2, LEAST(l.hits - ${backoff.free}, 16))::bigint, ${backoff.maxMs}::bigint) <= ${nowMs}::bigint
      RETURNING subject, hits, at_ms`.execute(this.#db);
    return rows.length > 0;
  }

  async addIfBelow(subject: string, limit: number, nowMs: number): Promise<boolean> {
    const result = await sql`
      UPDATE shared_limits SET hits = hits + 1
      WHERE subject = ${subject} AND expires_ms > ${nowMs}::bigint AND hits < ${limit}`.execute(this.#db);
    return Number(result.numAffectedRows ?? 0) > 0;
  }

  async subtractIfPresent(subject: string, nowMs: number): Promise<void> {
    await sql`
      UPDATE shared_limits SET hits = hits - 1
      WHERE subject = ${subject} AND expires_ms > ${nowMs}::bigint AND hits > 0`.execute(this.#db);
  }

  async read(subject: string, nowMs: number): Promise<StoredCount | undefined> {
    const { rows } = await sql<Row>`
      SELECT subject, hits, at_ms FROM shared_limits WHERE subject = ${subject} AND expires_ms > ${nowMs}::bigint`.execute(this.#db);
    const row = rows[0];
    return row === undefined ? undefined : { count: row.hits, atMs: Number(row.at_ms) };
  }

  async put(subject: string, count: number, nowMs: number, keepMs: number): Promise<void> {
    await sql`
      INSERT INTO shared_limits (subject, hits, at_ms, expires_ms)
      VALUES (${subject}, ${count}, ${nowMs}::bigint, ${nowMs + keepMs}::bigint)
      ON CONFLICT (subject) DO UPDATE SET hits = excluded.hits, at_ms = excluded.at_ms, expires_ms = excluded.expires_ms`.execute(this.#db);
  }

  async addIfPresent(subject: string): Promise<void> {
    await sql`UPDATE shared_limits SET hits = hits + 1 WHERE subject = ${subject}`.execute(this.#db);
  }

  async remove(subject: string): Promise<void> {
    await sql`DELETE FROM shared_limits WHERE subject = ${subject}`.execute(this.#db);
  }

  /** Starts the sweep of lapsed counts (the server; a command never counts). */
  start(): void {
    this.#sweep = setInterval(() => {
      sql`DELETE FROM shared_limits WHERE expires_ms <= ${Date.now()}::bigint`.execute(this.#db).catch(this.onError);
    }, SWEEP_MS);
    this.#sweep.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.#sweep);
    await this.#db.destroy();
  }
}
