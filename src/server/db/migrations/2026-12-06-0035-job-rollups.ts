import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// A job's summary (JOB-1, SCALE-11) as a rollup kept on write: its runs counted by status and, for
// the completed ones, by verdict, with the first start, the last finish and the last creation among
// them. Jobs views counted them from the runs on every read, so a page of 50 jobs cost the runs it
// held (at 100,000 imported runs, jobs of up to 5,000 tests: 82 ms against 9 at 2,000); the rollup
// is one row per job whatever it holds.
//
// The counts are exact: a run adds its share when inserted, moves it when its status or verdict
// changes, takes it away when deleted or moved off the job. The times are the earliest and latest
// of what is there, which an insert or a start or a finish only extends; a change or a deletion of
// the run that held one of them can only be undone by reading the job's runs again, so it marks
// the row `stale` instead, and a read of a stale job takes its times from its runs (what every
// read did before). Runs are rarely requeued or deleted from a job that stays.
//
// Triggers keep it, so every path that writes runs keeps it right in its transaction. SQLite keeps
// it per row; PostgreSQL per statement from the transition tables (a row trigger would update the
// job's row once per run, and PostgreSQL walks every version a transaction made of a row: n² for a
// 5,000-run import), after locking the projects' usage rows in project order as the other triggers
// on test_runs do (migration 0023), so writers never take a job's row and a project's in two orders.
//
// With it, two indexes of test_runs by job get the list's order (newest first) at their end, so a
// job's runs, and its failed ones, are read a page at a time (the indexes they replace are their
// prefixes); and the runs of a branch get one in that order, for the failures of a branch.

const STATUSES = ['queued', 'running', 'completed', 'aborted'] as const;
const VERDICTS = ['passed', 'failed', 'broken', 'skipped'] as const;
const COUNTS = [...STATUSES, ...VERDICTS];

/** Each count column's share of `row` (OLD, NEW or a transition table's alias), as SQL: 1 or 0. */
function countShares(row: string): string[] {
  return [
    ...STATUSES.map((status) => `CASE WHEN ${row}.status = '${status}' THEN 1 ELSE 0 END`),
    ...VERDICTS.map((verdict) => `CASE WHEN ${row}.status = 'completed' AND ${row}.verdict = '${verdict}' THEN 1 ELSE 0 END`),
  ];
}

/** The time columns: the rollup's name, the run's column, and whether the rollup keeps its least. */
const TIMES = [
  { column: 'first_started', of: 'started_at', least: true },
  { column: 'last_finished', of: 'finished_at', least: false },
  { column: 'last_created', of: 'created_at', least: false },
] as const;

/** Whether a change of `from` to `to` (runs' rows) can have taken away the time the rollup keeps in `kept`. */
function takesTime(from: string, to: string | null, kept: string): string {
  const parts = TIMES.map(({ column, of, least }) => {
    const lost =
      to === null
        ? 'true'
        : `(${to}.job_id IS DISTINCT FROM ${from}.job_id OR ${to}.${of} IS NULL OR ${to}.${of} ${least ? '>' : '<'} ${from}.${of})`;
    return `(${from}.${of} = ${kept}.${column} AND ${lost})`;
  });
  return parts.join(' OR ');
}

/** The columns whose change moves a run's share. */
const SHARE_COLUMNS = ['job_id', 'status', 'verdict', 'started_at', 'finished_at', 'created_at'];

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  let table = db.schema
    .createTable('job_rollups')
    .addColumn('job_id', 'text', (c) => c.primaryKey().references('jobs.id').onDelete('cascade'));
  for (const count of COUNTS) table = table.addColumn(count, 'bigint', (c) => c.notNull().defaultTo(0));
  for (const { column } of TIMES) table = table.addColumn(column, 'text');
  await table.addColumn('stale', 'integer', (c) => c.notNull().defaultTo(0)).execute();

  const shares = countShares('r');
  await sql
    .raw(`INSERT INTO job_rollups (job_id, ${COUNTS.join(', ')}, first_started, last_finished, last_created, stale)
      SELECT r.job_id, ${shares.map((share) => `sum(${share})`).join(', ')}, min(r.started_at), max(r.finished_at), max(r.created_at), 0
      FROM test_runs r WHERE r.job_id IS NOT NULL GROUP BY r.job_id`)
    .execute(db);

  await db.schema.dropIndex('test_runs_job').execute();
  await db.schema.createIndex('test_runs_job').on('test_runs').columns(['job_id', 'created_at', 'id']).execute();
  await db.schema.dropIndex('test_runs_job_verdict').execute();
  await db.schema.createIndex('test_runs_job_verdict').on('test_runs').columns(['job_id', 'verdict', 'created_at', 'id']).execute();
  await db.schema.createIndex('test_runs_branch').on('test_runs').columns(['project_id', 'branch', 'created_at', 'id']).execute();

  if (postgres) await postgresTriggers(db);
  else await sqliteTriggers(db);
}

