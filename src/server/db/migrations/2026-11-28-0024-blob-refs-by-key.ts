import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// On PostgreSQL, the usage trigger that runs before an artifact is deleted (migration 0006) finds
// the project's references to the artifact's blobs by their key. Its statements named them as
// `sha256 = OLD.sha256 OR sha256 IN (the linked images' blobs)`, which PostgreSQL cannot look up
// in the `(project_id, sha256)` key: each artifact deleted read every blob row of its project
// (15,000 rows at a million runs, about 2 ms each time). Deleting 100 runs of the 1M scale set
// took 85–102 ms, 48–66 ms of it in the artifacts' cascade; with the blobs joined as a set of keys,
// 34–36 ms and 6–7 ms (docs/performance.md, S16). The counts are the same: one reference less for
// the artifact's own blob and one for each image link. SQLite looks each term up in the key as it is.

const LINKED_SHAS = `SELECT i.sha256 FROM artifact_images ai JOIN images i ON i.id = ai.image_id WHERE ai.artifact_id = OLD.id`;

/** The function's blob statements: joined by key (`up`), and as migration 0006 wrote them (`down`). */
const BY_KEY = `
       UPDATE project_blobs b SET refs = b.refs - x.refs
         FROM (SELECT r.sha256, count(*) AS refs FROM (SELECT OLD.sha256 AS sha256 UNION ALL ${LINKED_SHAS}) r GROUP BY r.sha256) x
         WHERE b.project_id = OLD.project_id AND b.sha256 = x.sha256;
       WITH gone AS (
         DELETE FROM project_blobs b USING (SELECT OLD.sha256 AS sha256 UNION ${LINKED_SHAS}) x
         WHERE b.project_id = OLD.project_id AND b.sha256 = x.sha256 AND b.refs <= 0
         RETURNING b.size
       ) SELECT coalesce(sum(size), 0) INTO freed FROM gone;`;
const BY_OR = `
       UPDATE project_blobs b SET refs = b.refs - (CASE WHEN b.sha256 = OLD.sha256 THEN 1 ELSE 0 END)
           - (SELECT count(*) FROM artifact_images ai JOIN images i ON i.id = ai.image_id
              WHERE ai.artifact_id = OLD.id AND i.sha256 = b.sha256)
         WHERE b.project_id = OLD.project_id AND (b.sha256 = OLD.sha256 OR b.sha256 IN (${LINKED_SHAS}));
       WITH gone AS (
         DELETE FROM project_blobs b WHERE b.project_id = OLD.project_id AND b.refs <= 0
           AND (b.sha256 = OLD.sha256 OR b.sha256 IN (${LINKED_SHAS}))
         RETURNING b.size
       ) SELECT coalesce(sum(size), 0) INTO freed FROM gone;`;

const usageDelete = (blobs: string) => `CREATE OR REPLACE FUNCTION attest_artifacts_usage_delete() RETURNS trigger LANGUAGE plpgsql AS $$
     DECLARE
       freed bigint;
     BEGIN
       IF NOT EXISTS (SELECT 1 FROM projects p WHERE p.id = OLD.project_id) THEN
         RETURN OLD;
       END IF;
       UPDATE project_usage SET artifacts = artifacts - 1, logical_bytes = logical_bytes - OLD.size WHERE project_id = OLD.project_id;${blobs}
       IF freed > 0 THEN
         UPDATE project_usage SET stored_bytes = stored_bytes - freed WHERE project_id = OLD.project_id;
       END IF;
       RETURN OLD;
     END $$`;

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql.raw(usageDelete(BY_KEY)).execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql.raw(usageDelete(BY_OR)).execute(db);
}
