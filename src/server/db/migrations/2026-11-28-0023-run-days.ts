import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// The dashboard's daily outcomes (TRIAGE-8) as a rollup kept on write: completed runs per project,
// UTC day of their finish and branch, with how many passed, failed and were skipped and the sum and
// count of their lengths. Aggregating the window's runs on every read cost what the window held (a
// project's 14 days at a million runs are about 47,000 runs: 139 ms a request, against 6 ms at
// 10,000); the rollup reads one row per day and branch, whatever the data.
//
// A failed attempt that a later attempt of its test in its job superseded does not count as failed
// (TRIAGE-5). That made a run's share depend on other rows; `test_runs.superseded` makes it the
// row's own: set on the earlier attempts when a later one is inserted (and on the new one if a
// later attempt was there first), cleared again when the attempt that superseded them is deleted.
// A run whose job or test is gone (set null) counts as the read always did: as failed.
//
// Triggers keep both, so every path that writes runs (posts, imports, the live reporter, leases
// ending, retention, deletions, a project's cascade) keeps the rollup right in its transaction.
// SQLite keeps them per row. PostgreSQL keeps them per statement (see postgresTriggers), and there
// a trigger first locks the `project_usage` rows of the projects it touches, in project order, as
// the usage triggers do (migration 0006), so writers of one project queue there and never deadlock
// on two day rows taken in opposite orders; a project's cascade keeps no books (the rollup goes with
// the project). On PostgreSQL this migration also moves 0006's run counters into those triggers.

/** A run's share of its day's row, as SQL over `row` (OLD or NEW). */
function share(row: string, postgres: boolean) {
  const duration = postgres ? `${row}.duration_ms` : `(julianday(${row}.finished_at) - julianday(${row}.started_at)) * 86400000.0`;
  return {
    day: `substr(${row}.finished_at, 1, 10)`,
    branch: `coalesce(${row}.branch, '')`,
    counted: `${row}.status = 'completed' AND ${row}.finished_at IS NOT NULL`,
    passed: `CASE WHEN ${row}.verdict = 'passed' THEN 1 ELSE 0 END`,
    failed: `CASE WHEN ${row}.verdict IN ('failed', 'broken')
      AND NOT (${row}.job_id IS NOT NULL AND ${row}.test_id IS NOT NULL AND ${row}.superseded = 1) THEN 1 ELSE 0 END`,
    skipped: `CASE WHEN ${row}.verdict = 'skipped' THEN 1 ELSE 0 END`,
    durationSum: `coalesce(${duration}, 0)`,
    durations: `CASE WHEN ${duration} IS NULL THEN 0 ELSE 1 END`,
  };
}

/**
 * Adds `row`'s share to its day's row (making it if needed), if `also` holds. The day's row is named
 * through an alias on PostgreSQL; SQLite gets none, as it cannot re-read an upsert's alias in a
 * trigger when its table is altered later (the columns unqualified are the row's there).
 */
function addShare(row: string, postgres: boolean, also = 'true'): string {
  const s = share(row, postgres);
  const d = postgres ? 'd.' : '';
  return `INSERT INTO run_days${postgres ? ' AS d' : ''} (project_id, day, branch, runs, passed, failed, skipped, duration_sum, durations)
    SELECT ${row}.project_id, ${s.day}, ${s.branch}, 1, ${s.passed}, ${s.failed}, ${s.skipped}, ${s.durationSum}, ${s.durations}
    WHERE ${s.counted} AND ${also}
    ON CONFLICT (project_id, day, branch) DO UPDATE SET runs = ${d}runs + 1, passed = ${d}passed + excluded.passed,
      failed = ${d}failed + excluded.failed, skipped = ${d}skipped + excluded.skipped,
      duration_sum = ${d}duration_sum + excluded.duration_sum, durations = ${d}durations + excluded.durations`;
}

/** Takes `row`'s share away from its day's row. */
function removeShare(row: string, postgres: boolean): string {
  const s = share(row, postgres);
  return `UPDATE run_days SET runs = runs - 1, passed = passed - ${s.passed}, failed = failed - ${s.failed},
      skipped = skipped - ${s.skipped}, duration_sum = duration_sum - ${s.durationSum}, durations = durations - ${s.durations}
    WHERE ${s.counted} AND project_id = ${row}.project_id AND day = ${s.day} AND branch = ${s.branch}`;
}