/** SQLite's upsert of `row`'s share (NEW): the row's columns unqualified, as migration 0023 says why. */
function sqliteAdd(row: string): string {
  const extend = TIMES.map(
    ({ column, least }) =>
      `${column} = CASE WHEN excluded.${column} IS NOT NULL AND (${column} IS NULL OR excluded.${column} ${least ? '<' : '>'} ${column})
        THEN excluded.${column} ELSE ${column} END`,
  );
  return `INSERT INTO job_rollups (job_id, ${COUNTS.join(', ')}, first_started, last_finished, last_created)
    SELECT ${row}.job_id, ${countShares(row).join(', ')}, ${row}.started_at, ${row}.finished_at, ${row}.created_at
    WHERE ${row}.job_id IS NOT NULL
    ON CONFLICT (job_id) DO UPDATE SET ${COUNTS.map((count) => `${count} = ${count} + excluded.${count}`).join(', ')}, ${extend.join(', ')}`;
}

/** SQLite's removal of OLD's share from its job's row; stale if it took a kept time (`to`: NEW, or null for a deletion). */
function sqliteRemove(to: string | null): string {
  const shares = countShares('OLD');
  return `UPDATE job_rollups SET ${COUNTS.map((count, i) => `${count} = ${count} - ${shares[i]}`).join(', ')},
      stale = CASE WHEN ${takesTime('OLD', to, 'job_rollups')} THEN 1 ELSE stale END
    WHERE job_id = OLD.job_id`;
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
async function sqliteTriggers(db: Kysely<any>): Promise<void> {
  const changed = SHARE_COLUMNS.map((column) => `OLD.${column} IS NOT NEW.${column}`).join(' OR ');
  const statements = [
    `CREATE TRIGGER test_runs_job_insert AFTER INSERT ON test_runs WHEN NEW.job_id IS NOT NULL BEGIN
       ${sqliteAdd('NEW')};
     END`,
    `CREATE TRIGGER test_runs_job_update AFTER UPDATE ON test_runs WHEN ${changed} BEGIN
       ${sqliteRemove('NEW')};
       ${sqliteAdd('NEW')};
     END`,
    `CREATE TRIGGER test_runs_job_delete AFTER DELETE ON test_runs WHEN OLD.job_id IS NOT NULL BEGIN
       ${sqliteRemove(null)};
     END`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

/** Adds the shares of `rows` (runs' rows, aliased r) to their jobs' rows, making those it needs. */
function postgresAdd(rows: string): string {
  const shares = countShares('r');
  const extend = TIMES.map(({ column, least }) => `${column} = ${least ? 'least' : 'greatest'}(j.${column}, excluded.${column})`);
  return `INSERT INTO job_rollups AS j (job_id, ${COUNTS.join(', ')}, first_started, last_finished, last_created)
    SELECT r.job_id, ${shares.map((share) => `sum(${share})`).join(', ')}, min(r.started_at), max(r.finished_at), max(r.created_at)
    FROM ${rows} r WHERE r.job_id IS NOT NULL GROUP BY r.job_id ORDER BY r.job_id
    ON CONFLICT (job_id) DO UPDATE SET ${COUNTS.map((count) => `${count} = j.${count} + excluded.${count}`).join(', ')}, ${extend.join(', ')}`;
}

/**
 * Takes the shares of old rows (`from` names them o, with their new rows n for an update) that
 * `where` picks away from their jobs' rows, marking stale those whose kept times they took.
 */
function postgresRemove(from: string, where: string, deletion: boolean): string {
  const shares = countShares('o');
  return `UPDATE job_rollups j SET ${COUNTS.map((count) => `${count} = j.${count} - d.${count}`).join(', ')},
      stale = CASE WHEN d.took THEN 1 ELSE j.stale END
    FROM (SELECT o.job_id, ${shares.map((share, i) => `sum(${share}) AS ${COUNTS[i]}`).join(', ')},
        bool_or(${takesTime('o', deletion ? null : 'n', 'k')}) AS took
      FROM ${from} JOIN job_rollups k ON k.job_id = o.job_id WHERE ${where} GROUP BY o.job_id ORDER BY o.job_id) d
    WHERE j.job_id = d.job_id`;
}

/** Locks the usage rows of the projects `rows` (a transition table) touches, in one order (see the header). */
const lockProjects = (rows: string) =>
  `PERFORM 1 FROM project_usage WHERE project_id IN (SELECT project_id FROM ${rows}) ORDER BY project_id FOR NO KEY UPDATE`;

/** An update's old and new rows (transition tables old_rows o, new_rows n), and which of them moved a share. */
const PAIRS = 'old_rows o JOIN new_rows n ON n.id = o.id';
const MOVED = `(${SHARE_COLUMNS.map((c) => `o.${c}`).join(', ')}) IS DISTINCT FROM (${SHARE_COLUMNS.map((c) => `n.${c}`).join(', ')})`;

// biome-ignore lint/suspicious/noExplicitAny: see up()
async function postgresTriggers(db: Kysely<any>): Promise<void> {
  const statements = [
    `CREATE FUNCTION attest_test_runs_job_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF NOT EXISTS (SELECT 1 FROM inserted WHERE job_id IS NOT NULL) THEN
         RETURN NULL;
       END IF;
       ${lockProjects('inserted')};
       ${postgresAdd('inserted')};
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER test_runs_job_inserted AFTER INSERT ON test_runs REFERENCING NEW TABLE AS inserted
       FOR EACH STATEMENT EXECUTE FUNCTION attest_test_runs_job_inserted()`,
    // An update that moves no run's share (a lease renewed, an artifact counted) takes no lock.
    `CREATE FUNCTION attest_test_runs_job_updated() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF NOT EXISTS (SELECT 1 FROM ${PAIRS} WHERE ${MOVED} AND (o.job_id IS NOT NULL OR n.job_id IS NOT NULL)) THEN
         RETURN NULL;
       END IF;
       PERFORM 1 FROM project_usage WHERE project_id IN (SELECT project_id FROM old_rows UNION SELECT project_id FROM new_rows)
         ORDER BY project_id FOR NO KEY UPDATE;
       ${postgresRemove(PAIRS, MOVED, false)};
       ${postgresAdd(`(SELECT n.* FROM ${PAIRS} WHERE ${MOVED})`)};
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER test_runs_job_updated AFTER UPDATE ON test_runs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
       FOR EACH STATEMENT EXECUTE FUNCTION attest_test_runs_job_updated()`,
    `CREATE FUNCTION attest_test_runs_job_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF NOT EXISTS (SELECT 1 FROM deleted WHERE job_id IS NOT NULL) THEN
         RETURN NULL;
       END IF;
       ${lockProjects('deleted')};
       ${postgresRemove('deleted o', 'true', true)};
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER test_runs_job_deleted AFTER DELETE ON test_runs REFERENCING OLD TABLE AS deleted
       FOR EACH STATEMENT EXECUTE FUNCTION attest_test_runs_job_deleted()`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    for (const event of ['inserted', 'updated', 'deleted']) {
      await sql.raw(`DROP TRIGGER test_runs_job_${event} ON test_runs`).execute(db);
      await sql.raw(`DROP FUNCTION attest_test_runs_job_${event}()`).execute(db);
    }
  } else {
    for (const event of ['insert', 'update', 'delete']) await sql.raw(`DROP TRIGGER test_runs_job_${event}`).execute(db);
  }
  await db.schema.dropIndex('test_runs_branch').execute();
  await db.schema.dropIndex('test_runs_job_verdict').execute();
  await db.schema.createIndex('test_runs_job_verdict').on('test_runs').columns(['job_id', 'verdict']).execute();
  await db.schema.dropIndex('test_runs_job').execute();
  await db.schema.createIndex('test_runs_job').on('test_runs').column('job_id').execute();
  await db.schema.dropTable('job_rollups').execute();
}
