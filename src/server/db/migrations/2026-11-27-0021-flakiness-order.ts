import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// A project's tests, flakiest first, read in an index's order (SCALE-8): each test carries its flaky
// score in thousandths (`flaky_milli`, 0 until its health is first scored), kept by triggers on
// test_health in the transaction that scores it, and tests_flaky orders a project's tests by it,
// then newest first. Computed from a join, the order needed every test of the project sorted.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('tests')
    .addColumn('flaky_milli', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`UPDATE tests SET flaky_milli = (SELECT cast(round(h.flaky_score * 1000) AS integer) FROM test_health h WHERE h.test_id = tests.id)
    WHERE EXISTS (SELECT 1 FROM test_health h WHERE h.test_id = tests.id)`.execute(db);
  await db.schema.createIndex('tests_flaky').on('tests').columns(['project_id', 'flaky_milli', 'created_at', 'id']).execute();

  const statements =
    db.getExecutor().adapter instanceof PostgresAdapter
      ? [
          `CREATE FUNCTION attest_tests_flaky_milli() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN
             UPDATE tests SET flaky_milli = cast(round(NEW.flaky_score * 1000) AS integer)
               WHERE id = NEW.test_id AND flaky_milli <> cast(round(NEW.flaky_score * 1000) AS integer);
             RETURN NULL;
           END $$`,
          `CREATE TRIGGER test_health_flaky_milli AFTER INSERT OR UPDATE OF flaky_score ON test_health
             FOR EACH ROW EXECUTE FUNCTION attest_tests_flaky_milli()`,
        ]
      : [
          `CREATE TRIGGER test_health_flaky_milli_insert AFTER INSERT ON test_health
             WHEN NEW.flaky_score <> 0 BEGIN
             UPDATE tests SET flaky_milli = cast(round(NEW.flaky_score * 1000) AS integer) WHERE id = NEW.test_id;
           END`,
          `CREATE TRIGGER test_health_flaky_milli_update AFTER UPDATE OF flaky_score ON test_health
             WHEN cast(round(NEW.flaky_score * 1000) AS integer) IS NOT cast(round(OLD.flaky_score * 1000) AS integer) BEGIN
             UPDATE tests SET flaky_milli = cast(round(NEW.flaky_score * 1000) AS integer) WHERE id = NEW.test_id;
           END`,
        ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql.raw('DROP TRIGGER test_health_flaky_milli ON test_health').execute(db);
    await sql.raw('DROP FUNCTION attest_tests_flaky_milli()').execute(db);
  } else {
    await sql.raw('DROP TRIGGER test_health_flaky_milli_insert').execute(db);
    await sql.raw('DROP TRIGGER test_health_flaky_milli_update').execute(db);
  }
  await db.schema.dropIndex('tests_flaky').execute();
  await db.schema.alterTable('tests').dropColumn('flaky_milli').execute();
}
