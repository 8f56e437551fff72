import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { v1 } from '../../src/client/index.ts';
import type { DB } from '../../src/server/db/types.ts';
import { collectGarbage, verifyStorage } from '../../src/server/services/operations/maintenance.ts';
import { sweepRetention } from '../../src/server/services/operations/retention.ts';
import { sha256 } from '../helpers/blob-files.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { upload } from '../helpers/uploads.ts';

// RET-3 on every dialect, PostgreSQL first of all: once runs are deleted (one, and a job with its
// runs) or expired by retention and garbage collection has run, no row and no blob is left behind.
// Every table that hangs off a run holds exactly the rows of the runs that remain, unchanged, and
// the blob folder exactly the blobs those rows reference; bytes shared with a remaining run stay.

interface ForeignKey {
  table: string;
  column: string;
  references: string;
  to: string;
}

/** Every foreign key of the schema, read from the database itself, so a table added later is checked too. */
async function foreignKeys(db: DB, dialect: string): Promise<ForeignKey[]> {
  const query =
    dialect === 'postgres'
      ? sql<ForeignKey>`SELECT cl.relname AS "table", a.attname AS "column", ref.relname AS "references", ra.attname AS "to"
          FROM pg_constraint con
          JOIN pg_class cl ON cl.oid = con.conrelid
          JOIN pg_class ref ON ref.oid = con.confrelid
          JOIN pg_namespace ns ON ns.oid = cl.relnamespace AND ns.nspname = current_schema()
          JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = con.conkey[1]
          JOIN pg_attribute ra ON ra.attrelid = con.confrelid AND ra.attnum = con.confkey[1]
          WHERE con.contype = 'f'`
      : sql<ForeignKey>`SELECT m.name AS "table", p."from" AS "column", p."table" AS "references", p."to" AS "to"
          FROM sqlite_master m JOIN pragma_foreign_key_list(m.name) p WHERE m.type = 'table'`;
  return (await query.execute(db)).rows;
}

/**
 * What hangs off a run: the tables with a foreign key to `test_runs` (each with its column), and
 * the tables that only reach a run through one of those (`artifact_images` through `artifacts`).
 */
function runOwned(keys: ForeignKey[]) {
  const direct = new Map(keys.filter((k) => k.references === 'test_runs').map((k) => [k.table, k.column]));
  const through = keys.filter((k) => !direct.has(k.table) && k.table !== 'test_runs' && direct.has(k.references));
  return { direct, through };
}

type Rows = Record<string, string[]>;
const canonical = (rows: Record<string, unknown>[]) =>
  rows.map((row) => JSON.stringify(Object.fromEntries(Object.entries(row).sort(([a], [b]) => a.localeCompare(b))))).sort();

/**
 * Every row of the run-owned tables, of `test_runs` and of `images` (shared by content, so owned by
 * no run; garbage collection removes those no artifact uses), or with `runIds` only those the runs need.
 */
