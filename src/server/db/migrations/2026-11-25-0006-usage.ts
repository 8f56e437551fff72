import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// Per-project storage accounting (RET-4) and the optional quota (RET-5). The counters are kept by
// triggers, so every path that adds or removes runs and artifacts (uploads, imports, deletions,
// retention, a project's cascade) keeps them right in the same transaction, and a read costs one
// row. A project's stored bytes count each distinct blob its artifacts reference once (the
// artifact's content and, for visual diffs, the baseline and actual images): `project_blobs` holds
// how many references the project has to each blob.
//
// Lock order on PostgreSQL: every trigger updates the project's `project_usage` row first, so
// writers of one project queue on that row and never deadlock on `project_blobs` rows. When a whole
// project is deleted, its cascade already took the project row away: the delete triggers then keep
// no books (the counters go with the project), since touching its counters row would fail its
// foreign key.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  // Upload quota in stored bytes; null: none.
  await db.schema.alterTable('projects').addColumn('quota_bytes', 'bigint').execute();

  await db.schema
    .createTable('project_usage')
    .addColumn('project_id', 'text', (c) => c.primaryKey().references('projects.id').onDelete('cascade'))
    .addColumn('runs', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('artifacts', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('logical_bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('stored_bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('project_blobs')
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('refs', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('project_blobs_pk', ['project_id', 'sha256'])
    .execute();

  // What the counters say for the data already there.
  await sql`INSERT INTO project_usage (project_id, runs, artifacts, logical_bytes, stored_bytes)
    SELECT p.id,
      (SELECT count(*) FROM test_runs r WHERE r.project_id = p.id),
      (SELECT count(*) FROM artifacts a WHERE a.project_id = p.id),
      (SELECT coalesce(sum(a.size), 0) FROM artifacts a WHERE a.project_id = p.id),
      0
    FROM projects p`.execute(db);
  await sql`INSERT INTO project_blobs (project_id, sha256, size, refs)
    SELECT project_id, sha256, max(size), count(*) FROM (
      SELECT a.project_id, a.sha256, a.size FROM artifacts a
      UNION ALL
      SELECT a.project_id, i.sha256, i.size FROM artifact_images ai
        JOIN artifacts a ON a.id = ai.artifact_id JOIN images i ON i.id = ai.image_id
    ) refs GROUP BY project_id, sha256`.execute(db);
  await sql`UPDATE project_usage SET stored_bytes =
    (SELECT coalesce(sum(b.size), 0) FROM project_blobs b WHERE b.project_id = project_usage.project_id)`.execute(db);

  if (db.getExecutor().adapter instanceof PostgresAdapter) await postgresTriggers(db);
  else await sqliteTriggers(db);
}

// The blobs an artifact's image links reference (a screenshot's is its own content again; a visual
// diff's are its baseline, actual and diff images).
const LINKED_SHAS = (artifact: string) =>
  `SELECT i.sha256 FROM artifact_images ai JOIN images i ON i.id = ai.image_id WHERE ai.artifact_id = ${artifact}`;

// biome-ignore lint/suspicious/noExplicitAny: see up()
async function sqliteTriggers(db: Kysely<any>): Promise<void> {
  const statements = [
    `CREATE TRIGGER projects_usage_insert AFTER INSERT ON projects BEGIN
       INSERT INTO project_usage (project_id) VALUES (NEW.id);
     END`,
    `CREATE TRIGGER test_runs_usage_insert AFTER INSERT ON test_runs BEGIN
       UPDATE project_usage SET runs = runs + 1 WHERE project_id = NEW.project_id;
     END`,
    `CREATE TRIGGER test_runs_usage_delete AFTER DELETE ON test_runs BEGIN
       UPDATE project_usage SET runs = runs - 1 WHERE project_id = OLD.project_id;
     END`,
    // The artifact's own content; a blob new to the project adds its size to the stored bytes.
    `CREATE TRIGGER artifacts_usage_insert AFTER INSERT ON artifacts BEGIN
       INSERT INTO project_blobs (project_id, sha256, size, refs) VALUES (NEW.project_id, NEW.sha256, NEW.size, 1)
         ON CONFLICT (project_id, sha256) DO UPDATE SET refs = refs + 1;
       UPDATE project_usage SET artifacts = artifacts + 1, logical_bytes = logical_bytes + NEW.size,
         stored_bytes = stored_bytes + (SELECT CASE WHEN b.refs = 1 THEN b.size ELSE 0 END FROM project_blobs b
           WHERE b.project_id = NEW.project_id AND b.sha256 = NEW.sha256)
         WHERE project_id = NEW.project_id;
     END`,
    // Links are inserted after their artifact, in its transaction.
    `CREATE TRIGGER artifact_images_usage_insert AFTER INSERT ON artifact_images BEGIN
       INSERT INTO project_blobs (project_id, sha256, size, refs)
         SELECT a.project_id, i.sha256, i.size, 1 FROM artifacts a, images i WHERE a.id = NEW.artifact_id AND i.id = NEW.image_id
         ON CONFLICT (project_id, sha256) DO UPDATE SET refs = refs + 1;
       UPDATE project_usage SET stored_bytes = stored_bytes + (SELECT CASE WHEN b.refs = 1 THEN b.size ELSE 0 END
           FROM project_blobs b, artifacts a, images i
           WHERE a.id = NEW.artifact_id AND i.id = NEW.image_id AND b.project_id = a.project_id AND b.sha256 = i.sha256)
         WHERE project_id = (SELECT project_id FROM artifacts WHERE id = NEW.artifact_id);
     END`,
    // Before the delete, while the artifact's links (deleted with it by cascade) are still there.
    `CREATE TRIGGER artifacts_usage_delete BEFORE DELETE ON artifacts BEGIN
       UPDATE project_blobs SET refs = refs - (CASE WHEN sha256 = OLD.sha256 THEN 1 ELSE 0 END)
           - (SELECT count(*) FROM artifact_images ai JOIN images i ON i.id = ai.image_id
              WHERE ai.artifact_id = OLD.id AND i.sha256 = project_blobs.sha256)
         WHERE project_id = OLD.project_id AND (sha256 = OLD.sha256 OR sha256 IN (${LINKED_SHAS('OLD.id')}));
       UPDATE project_usage SET artifacts = artifacts - 1, logical_bytes = logical_bytes - OLD.size,
         stored_bytes = stored_bytes - (SELECT coalesce(sum(b.size), 0) FROM project_blobs b
           WHERE b.project_id = OLD.project_id AND b.refs <= 0 AND (b.sha256 = OLD.sha256 OR b.sha256 IN (${LINKED_SHAS('OLD.id')})))
         WHERE project_id = OLD.project_id;
       DELETE FROM project_blobs WHERE project_id = OLD.project_id AND refs <= 0
         AND (sha256 = OLD.sha256 OR sha256 IN (${LINKED_SHAS('OLD.id')}));
     END`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
async function postgresTriggers(db: Kysely<any>): Promise<void> {
  const statements = [
    `CREATE FUNCTION attest_projects_usage_insert() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       INSERT INTO project_usage (project_id) VALUES (NEW.id);
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER projects_usage_insert AFTER INSERT ON projects FOR EACH ROW EXECUTE FUNCTION attest_projects_usage_insert()`,
    `CREATE FUNCTION attest_test_runs_usage() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF TG_OP = 'INSERT' THEN
         UPDATE project_usage SET runs = runs + 1 WHERE project_id = NEW.project_id;
       ELSIF EXISTS (SELECT 1 FROM projects p WHERE p.id = OLD.project_id) THEN
         UPDATE project_usage SET runs = runs - 1 WHERE project_id = OLD.project_id;
       END IF;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER test_runs_usage AFTER INSERT OR DELETE ON test_runs FOR EACH ROW EXECUTE FUNCTION attest_test_runs_usage()`,
    // One reference more from a project to a blob; its size counts when the blob is new to the project.
    // The caller holds the project's usage row.
    `CREATE FUNCTION attest_usage_ref(project text, blob text, blob_size bigint) RETURNS void LANGUAGE plpgsql AS $$
     DECLARE
       now_refs bigint;
     BEGIN
       INSERT INTO project_blobs AS b (project_id, sha256, size, refs) VALUES (project, blob, blob_size, 1)
         ON CONFLICT (project_id, sha256) DO UPDATE SET refs = b.refs + 1
         RETURNING b.refs INTO now_refs;
       IF now_refs = 1 THEN
         UPDATE project_usage SET stored_bytes = stored_bytes + blob_size WHERE project_id = project;
       END IF;
     END $$`,
    `CREATE FUNCTION attest_artifacts_usage_insert() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       UPDATE project_usage SET artifacts = artifacts + 1, logical_bytes = logical_bytes + NEW.size WHERE project_id = NEW.project_id;
       PERFORM attest_usage_ref(NEW.project_id, NEW.sha256, NEW.size);
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER artifacts_usage_insert AFTER INSERT ON artifacts FOR EACH ROW EXECUTE FUNCTION attest_artifacts_usage_insert()`,
    `CREATE FUNCTION attest_artifact_images_usage_insert() RETURNS trigger LANGUAGE plpgsql AS $$
     DECLARE
       project text;
       image record;
     BEGIN
       SELECT a.project_id INTO project FROM artifacts a WHERE a.id = NEW.artifact_id;
       SELECT i.sha256, i.size INTO image FROM images i WHERE i.id = NEW.image_id;
       UPDATE project_usage SET stored_bytes = stored_bytes WHERE project_id = project;
       PERFORM attest_usage_ref(project, image.sha256, image.size);
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER artifact_images_usage_insert AFTER INSERT ON artifact_images FOR EACH ROW EXECUTE FUNCTION attest_artifact_images_usage_insert()`,
    // Before the delete, while the artifact's links (deleted with it by cascade) are still there.
    `CREATE FUNCTION attest_artifacts_usage_delete() RETURNS trigger LANGUAGE plpgsql AS $$
     DECLARE
       freed bigint;
     BEGIN
       IF NOT EXISTS (SELECT 1 FROM projects p WHERE p.id = OLD.project_id) THEN
         RETURN OLD;
       END IF;
       UPDATE project_usage SET artifacts = artifacts - 1, logical_bytes = logical_bytes - OLD.size WHERE project_id = OLD.project_id;
       UPDATE project_blobs b SET refs = b.refs - (CASE WHEN b.sha256 = OLD.sha256 THEN 1 ELSE 0 END)
           - (SELECT count(*) FROM artifact_images ai JOIN images i ON i.id = ai.image_id
              WHERE ai.artifact_id = OLD.id AND i.sha256 = b.sha256)
         WHERE b.project_id = OLD.project_id AND (b.sha256 = OLD.sha256 OR b.sha256 IN (${LINKED_SHAS('OLD.id')}));
       WITH gone AS (
         DELETE FROM project_blobs b WHERE b.project_id = OLD.project_id AND b.refs <= 0
           AND (b.sha256 = OLD.sha256 OR b.sha256 IN (${LINKED_SHAS('OLD.id')}))
         RETURNING b.size
       ) SELECT coalesce(sum(size), 0) INTO freed FROM gone;
       IF freed > 0 THEN
         UPDATE project_usage SET stored_bytes = stored_bytes - freed WHERE project_id = OLD.project_id;
       END IF;
       RETURN OLD;
     END $$`,
    `CREATE TRIGGER artifacts_usage_delete BEFORE DELETE ON artifacts FOR EACH ROW EXECUTE FUNCTION attest_artifacts_usage_delete()`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    for (const [trigger, table] of [
      ['projects_usage_insert', 'projects'],
      ['test_runs_usage', 'test_runs'],
      ['artifacts_usage_insert', 'artifacts'],
      ['artifact_images_usage_insert', 'artifact_images'],
      ['artifacts_usage_delete', 'artifacts'],
    ]) {
      await sql.raw(`DROP TRIGGER ${trigger} ON ${table}`).execute(db);
    }
    for (const fn of [
      'attest_projects_usage_insert()',
      'attest_test_runs_usage()',
      'attest_artifacts_usage_insert()',
      'attest_artifact_images_usage_insert()',
      'attest_artifacts_usage_delete()',
      'attest_usage_ref(text, text, bigint)',
    ]) {
      await sql.raw(`DROP FUNCTION ${fn}`).execute(db);
    }
  } else {
    for (const trigger of [
      'projects_usage_insert',
      'test_runs_usage_insert',
      'test_runs_usage_delete',
      'artifacts_usage_insert',
      'artifact_images_usage_insert',
      'artifacts_usage_delete',
    ]) {
      await sql.raw(`DROP TRIGGER ${trigger}`).execute(db);
    }
  }
  await db.schema.dropTable('project_blobs').execute();
  await db.schema.dropTable('project_usage').execute();
  await db.schema.alterTable('projects').dropColumn('quota_bytes').execute();
}