/** A later attempt of `row`'s test in its job exists. */
const laterAttempt = (row: string, attempt: string) =>
  `EXISTS (SELECT 1 FROM test_runs later WHERE later.job_id = ${row}.job_id AND later.test_id = ${row}.test_id AND later.attempt > ${attempt})`;

/** The earlier attempts of NEW's test in its job are superseded; NEW too if a later one was there first. */
const SUPERSEDE = `UPDATE test_runs SET superseded = 1
  WHERE job_id = NEW.job_id AND test_id = NEW.test_id AND superseded = 0
    AND (attempt < NEW.attempt OR (id = NEW.id AND ${laterAttempt('NEW', 'NEW.attempt')}))`;

/** The earlier attempts of OLD's test in its job that no attempt supersedes any more. */
const UNSUPERSEDE = `UPDATE test_runs SET superseded = 0
  WHERE job_id = OLD.job_id AND test_id = OLD.test_id AND attempt < OLD.attempt AND superseded = 1
    AND NOT ${laterAttempt('OLD', 'test_runs.attempt')}`;

/** The columns a run's share reads: an update that changes none of them leaves the rollup alone. */
const SHARE_COLUMNS = ['status', 'verdict', 'branch', 'started_at', 'finished_at', 'job_id', 'test_id', 'superseded', 'project_id'];
const changed = SHARE_COLUMNS.map((column) => `OLD.${column} IS DISTINCT FROM NEW.${column}`).join(' OR ');

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .alterTable('test_runs')
    .addColumn('superseded', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql
    .raw(`UPDATE test_runs SET superseded = 1 WHERE job_id IS NOT NULL AND test_id IS NOT NULL
      AND ${laterAttempt('test_runs', 'test_runs.attempt')}`)
    .execute(db);
  await db.schema
    .createTable('run_days')
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('day', 'text', (c) => c.notNull())
    // '' for runs without a branch (a branch is never empty).
    .addColumn('branch', 'text', (c) => c.notNull())
    .addColumn('runs', 'bigint', (c) => c.notNull())
    .addColumn('passed', 'bigint', (c) => c.notNull())
    .addColumn('failed', 'bigint', (c) => c.notNull())
    .addColumn('skipped', 'bigint', (c) => c.notNull())
    .addColumn('duration_sum', 'double precision', (c) => c.notNull())
    .addColumn('durations', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_days_pk', ['project_id', 'day', 'branch'])
    .execute();
  const s = share('r', postgres);
  await sql
    .raw(`INSERT INTO run_days (project_id, day, branch, runs, passed, failed, skipped, duration_sum, durations)
      SELECT r.project_id, ${s.day}, ${s.branch}, count(*), sum(${s.passed}), sum(${s.failed}), sum(${s.skipped}),
        sum(${s.durationSum}), sum(${s.durations})
      FROM test_runs r WHERE ${s.counted}
      GROUP BY r.project_id, ${s.day}, ${s.branch}`)
    .execute(db);
  if (postgres) await postgresTriggers(db);
  else await sqliteTriggers(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
async function sqliteTriggers(db: Kysely<any>): Promise<void> {
  // Writes on a project that is going (its cascade) keep no books: the rollup goes with it.
  const live = (row: string) => `EXISTS (SELECT 1 FROM projects p WHERE p.id = ${row}.project_id)`;
  const statements = [
    // The share first, as inserted; then the attempts it supersedes, whose updates move their shares.
    `CREATE TRIGGER test_runs_days_insert AFTER INSERT ON test_runs BEGIN
       ${addShare('NEW', false)};
       ${SUPERSEDE} AND NEW.job_id IS NOT NULL AND NEW.test_id IS NOT NULL;
     END`,
    `CREATE TRIGGER test_runs_days_update AFTER UPDATE ON test_runs WHEN ${changed} BEGIN
       ${removeShare('OLD', false)};
       ${addShare('NEW', false, live('NEW'))};
     END`,
    `CREATE TRIGGER test_runs_days_delete AFTER DELETE ON test_runs BEGIN
       ${removeShare('OLD', false)};
       ${UNSUPERSEDE} AND OLD.job_id IS NOT NULL AND OLD.test_id IS NOT NULL AND ${live('OLD')};
     END`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

/**
 * A statement's shares, summed per project, day and branch: the rows of `rows` (a transition table)
 * with `sign` 1 or -1, as SQL selecting the rollup's columns. Only projects still there count (a
 * project's cascade keeps no books).
 */
function shares(rows: string, sign: string): string {
  const s = share('r', true);
  return `SELECT r.project_id, ${s.day} AS day, ${s.branch} AS branch, ${sign} AS runs, ${sign} * ${s.passed} AS passed,
      ${sign} * ${s.failed} AS failed, ${sign} * ${s.skipped} AS skipped, ${sign} * ${s.durationSum} AS duration_sum,
      ${sign} * ${s.durations} AS durations
    FROM ${rows} r WHERE ${s.counted} AND EXISTS (SELECT 1 FROM project_usage u WHERE u.project_id = r.project_id)`;
}

/** Adds the summed `delta` (rows of the rollup's columns) to the rollup, making the rows it needs. */
const addDelta = (delta: string) =>
  `INSERT INTO run_days AS d (project_id, day, branch, runs, passed, failed, skipped, duration_sum, durations)
    SELECT project_id, day, branch, sum(runs), sum(passed), sum(failed), sum(skipped), sum(duration_sum), sum(durations)
    FROM (${delta}) delta GROUP BY project_id, day, branch
    HAVING sum(runs) <> 0 OR sum(passed) <> 0 OR sum(failed) <> 0 OR sum(skipped) <> 0 OR sum(durations) <> 0
      OR sum(duration_sum) <> 0
    ORDER BY project_id, day, branch
    ON CONFLICT (project_id, day, branch) DO UPDATE SET runs = d.runs + excluded.runs, passed = d.passed + excluded.passed,
      failed = d.failed + excluded.failed, skipped = d.skipped + excluded.skipped,
      duration_sum = d.duration_sum + excluded.duration_sum, durations = d.durations + excluded.durations`;

/** Locks the usage rows of the projects `rows` (a transition table) touches, in one order (see the header). */
const lockProjects = (rows: string) =>
  `PERFORM 1 FROM project_usage WHERE project_id IN (SELECT project_id FROM ${rows}) ORDER BY project_id FOR NO KEY UPDATE`;

/**
 * Adds `sign` times the count of `rows` (a transition table) per project to the run counters of
 * the projects still there (RET-4).
 */
const countRuns = (rows: string, sign: string) => `UPDATE project_usage u SET runs = u.runs ${sign} n.runs
    FROM (SELECT project_id, count(*) AS runs FROM ${rows} x GROUP BY project_id) n WHERE u.project_id = n.project_id`;

/** The attempts in `rows` (a transition table) per test in a job, with the highest attempt of each. */
const attemptsIn = (rows: string) => `(SELECT job_id, test_id, max(attempt) AS attempt FROM ${rows} x
    WHERE job_id IS NOT NULL AND test_id IS NOT NULL GROUP BY job_id, test_id)`;

/** The old and new rows of an update (transition tables old_rows, new_rows) whose share changed. */
const CHANGED = `SELECT o.id FROM old_rows o JOIN new_rows n ON n.id = o.id
    WHERE (${SHARE_COLUMNS.map((c) => `o.${c}`).join(', ')}) IS DISTINCT FROM (${SHARE_COLUMNS.map((c) => `n.${c}`).join(', ')})`;

/** Rows of `rows` (a transition table) in a project that is still there. */
const live = (rows: string) => `(SELECT * FROM ${rows} r WHERE EXISTS (SELECT 1 FROM project_usage u WHERE u.project_id = r.project_id))`;

// biome-ignore lint/suspicious/noExplicitAny: see up()
async function postgresTriggers(db: Kysely<any>): Promise<void> {
  const statements = [
    // The books are kept once per statement, from its transition tables: a row trigger updated the
    // same counters and day rows once per run, and PostgreSQL walks every version a transaction made
    // of a row to reach its latest, so a statement of n runs cost n² (a job's fan-out to 10,000 runs
    // took 20 s). The run counters of migration 0006 move here for the same reason. The updates of
    // test_runs itself are planned on each call (EXECUTE): PL/pgSQL keeps a plan without parameters
    // for good, and one made on a small table (a hash join over all its runs) would stay as the
    // table grows, while a plan that guesses for a table never analyzed took a job's branch index to
    // find a test's attempts (each insert then read the whole job).
    'DROP TRIGGER test_runs_usage ON test_runs',
    'DROP FUNCTION attest_test_runs_usage()',
    `CREATE FUNCTION attest_test_runs_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       ${lockProjects('inserted')};
       ${countRuns('inserted', '+')};
       ${addDelta(shares('inserted', '1'))};
       EXECUTE $q$UPDATE test_runs t SET superseded = 1 FROM ${attemptsIn('inserted')} n
         WHERE t.job_id = n.job_id AND t.test_id = n.test_id AND t.superseded = 0 AND ${laterAttempt('t', 't.attempt')}$q$;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER test_runs_inserted AFTER INSERT ON test_runs REFERENCING NEW TABLE AS inserted
       FOR EACH STATEMENT EXECUTE FUNCTION attest_test_runs_inserted()`,
    // An update that changes no run's share (an artifact counted, a lease renewed) takes no lock.
    `CREATE FUNCTION attest_test_runs_updated() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF NOT EXISTS (${CHANGED}) THEN
         RETURN NULL;
       END IF;
       PERFORM 1 FROM project_usage WHERE project_id IN (SELECT project_id FROM old_rows UNION SELECT project_id FROM new_rows)
         ORDER BY project_id FOR NO KEY UPDATE;
       ${addDelta(`${shares(`(SELECT * FROM new_rows WHERE id IN (${CHANGED}))`, '1')}
         UNION ALL ${shares(`(SELECT * FROM old_rows WHERE id IN (${CHANGED}))`, '-1')}`)};
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER test_runs_updated AFTER UPDATE ON test_runs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
       FOR EACH STATEMENT EXECUTE FUNCTION attest_test_runs_updated()`,
    // The earlier attempts that no attempt supersedes any more count as they are again.
    `CREATE FUNCTION attest_test_runs_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       ${lockProjects('deleted')};
       ${countRuns('deleted', '-')};
       ${addDelta(shares('deleted', '-1'))};
       EXECUTE $q$UPDATE test_runs t SET superseded = 0 FROM ${attemptsIn(live('deleted'))} o
         WHERE t.job_id = o.job_id AND t.test_id = o.test_id AND t.attempt < o.attempt AND t.superseded = 1
           AND NOT ${laterAttempt('t', 't.attempt')}$q$;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER test_runs_deleted AFTER DELETE ON test_runs REFERENCING OLD TABLE AS deleted
       FOR EACH STATEMENT EXECUTE FUNCTION attest_test_runs_deleted()`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    for (const event of ['inserted', 'updated', 'deleted']) {
      await sql.raw(`DROP TRIGGER test_runs_${event} ON test_runs`).execute(db);
      await sql.raw(`DROP FUNCTION attest_test_runs_${event}()`).execute(db);
    }
    // Migration 0006's run counters, as it made them.
    await sql
      .raw(`CREATE FUNCTION attest_test_runs_usage() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'INSERT' THEN
           UPDATE project_usage SET runs = runs + 1 WHERE project_id = NEW.project_id;
         ELSIF EXISTS (SELECT 1 FROM projects p WHERE p.id = OLD.project_id) THEN
           UPDATE project_usage SET runs = runs - 1 WHERE project_id = OLD.project_id;
         END IF;
         RETURN NULL;
       END $$`)
      .execute(db);
    await sql
      .raw('CREATE TRIGGER test_runs_usage AFTER INSERT OR DELETE ON test_runs FOR EACH ROW EXECUTE FUNCTION attest_test_runs_usage()')
      .execute(db);
  } else {
    for (const trigger of ['test_runs_days_insert', 'test_runs_days_update', 'test_runs_days_delete']) {
      await sql.raw(`DROP TRIGGER ${trigger}`).execute(db);
    }
  }
  await db.schema.dropTable('run_days').execute();
  await db.schema.alterTable('test_runs').dropColumn('superseded').execute();
}
