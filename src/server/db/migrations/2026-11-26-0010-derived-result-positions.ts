import { type Kysely, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// A run's next result position is derived from what the run holds (one after the highest position
// of its steps and text cells, read through their (run_id, position) indexes under the run's lock)
// rather than counted on the run's row. Updating the counter rewrote the run's row on every results
// post: one statement and one more page written to the log at each commit, about 8% of a one-step
// post's CPU. The column goes; down() puts it back, filled in from the results.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('test_runs').dropColumn('next_position').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('test_runs')
    .addColumn('next_position', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`UPDATE test_runs SET next_position = 1 + coalesce((
    SELECT max(p) FROM (
      SELECT max(position) AS p FROM steps WHERE run_id = test_runs.id
      UNION ALL
      SELECT max(position) AS p FROM text_cells WHERE run_id = test_runs.id
    ) AS positions
  ), -1)`.execute(db);
}
