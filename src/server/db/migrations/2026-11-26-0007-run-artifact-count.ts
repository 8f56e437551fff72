import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// How many artifacts each run holds, kept on the run's row by triggers in the transaction that adds
// or removes one (uploads, imports, artifact and run deletion, retention). An upload checks the run's
// limit (ATTEST_MAX_ARTIFACTS_PER_RUN) twice, and counting the run's artifacts cost time in
// proportion to how many it held: about 130 µs each time at 6,000.
//
// Lock order on PostgreSQL: the run's row before the project's `project_usage` row (migration
// 0006), as an upload takes them (it locks the run first). The delete trigger is a BEFORE trigger
// whose name sorts before `artifacts_usage_delete`, so it fires first; the insert trigger's name
// sorts before `artifacts_usage_insert`. When the run itself is being deleted, its row is already
// gone: the update then touches nothing.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('test_runs')
    .addColumn('artifact_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`UPDATE test_runs SET artifact_count = (SELECT count(*) FROM artifacts a WHERE a.run_id = test_runs.id)`.execute(db);

  const statements =
    db.getExecutor().adapter instanceof PostgresAdapter
      ? [
          `CREATE FUNCTION attest_artifacts_run_count() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN
             IF TG_OP = 'INSERT' THEN
               UPDATE test_runs SET artifact_count = artifact_count + 1 WHERE id = NEW.run_id;
               RETURN NULL;
             END IF;
             UPDATE test_runs SET artifact_count = artifact_count - 1 WHERE id = OLD.run_id;
             RETURN OLD;
           END $$`,
          `CREATE TRIGGER artifacts_run_count_insert AFTER INSERT ON artifacts FOR EACH ROW EXECUTE FUNCTION attest_artifacts_run_count()`,
          `CREATE TRIGGER artifacts_run_count_delete BEFORE DELETE ON artifacts FOR EACH ROW EXECUTE FUNCTION attest_artifacts_run_count()`,
        ]
      : [
          `CREATE TRIGGER artifacts_run_count_insert AFTER INSERT ON artifacts BEGIN
             UPDATE test_runs SET artifact_count = artifact_count + 1 WHERE id = NEW.run_id;
           END`,
          `CREATE TRIGGER artifacts_run_count_delete AFTER DELETE ON artifacts BEGIN
             UPDATE test_runs SET artifact_count = artifact_count - 1 WHERE id = OLD.run_id;
           END`,
        ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql.raw('DROP TRIGGER artifacts_run_count_insert ON artifacts').execute(db);
    await sql.raw('DROP TRIGGER artifacts_run_count_delete ON artifacts').execute(db);
    await sql.raw('DROP FUNCTION attest_artifacts_run_count()').execute(db);
  } else {
    await sql.raw('DROP TRIGGER artifacts_run_count_insert').execute(db);
    await sql.raw('DROP TRIGGER artifacts_run_count_delete').execute(db);
  }
  await db.schema.alterTable('test_runs').dropColumn('artifact_count').execute();
}
