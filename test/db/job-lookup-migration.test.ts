import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MIGRATION_NAMES } from '../../src/server/db/database.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type AnyDb, migrate, schemaBefore } from '../helpers/migration-schema.ts';

// TRIAGE-17: migration 0032 copies each job's branch and build out of its request JSON into the
// columns the job lookups index, on rows written as the version before it wrote them.

const MINE = '2026-12-02-0032-job-lookup';

for (const dialect of DIALECTS) {
  describe(`[${dialect}] migration ${MINE}`, () => {
    let db: AnyDb;
    let close: () => Promise<void> = async () => {};
    // The schema as it stood just before this migration (later ones run after it, in the test).
    before(async () => {
      ({ db, close } = await schemaBefore(dialect, MINE, 'attest_job_lookup'));
    });
    after(() => close());

    test("each job's branch and build come out of its request into their columns; a request without them leaves null", async () => {
      const at = '2026-03-02T09:00:00.000Z';
      await db
        .insertInto('projects')
        .values({ id: 'p1', key: 'SHOP', name: 'Shop', description: '', created_at: at, updated_at: at })
        .execute();
      const request = (labels: Record<string, unknown>) =>
        JSON.stringify({ testIds: [], deviceIds: [], deviceLabels: [], environment: null, commit: null, ...labels });
      // More jobs than one batch of the migration reads, so it pages through them.
      const jobs = Array.from({ length: 1203 }, (_, i) => ({
        id: `j${String(i).padStart(5, '0')}`,
        project_id: 'p1',
        name: 'ci',
        request: i % 3 === 0 ? request({ branch: 'main', build: String(i) }) : i % 3 === 1 ? request({ branch: null, build: null }) : '{}',
        created_at: at,
      }));
      for (let i = 0; i < jobs.length; i += 200)
        await db
          .insertInto('jobs')
          .values(jobs.slice(i, i + 200))
          .execute();

      await migrate(db, MIGRATION_NAMES);

      const rows: { id: string; branch: string | null; build: string | null }[] = await db
        .selectFrom('jobs')
        .select(['id', 'branch', 'build'])
        .orderBy('id')
        .execute();
      assert.equal(rows.length, jobs.length);
      rows.forEach((row, i) => {
        assert.deepEqual(row, { id: jobs[i]?.id, branch: i % 3 === 0 ? 'main' : null, build: i % 3 === 0 ? String(i) : null }, row.id);
      });
    });
  });
}
