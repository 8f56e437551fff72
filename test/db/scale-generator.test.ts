import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { sql } from 'kysely';
import { generateScale } from '../../bench/scale/generate.ts';
import { loadConfig } from '../../src/server/config.ts';
import { createContext } from '../../src/server/context.ts';
import { inTransaction } from '../../src/server/db/repositories/transaction.ts';
import type { DB, TestRunsTable } from '../../src/server/db/types.ts';
import { onRunsCompleted } from '../../src/server/services/records/run-completion.ts';
import { createPostgresDatabase, DIALECTS } from '../helpers/dialects.ts';

// The scale data set's generator (bench/scale/generate.ts) writes, beside the runs, what the
// server would have written as they completed, and what the triggers it bypasses would have kept.
// A small set (2,000 runs) proves both, on each dialect: generated with the triggers bypassed and
// with them firing, the counters agree; and replayed through the server's own `onRunsCompleted`
// (groups, occurrences, each run's and step's group, health, incidents), the same rows come out.

const RUNS = 2000;
const BLOBS = 300;
const ENDS_AT = new Date('2026-11-28T12:00:00.000Z');
const folders: string[] = [];
const drops: (() => Promise<void>)[] = [];
after(async () => {
  for (const drop of drops) await drop();
  for (const folder of folders) fs.rmSync(folder, { recursive: true, force: true });
});

/** A data folder (and for PostgreSQL an empty database) to generate into. */
async function target(dialect: string) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-scale-test-'));
  folders.push(dataDir);
  if (dialect === 'sqlite') return { dataDir };
  const database = await createPostgresDatabase('attest_scale_test', { empty: true });
  drops.push(database.drop);
  return { dataDir, databaseUrl: database.url };
}

/** Ends what createContext started: its database, its cluster and its task runner. */
async function close(ctx: Awaited<ReturnType<typeof createContext>>) {
  await ctx.background.stop();
  await ctx.cluster.close();
  await ctx.database.close();
}

async function open(where: { dataDir: string; databaseUrl?: string }, clock: () => Date = () => ENDS_AT) {
  const config = loadConfig({
    ATTEST_DATA_DIR: where.dataDir,
    ATTEST_LOG_LEVEL: 'warn',
    ...(where.databaseUrl ? { ATTEST_DATABASE_URL: where.databaseUrl } : {}),
  });
  return createContext(config, { clock });
}

/** What the triggers keep: usage, blob references, artifact counts, flaky_milli, the dashboard's rollups. */
async function counters(db: DB) {
  return {
    usage: await db
      .selectFrom('project_usage')
      .innerJoin('projects', 'projects.id', 'project_usage.project_id')
      .select(['key', 'runs', 'artifacts', 'logical_bytes', 'stored_bytes'])
      .orderBy('key')
      .execute(),
    blobs: await db
      .selectFrom('project_blobs')
      .innerJoin('projects', 'projects.id', 'project_blobs.project_id')
      .select(['key', 'sha256', 'size', 'refs'])
      .orderBy('key')
      .orderBy('sha256')
      .execute(),
    artifactCounts: await db
      .selectFrom('test_runs')
      .select(['name', 'created_at', 'artifact_count'])
      .orderBy('created_at')
      .orderBy('name')
      .execute(),
    flaky: await db.selectFrom('tests').select(['full_name', 'flaky_milli']).orderBy('full_name').execute(),
    // The dashboard's rollup (migration 0023); lengths rounded, as SQLite sums them from julianday().
    runDays: (
      await db
        .selectFrom('run_days')
        .innerJoin('projects', 'projects.id', 'run_days.project_id')
        .select(['key', 'day', 'branch', 'runs', 'passed', 'failed', 'skipped', 'duration_sum', 'durations'])
        .orderBy('key')
        .orderBy('day')
        .orderBy('branch')
        .execute()
    ).map((row) => ({ ...row, runs: Number(row.runs), duration_sum: Math.round(Number(row.duration_sum)) })),
    // The top groups' rollup (migration 0025), its groups named by fingerprint.
    groupDays: (
      await db
        .selectFrom('group_days')
        .innerJoin('failure_groups', 'failure_groups.id', 'group_days.group_id')
        .select(['group_days.project_id', 'day', 'fingerprint', 'group_days.occurrences'])
        .execute()
    )
      .map((row) => ({ ...row, occurrences: Number(row.occurrences) }))
      .sort((a, b) => `${a.project_id}${a.day}${a.fingerprint}`.localeCompare(`${b.project_id}${b.day}${b.fingerprint}`)),
  };
}

