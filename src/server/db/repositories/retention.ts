import { sql } from 'kysely';
import { dialectOf } from '../dialect.ts';
import type { Executor } from '../types.ts';

// Queries of retention (RET-2): which finished runs a policy expires, and the sweep's lock.

export interface Policy {
  /** Finished before these times (ISO), a run has no age left: passed and others, failed and broken. */
  cutoff?: string;
  failedCutoff?: string;
  /** Among the newest this many finished runs of its test, a run is kept. */
  lastRunsPerTest?: number;
}

/** Projects with their own policy text (null: the instance default). */
export async function projectsForRetention(executor: Executor): Promise<{ id: string; key: string; retention: string | null }[]> {
  return executor.selectFrom('projects').select(['id', 'key', 'retention']).orderBy('key').execute();
}

/**
 * Runs of the project the policy expires, oldest first, up to `limit`, from `from` (a finish time)
 * on: finished (completed or aborted), not kept, and kept by no rule the policy sets. A run is kept
 * while it finished after its cutoff, or while it is among the `lastRunsPerTest` finished runs of
 * its test that finished last; with both rules, either keeps it.
 *
 * The sweep pages through the project with `from` set to the last page's last finish time, once
 * that page's runs are deleted: each of them is then gone or marked keep, so none comes back, and
 * the page reads only from there on. A run's place among its test's runs depends only on the runs
 * that finished after it, so the ranking reads no run older than `from` either.
 */
export async function expiredRuns(
  executor: Executor,
  projectId: string,
  policy: Policy,
  limit: number,
  from?: string,
): Promise<{ id: string; finishedAt: string }[]> {
  const byAge = policy.cutoff !== undefined || policy.failedCutoff !== undefined;
  const byCount = policy.lastRunsPerTest !== undefined;
  if (!byAge && !byCount) return [];
  // A kind of run without a cutoff (only failedDays set: passed runs) is kept by its age.
  const failedCutoff = policy.failedCutoff ?? policy.cutoff;
  const olderThan = (cutoff: string | undefined) => (cutoff === undefined ? sql`1 = 0` : sql`r.finished_at < ${cutoff}`);
  const old = byAge
    ? sql`(CASE WHEN r.verdict IN ('failed', 'broken') THEN ${olderThan(failedCutoff)} ELSE ${olderThan(policy.cutoff)} END)`
    : sql`1 = 1`;
  const since = from === undefined ? sql`` : sql`AND finished_at >= ${from}`;
  if (!byCount) {
    // By age alone no ranking: the runs older than the later cutoff are one range of the
    // retention index (project_id, finished_at), read in its order.
    const latest =
      [policy.cutoff, failedCutoff]
        .filter((c): c is string => c !== undefined)
        .sort()
        .at(-1) ?? '';
    const rows = await sql<{ id: string; finished_at: string }>`
      SELECT r.id, r.finished_at FROM test_runs r
      WHERE r.project_id = ${projectId} AND r.finished_at < ${latest} ${since}
        AND r.status IN ('completed', 'aborted') AND r.keep = 0 AND ${old}
      ORDER BY r.finished_at
      LIMIT ${limit}`.execute(executor);
    return rows.rows.map((row) => ({ id: row.id, finishedAt: row.finished_at }));
  }
  // Runs without a test are kept by no count: with a count rule alone they never expire.
  const beyond = byAge
    ? sql`(r.test_id IS NULL OR r.rank > ${policy.lastRunsPerTest})`
    : sql`(r.test_id IS NOT NULL AND r.rank > ${policy.lastRunsPerTest})`;
  const rows = await sql<{ id: string; finished_at: string }>`
    SELECT r.id, r.finished_at FROM (
      SELECT id, test_id, verdict, finished_at, keep,
             ROW_NUMBER() OVER (PARTITION BY test_id ORDER BY finished_at DESC, id DESC) AS rank
      FROM test_runs
      WHERE project_id = ${projectId} AND status IN ('completed', 'aborted') AND finished_at IS NOT NULL ${since}
    ) r
    WHERE r.keep = 0 AND ${old} AND ${beyond}
    ORDER BY r.finished_at
    LIMIT ${limit}`.execute(executor);
  return rows.rows.map((row) => ({ id: row.id, finishedAt: row.finished_at }));
}

/**
 * Deletes these runs (with everything they hold, by cascade) unless marked to keep meanwhile;
 * answers how many went.
 */
export async function deleteRuns(executor: Executor, runIds: readonly string[]): Promise<number> {
  if (runIds.length === 0) return 0;
  const result = await executor.deleteFrom('test_runs').where('id', 'in', runIds).where('keep', '=', 0).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Takes the sweep's lock for the rest of the transaction, or answers false when another instance
 * holds it (PostgreSQL; an advisory lock). SQLite has one writing process per data folder.
 */
export async function trySweepLock(trx: Executor): Promise<boolean> {
  if (dialectOf(trx) !== 'postgres') return true;
  const result = await sql<{ locked: boolean }>`SELECT pg_try_advisory_xact_lock(7427001) AS locked`.execute(trx);
  return result.rows[0]?.locked === true;
}

/** Sets or clears a run's keep mark; false when the run is gone. */
export async function setKeep(executor: Executor, runId: string, keep: boolean): Promise<boolean> {
  const result = await executor
    .updateTable('test_runs')
    .set({ keep: keep ? 1 : 0 })
    .where('id', '=', runId)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
