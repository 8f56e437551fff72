import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { type CompiledQuery, Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { listKeysOfUser } from '../../src/server/db/repositories/api-keys.ts';
import { listArtifactsOfRun } from '../../src/server/db/repositories/artifacts.ts';
import { listAuditLog } from '../../src/server/db/repositories/audit.ts';
import { dailyOutcomes, groupTrends, topGroupsSince } from '../../src/server/db/repositories/dashboard.ts';
import { listDevices } from '../../src/server/db/repositories/devices.ts';
import { type GroupSort, listFailureGroups } from '../../src/server/db/repositories/failure-groups.ts';
import { listTestsByHealth } from '../../src/server/db/repositories/health.ts';
import { listImports } from '../../src/server/db/repositories/imports.ts';
import { jobRunSummaries, listJobs } from '../../src/server/db/repositories/jobs.ts';
import { listProjects } from '../../src/server/db/repositories/projects.ts';
import { expiredRuns } from '../../src/server/db/repositories/retention.ts';
import { latestRunsOfTest, listRuns, type RunFilter } from '../../src/server/db/repositories/runs.ts';
import { listDistinctLinks } from '../../src/server/db/repositories/test-links.ts';
import { listTests } from '../../src/server/db/repositories/tests.ts';
import { listUsers } from '../../src/server/db/repositories/users.ts';
import type { Database as Schema } from '../../src/server/db/types.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// Every list query reads its page through an index (SCALE-8, docs/requirements.md): the queries
// the list repositories send, with each filter and sort the API offers, first page and a cursor
// page, are explained on a seeded database, and the plan may neither scan a large table whole nor
// sort without an index. On SQLite the database has no statistics (Attest never runs ANALYZE), so
// the planner costs every table as large; on PostgreSQL each plan is asked for with sequential
// scans and sorts disabled, so one that keeps them has no index to do without.

/** Tables that grow with the data: a whole scan of one, or a sort of its rows, is what the test refuses. */
const LARGE = new Set([
  'test_runs',
  'job_rollups',
  'steps',
  'text_cells',
  'artifacts',
  'jobs',
  'tests',
  'imports',
  'audit_log',
  'failure_groups',
  'failure_occurrences',
  'failure_group_tests',
  'failure_group_branches',
  'test_health',
  'test_links',
  'run_days',
  'group_days',
]);

/**
 * The problems of one query's SQLite plan (EXPLAIN QUERY PLAN's lines). A query ordered by an
 * aggregate (the dashboard's top groups by count) sorts its groups, which no index holds: allowed.
 */
function sqliteProblems(details: readonly string[], query: string): string[] {
  const problems: string[] = [];
  const ofGroups = /order by (?:count|sum)\(/i.test(query);
  for (const detail of details) {
    const scan = /^SCAN (\w+)(?: AS \w+)?$/.exec(detail);
    if (scan && LARGE.has(scan[1] as string)) problems.push(`whole scan: ${detail}`);
    if (!ofGroups && /USE TEMP B-TREE FOR (?:RIGHT PART OF )?ORDER BY/.test(detail)) problems.push(`sort without an index: ${detail}`);
  }
  return problems;
}

interface PgPlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Sort Key'?: string[];
  Plans?: PgPlanNode[];
}

/** The problems of one query's PostgreSQL plan (EXPLAIN's JSON), walked whole. */
function postgresProblems(node: PgPlanNode): string[] {
  const problems: string[] = [];
  if (node['Node Type'] === 'Seq Scan' && LARGE.has(node['Relation Name'] ?? '')) problems.push(`whole scan of ${node['Relation Name']}`);
  // A sort of an aggregate's groups (the dashboard's top groups by count) orders what no index holds;
  // the rows it counted are what must come through an index.
  const ofGroups = node.Plans?.[0]?.['Node Type'] === 'Aggregate';
  if (node['Node Type'] === 'Sort' && !ofGroups) problems.push(`sort without an index by ${(node['Sort Key'] ?? []).join(', ')}`);
  for (const child of node.Plans ?? []) problems.push(...postgresProblems(child));
  return problems;
}

/** The index scans of a PostgreSQL plan, walked whole: each index's name and its condition. */
function postgresIndexScans(node: PgPlanNode): string[] {
  const own = node['Index Name'] ? [`${node['Index Name']} ${node['Index Cond'] ?? ''}`] : [];
  return [...own, ...(node.Plans ?? []).flatMap(postgresIndexScans)];
}

const JUNIT = (round: number) => `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="checkout" tests="3">
    <testcase classname="checkout.Cart" name="adds an item"/>
    <testcase classname="checkout.Cart" name="removes an item"><failure message="Expected 2 items but got ${round + 1}">at Cart.remove (cart.js:10:3)</failure></testcase>
    <testcase classname="checkout.Pay" name="pays by card"><failure message="Timeout 30000ms exceeded waiting for #pay">at pay (pay.js:4:1)</failure></testcase>
  </testsuite>
</testsuites>`;

for (const dialect of DIALECTS) {
  describe(`[${dialect}] list queries read through indexes (SCALE-8)`, () => {
    let server: TestServer;
    let db: Kysely<Schema>;
    /** SQLite's plan lines of a query, or PostgreSQL's plan with sequential scans and sorts disabled. */
    let explain: (query: CompiledQuery) => Promise<string[] | PgPlanNode>;
    let close: () => Promise<void>;
    const captured: CompiledQuery[] = [];
    const seeded = { projectId: '', jobId: '', runId: '', testId: '', userId: '' };

    before(async () => {
      server = await startTestServer(dialect);
      const project = await createProject(server, 'Plans');
      seeded.projectId = project.id;
      // Two imports on one branch: a job each, runs, tests, error groups, health; enough rows for a cursor page everywhere.
      for (const round of [0, 1]) {
        const answer = await fetch(`${server.url}/api/v1/projects/${project.id}/imports?branch=main&environment=staging`, {
          method: 'POST',
          headers: { 'service.api-token': server.admin.key, 'content-type': 'application/xml', accept: 'application/json' },
          body: JUNIT(round),
        });
        const accepted = (await answer.json()) as { id: string };
        assert.equal(answer.status, 202);
        await waitFor(
          async () => {
            const record = await fetch(`${server.url}/api/v1/projects/${project.id}/imports/${accepted.id}`, {
              headers: { 'service.api-token': server.admin.key, accept: 'application/json' },
            });
            return ((await record.json()) as { status: string }).status === 'completed';
          },
          { message: 'the import completed' },
        );
      }
      const log = (event: { query: CompiledQuery }) => {
        captured.push(event.query);
      };
      if (dialect === 'sqlite') {
        const file = new Database(`${server.dataDir}/attest.db`, { readonly: true });
        db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: file }), log });
        explain = async (query) =>
          (file.prepare(`explain query plan ${query.sql}`).all(...(query.parameters as unknown[])) as { detail: string }[]).map(
            (row) => row.detail,
          );
        close = async () => {
          await db.destroy();
        };
      } else {
        const pool = new pg.Pool({ connectionString: server.config.databaseUrl, max: 2 });
        db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }), log });
        explain = async (query) => {
          const client = await pool.connect();
          try {
            await client.query('begin');
            await client.query('set local enable_seqscan = off');
            await client.query('set local enable_sort = off');
            const { rows } = await client.query(`explain (format json) ${query.sql}`, query.parameters as unknown[]);
            await client.query('rollback');
            return (rows[0]['QUERY PLAN'] as [{ Plan: PgPlanNode }])[0].Plan;
          } finally {
            client.release();
          }
        };
        close = () => db.destroy();
      }
      const run = await db
        .selectFrom('test_runs')
        .select(['id', 'job_id', 'test_id'])
        .where('project_id', '=', project.id)
        .executeTakeFirstOrThrow();
      seeded.jobId = run.job_id as string;
      seeded.runId = run.id;
      seeded.testId = run.test_id as string;
      seeded.userId = (await db.selectFrom('users').select('id').executeTakeFirstOrThrow()).id;
      captured.length = 0;
    });
    after(async () => {
      await close?.();
      await server?.close();
    });

    /** The indexes a query's plan reads, with their conditions: SQLite's plan lines, PostgreSQL's index scans. */
    async function indexesOf(query: CompiledQuery): Promise<string[]> {
      const plan = await explain(query);
      return Array.isArray(plan) ? plan : postgresIndexScans(plan);
    }

    /** A list's first page of one item and, when there is one, the page after it: both queries are explained. */
    async function pages(list: (page: { limit: number; cursor?: string }) => Promise<{ nextCursor: string | null }>) {
      const first = await list({ limit: 1 });
      if (first.nextCursor) await list({ limit: 1, cursor: first.nextCursor });
    }

    test('every list, with each filter and sort the API offers, reads a page without a whole scan of a large table or a sort of its rows', async () => {
      const { projectId, jobId, runId, testId, userId } = seeded;
      const now = new Date().toISOString();
      const runFilters: RunFilter[] = [
        {},
        { branch: 'main', verdict: 'failed' },
        { environment: 'staging' },
        { from: '2020-01-01T00:00:00.000Z', to: now },
        { jobId },
        { testId },
        { status: 'completed' },
      ];
      for (const filter of runFilters) await pages((page) => listRuns(db, projectId, filter, page));
      await latestRunsOfTest(db, testId, 50);
      await pages((page) => listJobs(db, projectId, page));
      // A job by its CI build, its CI link or its branch (TRIAGE-17), as `attest gate` asks for it.
      for (const filter of [
        { build: '451' },
        { ciUrl: 'https://ci.example.com/build/451' },
        { branch: 'main' },
        { build: '451', branch: 'main' },
      ]) {
        await pages((page) => listJobs(db, projectId, page, filter));
      }
      await pages((page) => listTests(db, projectId, page));
      for (const sort of ['newest', 'flaky'] as const) {
        for (const health of [undefined, 'stable', 'flaky', 'broken', 'quarantined'] as const) {
          await pages((page) => listTestsByHealth(db, projectId, { sort, health, now }, page));
        }
      }
      await pages((page) => listTestsByHealth(db, projectId, { sort: 'newest', now, suite: 'checkout' }, page));
      for (const sort of ['lastSeen', 'occurrences', 'affectedTests'] as GroupSort[]) {
        for (const filter of [
          {},
          { status: 'known' as const },
          { branch: 'main' },
          { testId },
          { since: '2020-01-01T00:00:00.000Z' },
          { q: 'checkout' },
        ]) {
          await pages((page) => listFailureGroups(db, projectId, filter, sort, page));
        }
      }
      await pages((page) => listArtifactsOfRun(db, runId, page));
      await pages((page) => listImports(db, projectId, page));
      await pages((page) => listAuditLog(db, {}, page));
      await pages((page) => listAuditLog(db, { action: 'project.create' }, page));
      await pages((page) => listDevices(db, {}, page));
      await pages((page) => listUsers(db, {}, page));
      await pages((page) => listProjects(db, 'all', page));
      await pages((page) => listKeysOfUser(db, userId, {}, page));
      await pages((page) => listDistinctLinks(db, projectId, {}, page));
      // The dashboard's daily outcomes: the rollup's rows of the window, in its key's order.
      for (const branch of [null, 'main']) await dailyOutcomes(db, projectId, '2020-01-01T00:00:00.000Z', branch);
      // Its top groups and their trends: over every branch the rollup's rows of the window, on one the occurrences'.
      for (const branch of [null, 'main']) {
        const top = await topGroupsSince(db, projectId, '2020-01-01T00:00:00.000Z', branch, 5);
        await groupTrends(
          db,
          projectId,
          top.map((row) => row.group_id),
          '2020-01-01T00:00:00.000Z',
          branch,
        );
      }
      // Retention by age, a page of the sweep at a time (RET-2): one range of the retention index, in its order.
      const expired = await expiredRuns(db, projectId, { cutoff: now, failedCutoff: now }, 1);
      await expiredRuns(db, projectId, { cutoff: now }, 1, expired[0]?.finishedAt);

      assert.ok(captured.length >= 60, `${captured.length} queries captured`);
      const failures: string[] = [];
      for (const query of captured) {
        const plan = await explain(query);
        const problems = Array.isArray(plan) ? sqliteProblems(plan, query.sql) : postgresProblems(plan);
        if (problems.length > 0) failures.push(`${query.sql}\n    ${problems.join('\n    ')}`);
      }
      assert.deepEqual(failures, [], `queries that read more than their page:\n${failures.join('\n')}`);
    });

    test('a branch, a job and its failures, and a deep page each seek the index made for them, and jobs read their rollup (SCALE-11)', async () => {
      const { projectId, jobId } = seeded;
      const seeks: [RunFilter, string][] = [
        [{ branch: 'main', verdict: 'failed' }, 'test_runs_branch'],
        [{ jobId }, 'test_runs_job'],
        [{ jobId, verdict: 'failed' }, 'test_runs_job_verdict'],
      ];
      for (const [filter, index] of seeks) {
        captured.length = 0;
        const first = await listRuns(db, projectId, filter, { limit: 1 });
        assert.ok(first.nextCursor, `a second page of ${JSON.stringify(filter)}`);
        await listRuns(db, projectId, filter, { limit: 1, cursor: first.nextCursor });
        for (const query of captured) {
          const plan = await indexesOf(query);
          assert.ok(
            plan.some((line) => new RegExp(`\\b${index}\\b`).test(line)),
            `${JSON.stringify(filter)} reads ${index}: ${plan.join('; ')}`,
          );
        }
      }
      // A cursor page of the whole list seeks where the cursor is: the row comparison is the index's
      // condition, not a filter of what comes before it.
      captured.length = 0;
      const first = await listRuns(db, projectId, {}, { limit: 1 });
      await listRuns(db, projectId, {}, { limit: 1, cursor: first.nextCursor as string });
      const plan = await indexesOf(captured[1] as CompiledQuery);
      assert.ok(
        plan.some(
          (line) =>
            /test_runs_project/.test(line) &&
            (dialect === 'sqlite' ? /\(project_id=\? AND \(created_at,id\)<\(\?,\?\)\)/ : /ROW\(created_at, id\) < ROW/).test(line),
        ),
        plan.join('; '),
      );
      // A page of jobs reads one rollup row per job, by its key, and none of their runs.
      captured.length = 0;
      const summaries = await jobRunSummaries(db, [jobId]);
      assert.equal(summaries.get(jobId)?.completed, 3);
      assert.equal(captured.length, 1);
      const rollup = await indexesOf(captured[0] as CompiledQuery);
      assert.ok(
        rollup.some((line) => /job_rollups/.test(line) && !/test_runs/.test(line)),
        rollup.join('; '),
      );
    });
  });
}
