import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// Text cells keyed by their place in the run, (run_id, position), instead of by their random id.
// Nothing looks a cell up by id (cells are read by run, in position order, and found by client key
// when a post repeats one); the id's unique index only cost. Each cell inserted into it landed on
// a random page of an index as large as every cell stored, so a post of 400 cells dirtied hundreds
// of pages, each written to the WAL at commit and again at the checkpoint: inserting a run of 20
// steps with 20 cells each took 10.5 ms with 120,000 cells stored, 3.7 ms keyed by run. Positions
// come from the run's counter under the run's lock, so (run_id, position) is unique by construction;
// the id stays a random UUID (SEC-1c), unique by its 122 random bits.
//
// SQLite: the table is rebuilt WITHOUT ROWID, so the cells of a run sit together in key order and
// a run's cells read as one range. This copies every cell once, at the first start after the
// upgrade. PostgreSQL: the primary key moves to (run_id, position), whose index replaces
// `text_cells_run`.

const COLUMNS = 'id, run_id, step_id, client_key, position, name, media_type, text, created_at';

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`ALTER TABLE text_cells DROP CONSTRAINT text_cells_pkey`.execute(db);
    await sql`ALTER TABLE text_cells ADD CONSTRAINT text_cells_pkey PRIMARY KEY (run_id, position)`.execute(db);
    await sql`DROP INDEX text_cells_run`.execute(db);
    return;
  }
  await rebuild(db, 'PRIMARY KEY (run_id, position)) WITHOUT ROWID', []);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`ALTER TABLE text_cells DROP CONSTRAINT text_cells_pkey`.execute(db);
    await sql`ALTER TABLE text_cells ADD CONSTRAINT text_cells_pkey PRIMARY KEY (id)`.execute(db);
    await sql`CREATE INDEX text_cells_run ON text_cells (run_id, position)`.execute(db);
    return;
  }
  await rebuild(db, 'PRIMARY KEY (id))', ['CREATE INDEX text_cells_run ON text_cells (run_id, position)']);
}

/** SQLite: text_cells again with another key, its rows copied, and its other indexes made anew. */
// biome-ignore lint/suspicious/noExplicitAny: see up()
async function rebuild(db: Kysely<any>, key: string, indexes: string[]): Promise<void> {
  const statements = [
    `CREATE TABLE text_cells_new (
       id TEXT NOT NULL,
       run_id TEXT NOT NULL REFERENCES test_runs (id) ON DELETE CASCADE,
       step_id TEXT REFERENCES steps (id) ON DELETE CASCADE,
       client_key TEXT,
       position INTEGER NOT NULL,
       name TEXT NOT NULL,
       media_type TEXT NOT NULL,
       text TEXT NOT NULL,
       created_at TEXT NOT NULL,
       ${key}`,
    `INSERT INTO text_cells_new (${COLUMNS}) SELECT ${COLUMNS} FROM text_cells ORDER BY run_id, position`,
    'DROP TABLE text_cells',
    'ALTER TABLE text_cells_new RENAME TO text_cells',
    'CREATE UNIQUE INDEX text_cells_run_key ON text_cells (run_id, client_key) WHERE client_key IS NOT NULL',
    'CREATE INDEX text_cells_step ON text_cells (step_id) WHERE step_id IS NOT NULL',
    ...indexes,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}
