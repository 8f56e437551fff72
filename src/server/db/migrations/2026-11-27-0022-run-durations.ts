import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// On PostgreSQL, each run's length in milliseconds is kept on its row as a stored generated column,
// computed when its times are written: the dashboard's daily mean (TRIAGE-8) read it from the two
// ISO-8601 texts of every run of the window, and parsing them as timestamps was most of its time
// (70,000 runs: about 0.35 s of a 0.43 s aggregate). Times are stored as `toISOString()` text, always
// in UTC with a `Z`, so the parse does not depend on the session's time zone: the function is
// declared IMMUTABLE, which a generated column needs. SQLite reads `julianday()` of the texts, which
// costs it little; it gets no column.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql
    .raw(
      `CREATE FUNCTION attest_iso_ms(value text) RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE
       AS $$ SELECT extract(epoch FROM value::timestamptz) * 1000 $$`,
    )
    .execute(db);
  await sql
    .raw(
      `ALTER TABLE test_runs ADD COLUMN duration_ms double precision
       GENERATED ALWAYS AS (attest_iso_ms(finished_at) - attest_iso_ms(started_at)) STORED`,
    )
    .execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql.raw('ALTER TABLE test_runs DROP COLUMN duration_ms').execute(db);
  await sql.raw('DROP FUNCTION attest_iso_ms(text)').execute(db);
}
