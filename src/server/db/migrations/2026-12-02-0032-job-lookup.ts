import type { Kysely } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// A job is found by its CI build, its CI link or as the newest of a branch (TRIAGE-17: `attest gate
// --build`, `--ci-url`, `--latest --branch`; `GET /testmgmt/jobs?build=…`). The job's branch and
// build were only inside its `request` JSON, which no index reaches on both dialects: they become
// columns, copied from the request of every job already there, and each lookup gets an index in
// the list's order (newest first).

const BATCH = 500;

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('branch', 'text').execute();
  await db.schema.alterTable('jobs').addColumn('build', 'text').execute();

  let after = '';
  for (;;) {
    const rows: { id: string; request: string }[] = await db
      .selectFrom('jobs')
      .select(['id', 'request'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    if (rows.length === 0) break;
    for (const row of rows) {
      const request = JSON.parse(row.request) as { branch?: unknown; build?: unknown };
      const branch = typeof request.branch === 'string' ? request.branch : null;
      const build = typeof request.build === 'string' ? request.build : null;
      if (branch !== null || build !== null) await db.updateTable('jobs').set({ branch, build }).where('id', '=', row.id).execute();
    }
    after = rows[rows.length - 1]?.id as string;
  }

  await db.schema.createIndex('jobs_build').on('jobs').columns(['project_id', 'build', 'created_at', 'id']).execute();
  await db.schema.createIndex('jobs_ci_url').on('jobs').columns(['project_id', 'ci_url', 'created_at', 'id']).execute();
  await db.schema.createIndex('jobs_branch').on('jobs').columns(['project_id', 'branch', 'created_at', 'id']).execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  for (const index of ['jobs_branch', 'jobs_ci_url', 'jobs_build']) await db.schema.dropIndex(index).execute();
  await db.schema.alterTable('jobs').dropColumn('build').execute();
  await db.schema.alterTable('jobs').dropColumn('branch').execute();
}