async function rowsOf(db: DB, owned: ReturnType<typeof runOwned>, runIds?: string[]): Promise<Rows> {
  const ids = runIds ?? [];
  const runs = sql.join(ids.length > 0 ? ids : ['']);
  const select = async (table: string, where: ReturnType<typeof sql> | undefined) =>
    canonical((await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(table)} ${where ?? sql``}`.execute(db)).rows);
  const scoped = (condition: ReturnType<typeof sql>) => (runIds ? sql`WHERE ${condition}` : undefined);
  const rows: Rows = { test_runs: await select('test_runs', scoped(sql`id IN (${runs})`)) };
  for (const [table, column] of owned.direct) rows[table] = await select(table, scoped(sql`${sql.ref(column)} IN (${runs})`));
  for (const key of owned.through) {
    const parentRun = owned.direct.get(key.references) as string;
    rows[key.table] = await select(
      key.table,
      scoped(
        sql`${sql.ref(key.column)} IN (SELECT ${sql.ref(key.to)} FROM ${sql.table(key.references)} WHERE ${sql.ref(parentRun)} IN (${runs}))`,
      ),
    );
  }
  rows.images = await select(
    'images',
    scoped(sql`id IN (SELECT ai.image_id FROM artifact_images ai JOIN artifacts a ON a.id = ai.artifact_id WHERE a.run_id IN (${runs}))`),
  );
  return rows;
}

/** The blobs the given rows reference: artifact contents, images and their thumbnails. */
function blobsOf(rows: Rows): Set<string> {
  const keys = new Set<string>();
  for (const row of [...(rows.artifacts ?? []), ...(rows.images ?? [])].map((json) => JSON.parse(json) as Record<string, string | null>)) {
    for (const key of [row.sha256, row.thumbnail_sha256]) if (key) keys.add(key);
  }
  return keys;
}

/** The blob files in the data folder, and the folders that hold nothing. */
function blobFolder(dataDir: string): { blobs: Set<string>; emptyFolders: string[] } {
  const root = path.join(dataDir, 'blobs');
  const entries = fs.readdirSync(root, { recursive: true }) as string[];
  const blobs = new Set(entries.filter((name) => fs.statSync(path.join(root, name)).isFile()).map((name) => path.basename(name)));
  const emptyFolders = entries.filter(
    (name) => fs.statSync(path.join(root, name)).isDirectory() && fs.readdirSync(path.join(root, name)).length === 0,
  );
  return { blobs, emptyFolders };
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] no row and no blob left behind after runs are deleted and expired (RET-3)`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect, { ATTEST_RETENTION_INTERVAL_MINUTES: '0', ATTEST_GC_INTERVAL_MINUTES: '0' });
    });
    after(() => server.close());

    test('steps, cells, results posts, artifacts, their images and their blobs are exactly what the remaining runs need', async () => {
      const ctx = server.app.attest;
      const client = server.admin.client;
      const { id: projectId } = await createProject(server);
      const png = () => randomPng(40, 30);
      const [sharedA, sharedG, baseline] = [await png(), await png(), await png()];

      /** A completed run with nested steps, step and run cells, an idempotent results post, screenshots, a log and a visual diff. */
      async function record(name: string, shots: Buffer[], options: { jobId?: string; testName?: string } = {}) {
        const run = await client.call(v1.runs.createRun, { body: { projectId, name, ...options } });
        await client.call(v1.results.appendResults, {
          params: { testRunId: run.id },
          body: {
            idempotencyKey: 'batch-1',
            steps: [
              { key: 'open', title: 'Open', status: 'passed', cells: [{ name: 'url', text: `https://example.test/${name}` }] },
              { key: 'login', parentKey: 'open', title: 'Log in', status: 'passed', cells: [{ name: 'user', text: 'qa' }] },
              { key: 'pay', title: 'Pay', status: 'failed' },
            ],
            cells: [{ name: 'summary', text: `run ${name}` }],
          },
        });
        const send = async (metadata: Record<string, unknown>, files: Parameters<typeof upload>[4]) => {
          const res = await upload(server.url, server.admin.key, projectId, { testRunId: run.id, ...metadata }, files);
          assert.equal(res.status, 201, JSON.stringify(res.body));
        };
        for (const [i, bytes] of shots.entries()) {
          await send(
            { stepKey: i % 2 ? 'pay' : 'login', kind: 'screenshot', name: `shot-${i}.png` },
            { file: { bytes, type: 'image/png' } },
          );
        }
        await send({ kind: 'log', name: 'console.txt' }, { file: { bytes: randomBytes(3000), type: 'text/plain' } });
        await send(
          { stepKey: 'pay', kind: 'visual-diff', name: 'header' },
          { baseline: { bytes: baseline }, actual: { bytes: await png() }, diff: { bytes: await png() } },
        );
        await client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: 'failed' } });
        server.clock.advance(1000); // Finished one after the other, so "the last run of a test" is well defined.
        return run.id;
      }

      // Test `checkout`: G (oldest, marked keep), E and F expire under "the last run per test", H stays as the last.
      const g = await record('G', [sharedG, await png()], { testName: 'checkout' });
      await client.call(v1.runs.keepRun, { params: { testRunId: g }, body: { keep: true } });
      const e = await record('E', [sharedA, await png()], { testName: 'checkout' });
      await record('F', [await png()], { testName: 'checkout' });
      const h = await record('H', [await png()], { testName: 'checkout' });
      // A stays; B is deleted by hand; the job's C and D go with it.
      const a = await record('A', [sharedA, await png()]);
      const b = await record('B', [sharedA, sharedG, await png()]);
      const job = await client.call(v1.jobs.createJob, { body: { projectId, name: 'Nightly', testIds: [] } });
      await record('C', [sharedG, await png()], { jobId: job.id });
      await record('D', [await png(), await png()], { jobId: job.id });

      // An issue filed from a run (FORGE-5) hangs off it: one for a run that stays, one for a run that goes.
      for (const [runId, key] of [
        [a, 'QA-1'],
        [b, 'QA-2'],
      ] as const) {
        await ctx.db
          .insertInto('issue_links')
          .values({
            id: randomUUID(),
            project_id: projectId,
            failure_group_id: null,
            run_id: runId,
            tracker: 'jira',
            key,
            url: `https://jira.example.test/browse/${key}`,
            title: 'checkout fails',
            status: 'Open',
            refreshed_at: null,
            created_at: new Date().toISOString(),
            created_by: null,
          })
          .execute();
      }
      const owned = runOwned(await foreignKeys(ctx.db, dialect));
      for (const table of ['steps', 'text_cells', 'artifacts', 'result_posts'])
        assert.ok(owned.direct.has(table), `${table} hangs off a run`);
      assert.ok(
        owned.through.some((k) => k.table === 'artifact_images'),
        'artifact_images hangs off a run through artifacts',
      );
      const remaining = [a, g, h];
      const needed = await rowsOf(ctx.db, owned, remaining);
      const all = await rowsOf(ctx.db, owned);
      for (const [table, rows] of Object.entries(needed)) {
        assert.ok(rows.length > 0, `the remaining runs hold ${table} rows`);
        assert.ok((all[table]?.length ?? 0) > rows.length, `the runs to go hold ${table} rows too`);
      }
      assert.ok(blobFolder(server.dataDir).blobs.size > blobsOf(needed).size);

      await client.call(v1.runs.deleteRun, { params: { testRunId: b } });
      await client.call(v1.jobs.deleteJob, { params: { jobId: job.id } });
      await client.call(v1.projects.updateProject, { params: { projectId }, body: { retention: { lastRunsPerTest: 1 } } });
      assert.equal((await sweepRetention(ctx)).deleted, 2);
      await assert.rejects(client.call(v1.runs.getRun, { params: { testRunId: e } }), { status: 404 });
      const gc = await collectGarbage(
        { ...ctx, clock: () => new Date(Math.max(Date.now(), server.clock().getTime()) + 1000) },
        { graceMs: 0 },
      );
      assert.ok(gc.deleted > 0 && gc.unusedImages > 0);

      // No row left behind, and the remaining runs' rows exactly as they were.
      assert.deepEqual(await rowsOf(ctx.db, owned), needed);
      // No blob left behind, none missing: the folder holds exactly what those rows reference.
      const folder = blobFolder(server.dataDir);
      assert.deepEqual([...folder.blobs].sort(), [...blobsOf(needed)].sort());
      assert.deepEqual(folder.emptyFolders, []);
      for (const shared of [sharedA, sharedG, baseline]) {
        assert.ok(
          needed.images?.some((row) => row.includes(sha256(shared))),
          'bytes shared with a remaining run stay',
        );
      }
      const verify = await verifyStorage(ctx);
      assert.deepEqual([verify.integrity, verify.missingBlobs, verify.badBlobs, verify.orphanBlobs], [[], [], [], 0]);
    });
  });
}
