import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// The dashboard's top error groups and their trends (TRIAGE-8) as a rollup kept on write: the
// failed runs of each group per project and UTC day (of the run's finish, the occurrence's `at`).
// Counting the window's occurrences on every read cost what the window held: a project's 14 days at
// a million runs hold about 3,300 occurrences (the top five groups 1,800), against 67 in the
// 10,000-run set (docs/performance.md, S13). The rollup reads one row per group and day, whatever the
// data. A dashboard on one branch still counts the branch's occurrences (docs/triage.md).
//
// Triggers on `failure_occurrences` keep it, so every path that records or removes an occurrence
// (a run's completion, its deletion, retention, a group's or a project's cascade) keeps it right in
// its transaction. SQLite keeps it per row. PostgreSQL keeps it once per statement from the
// statement's transition tables (as migration 0023 keeps `run_days`, for the same reason: a row
// trigger would update one day row once per occurrence), and first locks the `project_usage` rows
// of the projects the statement touches, in project order, as 0006's and 0023's triggers do, so
// two writers of one project never take two day rows in opposite orders. A row whose count falls
// to 0 stays (a read skips it), as `run_days`'s rows do; a group's rows go with the group.

const DAY = (row: string) => `substr(${row}.at, 1, 10)`;

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .createTable('group_days')
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('group_id', 'text', (c) => c.notNull().references('failure_groups.id').onDelete('cascade'))
    .addColumn('occurrences', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('group_days_pk', ['project_id', 'day', 'group_id'])
    .execute();
  // A group's rows, for its cascade.
  await db.schema.createIndex('group_days_group').on('group_days').column('group_id').execute();
  await sql
    .raw(`INSERT INTO group_days (project_id, day, group_id, occurrences)
      SELECT o.project_id, ${DAY('o')}, o.group_id, count(*) FROM failure_occurrences o
      GROUP BY o.project_id, ${DAY('o')}, o.group_id`)
    .execute(db);
  if (postgres) await postgresTriggers(db);
  else await sqliteTriggers(db);
}

/** Adds one occurrence (`row`, OLD or NEW) to its day's row, making it if needed (SQLite: unqualified, see 0023). */
const addOne = (row: string) => `INSERT INTO group_days (project_id, day, group_id, occurrences)
    VALUES (${row}.project_id, ${DAY(row)}, ${row}.group_id, 1)
    ON CONFLICT (project_id, day, group_id) DO UPDATE SET occurrences = occurrences + 1`;

/** Takes one occurrence (`row`) away from its day's row. */
const removeOne = (row: string) => `UPDATE group_days SET occurrences = occurrences - 1
    WHERE project_id = ${row}.project_id AND day = ${DAY(row)} AND group_id = ${row}.group_id`;

// biome-ignore lint/suspicious/noExplicitAny: see up()
async function sqliteTriggers(db: Kysely<any>): Promise<void> {
  const statements = [
    `CREATE TRIGGER failure_occurrences_days_insert AFTER INSERT ON failure_occurrences BEGIN ${addOne('NEW')}; END`,
    `CREATE TRIGGER failure_occurrences_days_update AFTER UPDATE OF project_id, at, group_id ON failure_occurrences BEGIN
       ${removeOne('OLD')};
       ${addOne('NEW')};
     END`,
    `CREATE TRIGGER failure_occurrences_days_delete AFTER DELETE ON failure_occurrences BEGIN ${removeOne('OLD')}; END`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

/** `rows` (a transition table) counted per project, day and group, times `sign`. */
const counted = (rows: string, sign: string) =>
  `SELECT r.project_id, ${DAY('r')} AS day, r.group_id, ${sign} * count(*) AS occurrences FROM ${rows} r
    GROUP BY r.project_id, ${DAY('r')}, r.group_id`;

/** Adds the counts of `delta` (rows of the rollup's columns) to the rollup, making the rows it needs. */
const addDelta = (delta: string) => `INSERT INTO group_days AS g (project_id, day, group_id, occurrences)
    SELECT project_id, day, group_id, sum(occurrences) FROM (${delta}) delta
    WHERE EXISTS (SELECT 1 FROM failure_groups f WHERE f.id = delta.group_id)
    GROUP BY project_id, day, group_id HAVING sum(occurrences) <> 0
    ORDER BY project_id, day, group_id
    ON CONFLICT (project_id, day, group_id) DO UPDATE SET occurrences = g.occurrences + excluded.occurrences`;

/** Locks the usage rows of the projects in `rows` (transition tables, a union), in one order (see the header). */
const lockProjects = (rows: string) => `PERFORM 1 FROM project_usage WHERE project_id IN (${rows}) ORDER BY project_id FOR NO KEY UPDATE`;

// biome-ignore lint/suspicious/noExplicitAny: see up()
async function postgresTriggers(db: Kysely<any>): Promise<void> {
  const statements = [
    `CREATE FUNCTION attest_failure_occurrences_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       ${lockProjects('SELECT project_id FROM inserted')};
       ${addDelta(counted('inserted', '1'))};
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER failure_occurrences_inserted AFTER INSERT ON failure_occurrences REFERENCING NEW TABLE AS inserted
       FOR EACH STATEMENT EXECUTE FUNCTION attest_failure_occurrences_inserted()`,
    // An update that moves no occurrence to another day or group nets out to nothing (HAVING).
    `CREATE FUNCTION attest_failure_occurrences_updated() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       ${lockProjects('SELECT project_id FROM old_rows UNION SELECT project_id FROM new_rows')};
       ${addDelta(`${counted('new_rows', '1')} UNION ALL ${counted('old_rows', '-1')}`)};
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER failure_occurrences_updated AFTER UPDATE ON failure_occurrences REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
       FOR EACH STATEMENT EXECUTE FUNCTION attest_failure_occurrences_updated()`,
    // Only what is there to take from: a group's cascade may have taken its rows first.
    `CREATE FUNCTION attest_failure_occurrences_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       ${lockProjects('SELECT project_id FROM deleted')};
       UPDATE group_days g SET occurrences = g.occurrences + d.occurrences FROM (${counted('deleted', '-1')}) d
         WHERE g.project_id = d.project_id AND g.day = d.day AND g.group_id = d.group_id;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER failure_occurrences_deleted AFTER DELETE ON failure_occurrences REFERENCING OLD TABLE AS deleted
       FOR EACH STATEMENT EXECUTE FUNCTION attest_failure_occurrences_deleted()`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    for (const event of ['inserted', 'updated', 'deleted']) {
      await sql.raw(`DROP TRIGGER failure_occurrences_${event} ON failure_occurrences`).execute(db);
      await sql.raw(`DROP FUNCTION attest_failure_occurrences_${event}()`).execute(db);
    }
  } else {
    for (const event of ['insert', 'update', 'delete']) {
      await sql.raw(`DROP TRIGGER failure_occurrences_days_${event}`).execute(db);
    }
  }
  await db.schema.dropTable('group_days').execute();
}