/** The indexes and triggers, by name and definition: the load drops some and must make them again. */
async function schema(db: DB, dialect: string) {
  type Definition = { name: string; definition: string };
  const query =
    dialect === 'sqlite'
      ? sql<Definition>`SELECT name, sql AS definition FROM sqlite_master WHERE type IN ('index', 'trigger') ORDER BY name`
      : sql<Definition>`
          SELECT indexname AS name, indexdef AS definition FROM pg_indexes WHERE schemaname = 'public'
          UNION ALL
          SELECT tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
          ORDER BY name`;
  return (await query.execute(db)).rows;
}

/** What completing the runs recorded, with group ids replaced by their fingerprints (ids are random). */
async function derived(db: DB) {
  const groups = await db.selectFrom('failure_groups').selectAll().execute();
  const print = new Map(groups.map((g) => [g.id, `${g.project_id}:${g.fingerprint}`]));
  const of = (id: string | null) => (id === null ? null : print.get(id));
  return {
    groups: groups
      .map(({ id: _id, ...g }) => ({
        ...g,
        occurrences: Number(g.occurrences),
        affected_tests: Number(g.affected_tests),
        affected_branches: Number(g.affected_branches),
      }))
      .sort((a, b) => `${a.project_id}${a.fingerprint}`.localeCompare(`${b.project_id}${b.fingerprint}`)),
    occurrences: (await db.selectFrom('failure_occurrences').selectAll().execute())
      .map((o) => ({ ...o, group_id: of(o.group_id) }))
      .sort((a, b) => `${a.run_id}${a.group_id}`.localeCompare(`${b.run_id}${b.group_id}`)),
    tests: (await db.selectFrom('failure_group_tests').selectAll().execute()).map((t) => `${of(t.group_id)} ${t.test_key}`).sort(),
    branches: (await db.selectFrom('failure_group_branches').selectAll().execute()).map((t) => `${of(t.group_id)} ${t.branch}`).sort(),
    runs: (await db.selectFrom('test_runs').select(['id', 'failure_group_id']).where('failure_group_id', 'is not', null).execute())
      .map((r) => `${r.id} ${of(r.failure_group_id)}`)
      .sort(),
    steps: (await db.selectFrom('steps').select(['id', 'failure_group_id']).where('failure_group_id', 'is not', null).execute())
      .map((r) => `${r.id} ${of(r.failure_group_id)}`)
      .sort(),
    health: (await db.selectFrom('test_health').selectAll().orderBy('test_id').execute()).map((h) => ({
      ...h,
      flaky_score: Number(h.flaky_score),
    })),
    incidents: (await db.selectFrom('jobs').select(['id', 'incident_group_id']).where('incident_group_id', 'is not', null).execute()).map(
      (j) => `${j.id} ${of(j.incident_group_id)}`,
    ),
    flaky: await db.selectFrom('tests').select(['id', 'flaky_milli']).orderBy('id').execute(),
  };
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] the scale data set's generator`, () => {
    test(`[${dialect}] writes the counters the bypassed triggers would have, and what the server records as runs complete`, async () => {
      const bypassed = await target(dialect);
      const fired = await target(dialect);
      const meta = await generateScale({
        runs: RUNS,
        dataDir: bypassed.dataDir,
        databaseUrl: bypassed.databaseUrl,
        endsAt: ENDS_AT,
        blobs: BLOBS,
      });
      await generateScale({
        runs: RUNS,
        dataDir: fired.dataDir,
        databaseUrl: fired.databaseUrl,
        endsAt: ENDS_AT,
        blobs: BLOBS,
        triggers: 'fire',
      });
      // The full set's jobs on fewer days (generate.ts, jobsOn): about RUNS runs, every one counted.
      assert.ok(Math.abs(meta.runs - RUNS) < RUNS / 2, `${meta.runs} runs`);
      assert.ok((meta.counts.failure_occurrences ?? 0) > 100, 'some runs failed');
      assert.ok((meta.counts.artifacts ?? 0) > 100, 'some runs have screenshots');

      const a = await open(bypassed);
      const b = await open(fired);
      try {
        assert.deepEqual(await counters(a.db), await counters(b.db));
        const indexes = await schema(a.db, dialect);
        assert.ok(indexes.length > 100, `${indexes.length} indexes and triggers`);
        assert.deepEqual(indexes, await schema(b.db, dialect));
        const usage = await a.db
          .selectFrom('project_usage')
          .select(({ fn }) => fn.sum<number>('runs').as('runs'))
          .executeTakeFirstOrThrow();
        assert.equal(Number(usage.runs), meta.runs);
      } finally {
        await close(b);
      }

      // The same runs completed through the server: everything completing recorded is cleared, then
      // recorded again by onRunsCompleted, batch by batch in the order the runs finished.
      const generated = await derived(a.db);
      await close(a);
      let now = ENDS_AT;
      const replay = await open(bypassed, () => now);
      try {
        const db = replay.db;
        await db.updateTable('test_runs').set({ failure_group_id: null }).execute();
        await db.updateTable('steps').set({ failure_group_id: null }).where('failure_group_id', 'is not', null).execute();
        await db.updateTable('jobs').set({ incident_group_id: null, incident_failed_runs: null }).execute();
        await db.updateTable('tests').set({ flaky_milli: 0 }).execute();
        for (const table of [
          'failure_occurrences',
          'failure_group_tests',
          'failure_group_branches',
          'test_health',
          'failure_groups',
        ] as const)
          await db.deleteFrom(table).execute();
        const runs = (await db.selectFrom('test_runs').selectAll().execute()) as TestRunsTable[];
        runs.sort((x, y) => (x.finished_at as string).localeCompare(y.finished_at as string) || x.id.localeCompare(y.id));
        // Batches of one run each where the clock matters (a group's times, a test's health), in
        // finish order: the clock is each batch's last finish.
        const BATCH = 50;
        for (let i = 0; i < runs.length; i += BATCH) {
          const batch = runs.slice(i, i + BATCH).map((run) => ({ ...run, attempt: Number(run.attempt) }));
          now = new Date(batch.at(-1)?.finished_at as string);
          await inTransaction(db, (trx) => onRunsCompleted(replay, trx, batch, { webhooks: false }));
        }
        const recorded = await derived(db);
        assert.deepEqual(recorded.incidents, generated.incidents);
        assert.deepEqual(recorded.runs, generated.runs);
        assert.deepEqual(recorded.steps, generated.steps);
        assert.deepEqual(recorded.occurrences, generated.occurrences);
        assert.deepEqual(recorded.tests, generated.tests);
        assert.deepEqual(recorded.branches, generated.branches);
        const strip = <T extends { created_at: string; updated_at: string }>(rows: T[]) =>
          rows.map(({ created_at: _c, updated_at: _u, ...rest }) => rest);
        assert.deepEqual(strip(recorded.groups), strip(generated.groups));
        const stripHealth = (rows: typeof recorded.health) => rows.map(({ updated_at: _u, ...rest }) => rest);
        assert.deepEqual(stripHealth(recorded.health), stripHealth(generated.health));
        assert.deepEqual(recorded.flaky, generated.flaky);
      } finally {
        await close(replay);
      }
    });
  });
}
