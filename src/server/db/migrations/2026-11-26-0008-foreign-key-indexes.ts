import { type Kysely, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// An index for every foreign key column that had none. Deleting a parent row makes the database
// look for the rows that reference it (to cascade, or to set them null); without an index on the
// referencing column that is a scan of the whole child table, once per deleted parent. Deleting a
// run of 1,000 steps scanned `text_cells`, `artifacts` and `steps` once per step: 20 seconds with
// 120,000 stored cells, during which SQLite held the event loop and the server answered nothing.
// Partial indexes (only rows that reference something): a cascade's lookup of `column = ?` implies
// `column IS NOT NULL` on both databases, and rows without a parent (top-level steps, cells and
// artifacts of the run itself, runs without a device) cost nothing to insert.

const INDEXES: [name: string, table: string, column: string][] = [
  ['steps_parent', 'steps', 'parent_id'],
  ['text_cells_step', 'text_cells', 'step_id'],
  ['artifacts_step', 'artifacts', 'step_id'],
  ['test_runs_device', 'test_runs', 'device_id'],
  ['imports_job', 'imports', 'job_id'],
];

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  for (const [name, table, column] of INDEXES) {
    await sql.raw(`CREATE INDEX ${name} ON ${table} (${column}) WHERE ${column} IS NOT NULL`).execute(db);
  }
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  for (const [name] of INDEXES) await db.schema.dropIndex(name).execute();
}
