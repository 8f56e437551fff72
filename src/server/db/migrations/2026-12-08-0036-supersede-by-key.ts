import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// PostgreSQL only: the statement trigger that keeps a run's `superseded` (migration 0023) finds
// the earlier attempts of the inserted runs' tests by the key of test_runs_job_test, a probe per
// test in its job, whatever the table's statistics say (IMP-1, SCALE-11).
//
// Migration 0023 joined the inserted rows to test_runs and checked each for a later attempt. A job
// being written is too new for the statistics, and a table never analysed looks tiny, so the
// planner took the job's runs for a handful: it scanned test_runs whole and probed each inserted
// run's job by a narrower index with the test as a filter, reading the whole job once per run
// (250 runs × 4,750 runs at an import's last batch: 125 to 280 ms of a batch's insert). The probes
// here are LATERAL, driven by the inserted tests, whose values the planner cannot see: each is an
// index range of one test in one job. The runs they find (rarely any: an import's tests have one
// attempt each) are then updated by id. The usage counts and day rows are kept as before.

/** The trigger function of migration 0023 up to the step this migration changes: the books kept per statement. */
const BOOKS = `PERFORM 1 FROM project_usage WHERE project_id IN (SELECT project_id FROM inserted) ORDER BY project_id FOR NO KEY UPDATE;
       UPDATE project_usage u SET runs = u.runs + n.runs
         FROM (SELECT project_id, count(*) AS runs FROM inserted x GROUP BY project_id) n WHERE u.project_id = n.project_id;
       INSERT INTO run_days AS d (project_id, day, branch, runs, passed, failed, skipped, duration_sum, durations)
         SELECT project_id, day, branch, sum(runs), sum(passed), sum(failed), sum(skipped), sum(duration_sum), sum(durations)
         FROM (SELECT r.project_id, substr(r.finished_at, 1, 10) AS day, coalesce(r.branch, '') AS branch, 1 AS runs,
             1 * CASE WHEN r.verdict = 'passed' THEN 1 ELSE 0 END AS passed,
             1 * CASE WHEN r.verdict IN ('failed', 'broken')
               AND NOT (r.job_id IS NOT NULL AND r.test_id IS NOT NULL AND r.superseded = 1) THEN 1 ELSE 0 END AS failed,
             1 * CASE WHEN r.verdict = 'skipped' THEN 1 ELSE 0 END AS skipped, 1 * coalesce(r.duration_ms, 0) AS duration_sum,
             1 * CASE WHEN r.duration_ms IS NULL THEN 0 ELSE 1 END AS durations
           FROM inserted r WHERE r.status = 'completed' AND r.finished_at IS NOT NULL
             AND EXISTS (SELECT 1 FROM project_usage u WHERE u.project_id = r.project_id)) delta
         GROUP BY project_id, day, branch
         HAVING sum(runs) <> 0 OR sum(passed) <> 0 OR sum(failed) <> 0 OR sum(skipped) <> 0 OR sum(durations) <> 0
           OR sum(duration_sum) <> 0
         ORDER BY project_id, day, branch
         ON CONFLICT (project_id, day, branch) DO UPDATE SET runs = d.runs + excluded.runs, passed = d.passed + excluded.passed,
           failed = d.failed + excluded.failed, skipped = d.skipped + excluded.skipped,
           duration_sum = d.duration_sum + excluded.duration_sum, durations = d.durations + excluded.durations;`;

/** Migration 0023's step: the earlier attempts of the inserted runs' tests, joined as the planner chose. */
const SUPERSEDE_0023 = `EXECUTE $q$UPDATE test_runs t SET superseded = 1 FROM (SELECT job_id, test_id, max(attempt) AS attempt FROM inserted x
         WHERE job_id IS NOT NULL AND test_id IS NOT NULL GROUP BY job_id, test_id) n
         WHERE t.job_id = n.job_id AND t.test_id = n.test_id AND t.superseded = 0
           AND EXISTS (SELECT 1 FROM test_runs later WHERE later.job_id = t.job_id AND later.test_id = t.test_id AND later.attempt > t.attempt)$q$;`;

/**
 * This migration's step: per test of the inserted runs in its job, its highest attempt, then its
 * runs below it not yet superseded (the inserted ones among them when a later attempt was there
 * first), both probes by key; then those runs by id, when there are any. `OFFSET 0` keeps the
 * second probe a probe: without it the planner folded it into a hash join over all of test_runs
 * (10,000 rows read for 250 inserted). Planned on each call (EXECUTE), as 0023 says why.
 */
const SUPERSEDE_BY_KEY = `EXECUTE $q$SELECT array_agg(s.id) FROM (SELECT job_id, test_id FROM inserted x
           WHERE job_id IS NOT NULL AND test_id IS NOT NULL GROUP BY job_id, test_id) n
         CROSS JOIN LATERAL (SELECT max(m.attempt) AS attempt FROM test_runs m WHERE m.job_id = n.job_id AND m.test_id = n.test_id) top
         CROSS JOIN LATERAL (SELECT l.id FROM test_runs l
           WHERE l.job_id = n.job_id AND l.test_id = n.test_id AND l.superseded = 0 AND l.attempt < top.attempt OFFSET 0) s$q$
         INTO superseded_ids;
       IF superseded_ids IS NOT NULL THEN
         UPDATE test_runs SET superseded = 1 WHERE id = ANY (superseded_ids);
       END IF;`;

const insertedFunction = (
  supersede: string,
) => `CREATE OR REPLACE FUNCTION attest_test_runs_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
     DECLARE
       superseded_ids text[];
     BEGIN
       ${BOOKS}
       ${supersede}
       RETURN NULL;
     END $$`;

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql.raw(insertedFunction(SUPERSEDE_BY_KEY)).execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql.raw(insertedFunction(SUPERSEDE_0023)).execute(db);
}
