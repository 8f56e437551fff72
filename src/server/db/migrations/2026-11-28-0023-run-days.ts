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
// PostgreSQL: a trigger first locks the project's `project_usage` row, as the usage triggers do
// (migration 0006), so writers of one project queue there and never deadlock on two day rows taken
// in opposite orders; a project's cascade keeps no books (the rollup goes with the project).

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

// biome-ignore lint/suspicious/noExplicitAny: see up()
async function postgresTriggers(db: Kysely<any>): Promise<void> {
  const statements = [
    // Row triggers AFTER a statement run once it has written all its rows, with NEW as inserted: a
    // run inserted after a later attempt of its test (in the same statement, an import) is marked
    // superseded before it is written, where later rows of the statement are already visible.
    `CREATE FUNCTION attest_test_runs_superseded() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF NEW.job_id IS NOT NULL AND NEW.test_id IS NOT NULL AND ${laterAttempt('NEW', 'NEW.attempt')} THEN
         NEW.superseded := 1;
       END IF;
       RETURN NEW;
     END $$`,
    `CREATE TRIGGER test_runs_superseded BEFORE INSERT ON test_runs FOR EACH ROW EXECUTE FUNCTION attest_test_runs_superseded()`,
    `CREATE FUNCTION attest_test_runs_days() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF TG_OP = 'INSERT' THEN
         PERFORM 1 FROM project_usage WHERE project_id = NEW.project_id FOR NO KEY UPDATE;
         ${addShare('NEW', true)};
         IF NEW.job_id IS NOT NULL AND NEW.test_id IS NOT NULL THEN
           ${SUPERSEDE};
         END IF;
         RETURN NULL;
       END IF;
       PERFORM 1 FROM project_usage WHERE project_id = OLD.project_id FOR NO KEY UPDATE;
       IF NOT FOUND THEN
         RETURN NULL;
       END IF;
       ${removeShare('OLD', true)};
       IF TG_OP = 'UPDATE' THEN
         ${addShare('NEW', true)};
       ELSIF OLD.job_id IS NOT NULL AND OLD.test_id IS NOT NULL THEN
         ${UNSUPERSEDE};
       END IF;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER test_runs_days AFTER INSERT OR DELETE ON test_runs FOR EACH ROW EXECUTE FUNCTION attest_test_runs_days()`,
    `CREATE TRIGGER test_runs_days_update AFTER UPDATE ON test_runs FOR EACH ROW WHEN (${changed})
       EXECUTE FUNCTION attest_test_runs_days()`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql.raw('DROP TRIGGER test_runs_days_update ON test_runs').execute(db);
    await sql.raw('DROP TRIGGER test_runs_days ON test_runs').execute(db);
    await sql.raw('DROP FUNCTION attest_test_runs_days()').execute(db);
    await sql.raw('DROP TRIGGER test_runs_superseded ON test_runs').execute(db);
    await sql.raw('DROP FUNCTION attest_test_runs_superseded()').execute(db);
  } else {
    for (const trigger of ['test_runs_days_insert', 'test_runs_days_update', 'test_runs_days_delete']) {
      await sql.raw(`DROP TRIGGER ${trigger}`).execute(db);
    }
  }
  await db.schema.dropTable('run_days').execute();
  await db.schema.alterTable('test_runs').dropColumn('superseded').execute();
}
