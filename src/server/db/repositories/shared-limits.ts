import { sql } from 'kysely';
import type { Backoff, StoredCount } from '../../security/shared-counts.ts';
import type { Executor } from '../types.ts';

// The shared counts of the limits in PostgreSQL's UNLOGGED `shared_limits` table (SCALE-4), each
// operation one statement, atomic under concurrent instances. The table exists on PostgreSQL only;
// `cluster/pg-shared-counts.ts` runs these on connections of its own.

interface Row {
  subject: string;
  hits: number;
  /** int8, which the pool reads as text. */
  at_ms: string;
}

const stored = (row: Row): StoredCount => ({ count: row.hits, atMs: Number(row.at_ms) });

/**
 * Adds each subject's count to its window (a lapsed one starts again at `nowMs`), in one statement
 * for every subject and in a fixed order, so two instances adding the same subjects lock their
 * rows in the same order and never deadlock.
 */
export async function addToWindows(
  executor: Executor,
  additions: ReadonlyMap<string, number>,
  nowMs: number,
  windowMs: number,
): Promise<Map<string, StoredCount>> {
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
    RETURNING subject, hits, at_ms`.execute(executor);
  return new Map(rows.map((row) => [row.subject, stored(row)]));
}

/** The upsert of `addToRun`, which `addToRunAfterWait` guards with a WHERE on its update. */
const upsertRun = (subject: string, nowMs: number, keepMs: number) => sql`
    INSERT INTO shared_limits AS l (subject, hits, at_ms, expires_ms)
    VALUES (${subject}, 1, ${nowMs}::bigint, ${nowMs + keepMs}::bigint)
    ON CONFLICT (subject) DO UPDATE SET
      hits = CASE WHEN l.expires_ms <= ${nowMs}::bigint THEN 1 ELSE l.hits + 1 END,
      at_ms = excluded.at_ms,
      expires_ms = excluded.expires_ms`;

/** Adds one to the subject's run (a lapsed run starts again), its latest event now, kept `keepMs` more. */
export async function addToRun(executor: Executor, subject: string, nowMs: number, keepMs: number): Promise<StoredCount> {
  const { rows } = await sql<Row>`${upsertRun(subject, nowMs, keepMs)}
    RETURNING subject, hits, at_ms`.execute(executor);
  return stored(rows[0] as Row);
}

/** `addToRun` only when the run's wait (`backoff`) is over; whether it added. */
export async function addToRunAfterWait(
  executor: Executor,
  subject: string,
  nowMs: number,
  keepMs: number,
  backoff: Backoff,
): Promise<boolean> {
  // The row is locked by the upsert, so the wait is judged on the count no other attempt can change meanwhile.
  const { rows } = await sql<Row>`${upsertRun(subject, nowMs, keepMs)}
    WHERE l.expires_ms <= ${nowMs}::bigint
      OR l.hits < ${backoff.free}
      OR l.at_ms + LEAST(${backoff.baseMs}::bigint * power(2, LEAST(l.hits - ${backoff.free}, 16))::bigint, ${backoff.maxMs}::bigint) <= ${nowMs}::bigint
    RETURNING subject, hits, at_ms`.execute(executor);
  return rows.length > 0;
}

/** Adds one to a count that has not lapsed and is below `limit`; whether it added. */
export async function addIfBelow(executor: Executor, subject: string, limit: number, nowMs: number): Promise<boolean> {
  const result = await sql`
    UPDATE shared_limits SET hits = hits + 1
    WHERE subject = ${subject} AND expires_ms > ${nowMs}::bigint AND hits < ${limit}`.execute(executor);
  return Number(result.numAffectedRows ?? 0) > 0;
}

/** Takes one from a count above zero that has not lapsed. */
export async function subtractIfPresent(executor: Executor, subject: string, nowMs: number): Promise<void> {
  await sql`
    UPDATE shared_limits SET hits = hits - 1
    WHERE subject = ${subject} AND expires_ms > ${nowMs}::bigint AND hits > 0`.execute(executor);
}

/** The subject's count, unless it lapsed. */
export async function readCount(executor: Executor, subject: string, nowMs: number): Promise<StoredCount | undefined> {
  const { rows } = await sql<Row>`
    SELECT subject, hits, at_ms FROM shared_limits WHERE subject = ${subject} AND expires_ms > ${nowMs}::bigint`.execute(executor);
  const row = rows[0];
  return row === undefined ? undefined : stored(row);
}

/** Sets the subject's count, whatever it was. */
export async function putCount(executor: Executor, subject: string, count: number, nowMs: number, keepMs: number): Promise<void> {
  await sql`
    INSERT INTO shared_limits (subject, hits, at_ms, expires_ms)
    VALUES (${subject}, ${count}, ${nowMs}::bigint, ${nowMs + keepMs}::bigint)
    ON CONFLICT (subject) DO UPDATE SET hits = excluded.hits, at_ms = excluded.at_ms, expires_ms = excluded.expires_ms`.execute(executor);
}

/** Adds one to the subject's count when it has one. */
export async function addIfPresent(executor: Executor, subject: string): Promise<void> {
  await sql`UPDATE shared_limits SET hits = hits + 1 WHERE subject = ${subject}`.execute(executor);
}

export async function removeCount(executor: Executor, subject: string): Promise<void> {
  await sql`DELETE FROM shared_limits WHERE subject = ${subject}`.execute(executor);
}

/** Deletes every count that lapsed by `nowMs` (whichever instance left it). */
export async function deleteLapsedCounts(executor: Executor, nowMs: number): Promise<void> {
  await sql`DELETE FROM shared_limits WHERE expires_ms <= ${nowMs}::bigint`.execute(executor);
}
