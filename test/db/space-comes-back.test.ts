import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { v1 } from '../../src/client/index.ts';
import { loadConfig } from '../../src/server/config.ts';
import { createDatabase } from '../../src/server/db/database.ts';
import { collectGarbage, reclaimSpace, verifyStorage } from '../../src/server/services/operations/maintenance.ts';
import { sweepRetention } from '../../src/server/services/operations/retention.ts';
import { tempDir } from '../helpers/data-folders.ts';
import { createProject } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { completeRun, startRun } from '../helpers/records.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { adminUpload } from '../helpers/uploads.ts';

const RUNS = 40;
const STEPS = 20;
const SHOTS = 3;
const DAY_MS = 86_400_000;

/** Bytes allocated on disk (not the apparent size) by `target` and, for a folder, everything under it, folders included. */
function allocated(target: string): number {
  let stats: fs.Stats;
  try {
    stats = fs.lstatSync(target);
  } catch {
    return 0; // A -wal that is not there.
  }
  let total = stats.blocks * 512;
  if (stats.isDirectory()) for (const name of fs.readdirSync(target)) total += allocated(path.join(target, name));
  return total;
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;

describe('[sqlite] space comes back (RET-3)', () => {
  let server: TestServer;
  before(async () => {
    // No timed sweep or collection: the test runs them.
    server = await startTestServer('sqlite', { ATTEST_RETENTION_INTERVAL_MINUTES: '0', ATTEST_GC_INTERVAL_MINUTES: '0' });
  });
  after(() => server.close());

  // The blob store's folders: blobs/aa/bb/<sha256>, and tmp/ for uploads in progress.
  const blobsSize = () => ['blobs', 'tmp'].reduce((sum, name) => sum + allocated(path.join(server.dataDir, name)), 0);
  const databaseSize = () => {
    const dbFile = path.join(server.dataDir, 'attest.db');
    return allocated(dbFile) + allocated(`${dbFile}-wal`);
  };
  /** Blob folder and database as collection leaves them: freed pages returned, the WAL checkpointed and truncated. */
  const measure = async () => {
    await reclaimSpace(server.app.attest);
    return { blobs: blobsSize(), database: databaseSize() };
  };
  /**
   * Grace 0, by a clock a second past both the wall clock the blob files were written by and the
   * server's clock the rows were (moved days ahead for retention).
   */
  const collect = () =>
    collectGarbage({ ...server.app.attest, clock: () => new Date(Math.max(Date.now(), server.clock().getTime()) + 1000) }, { graceMs: 0 });

  /**
   * `count` completed runs of STEPS steps with two text cells each and SHOTS screenshots of their
   * own random pixels (about 30 KB each), plus one screenshot all of them share (stored once).
   */
  async function fill(projectId: string, count: number, options: { jobId?: string; shared: Buffer }): Promise<string[]> {
    const client = server.admin.client;
    const ids: string[] = [];
    for (let r = 0; r < count; r++) {
      const run = await client.call(v1.runs.createRun, {
        body: { projectId, name: `run-${r}`, ...(options.jobId ? { jobId: options.jobId } : {}) },
      });
      const reply = await client.call(v1.results.appendResults, {
        params: { testRunId: run.id },
        body: {
          steps: Array.from({ length: STEPS }, (_, s) => ({
            key: `step-${s}`,
            title: `Step ${s} of run ${r}: open the page and compare it`,
            status: 'passed' as const,
            durationMs: 100 + s,
            cells: [
              { name: 'expected', text: `The page shows ${'the expected content '.repeat(5)}(${r}/${s})` },
              { name: 'actual', text: `The page showed ${'the actual content '.repeat(5)}(${r}/${s})` },
            ],
          })),
        },
      });
      const shots = [...(await Promise.all(Array.from({ length: SHOTS }, () => randomPng(100, 100)))), options.shared];
      for (const [i, png] of shots.entries()) {
        const res = await adminUpload(
          server,
          projectId,
          { testRunId: run.id, stepId: reply.steps[i]?.id, kind: 'screenshot', name: `shot-${i}.png` },
          { bytes: png, type: 'image/png' },
        );
        assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body));
      }
      await completeRun(client, run.id);
      ids.push(run.id);
    }
    return ids;
  }

  /** The collected space against its size before the runs were written; logs and checks the RET-3 bounds. */
  async function assertBack(label: string, before: { blobs: number; database: number }, full: { blobs: number; database: number }) {
    const blobsAfter = blobsSize();
    const databaseAfter = databaseSize();
    const sizes = {
      blobs: `${kib(before.blobs)} → ${kib(full.blobs)} → ${kib(blobsAfter)}`,
      database: `${kib(before.database)} → ${kib(full.database)} → ${kib(databaseAfter)}`,
    };
    console.log(`space, ${label} (before → full → after): ${JSON.stringify(sizes)}`);
    assert.ok(Math.abs(blobsAfter - before.blobs) <= before.blobs * 0.01, `blob folder back within 1%: ${sizes.blobs}`);
    assert.deepEqual(fs.readdirSync(path.join(server.dataDir, 'blobs')), [], 'no empty shard folder is left');
    assert.ok(databaseAfter <= before.database * 1.1, `database back within 10%: ${sizes.database}`);
    const verify = await verifyStorage(server.app.attest);
    assert.deepEqual([verify.integrity, verify.missingBlobs, verify.badBlobs, verify.orphanBlobs], [[], [], [], 0]);
  }

  test('after 40 runs × 20 steps and 160 screenshots are deleted by hand (runs, and a job with its runs) or expired by retention, and collected, the blob folder and the database are back to their size', async () => {
    const ctx = server.app.attest;
    const client = server.admin.client;
    const project = await createProject(server);
    const before = await measure();

    const shared = await randomPng(100, 100);
    const job = await client.call(v1.jobs.createJob, { body: { projectId: project.id, name: 'Nightly', testIds: [] } });
    const byHand = await fill(project.id, 10, { shared });
    await fill(project.id, 10, { jobId: job.id, shared });
    await fill(project.id, RUNS - 20, { shared });
    // Checkpointed, so the rows are in attest.db itself (as SQLite's own checkpoints put them in time),
    // not only in the write-ahead log that any truncating checkpoint would empty.
    const full = await measure();
    assert.ok(full.blobs > before.blobs + RUNS * SHOTS * 30_000, `the screenshots were stored (${kib(full.blobs)})`);

    // A quarter deleted one by one, a quarter with their job, the rest expired by the project's retention.
    for (const id of byHand) await client.call(v1.runs.deleteRun, { params: { testRunId: id } });
    await client.call(v1.jobs.deleteJob, { params: { jobId: job.id } });
    await client.call(v1.projects.updateProject, { params: { projectId: project.id }, body: { retention: { days: 1 } } });
    server.clock.advance(2 * DAY_MS);
    const swept = await sweepRetention(ctx);
    assert.equal(swept.deleted, RUNS - 20);
    assert.deepEqual((await client.call(v1.runs.listRuns, { query: { projectId: project.id } })).items, []);

    const gc = await collect();
    // Each run's own screenshots and thumbnails, and the shared one once.
    assert.ok(gc.deleted >= RUNS * SHOTS + 1, `every screenshot's blob went (${gc.deleted})`);
    assert.ok(gc.removedFolders > 0, 'the emptied folders were counted');
    assert.ok(gc.reclaimed && gc.reclaimed.freedPages > 0, 'the database returned pages');
    assert.equal(gc.reclaimed?.walTruncated, true);
    await assertBack('runs deleted and expired', before, full);

    // And the instance still works: a new screenshot lands in a shard folder made afresh.
    const run = await startRun(client, project.id);
    const res = await adminUpload(
      server,
      project.id,
      { testRunId: run.id, kind: 'screenshot', name: 'again.png' },
      { bytes: await randomPng(), type: 'image/png' },
    );
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual((await verifyStorage(ctx)).missingBlobs, []);
    await client.call(v1.runs.deleteRun, { params: { testRunId: run.id } });
    await client.call(v1.projects.deleteProject, { params: { projectId: project.id } });
    await collect();
  });

  test('after a project of 20 runs is deleted and collected, the blob folder and the database are back to their size', async () => {
    const before = await measure();
    const project = await createProject(server);
    await fill(project.id, 20, { shared: await randomPng(100, 100) });
    const full = await measure();
    await server.admin.client.call(v1.projects.deleteProject, { params: { projectId: project.id } });
    const gc = await collect();
    assert.ok(gc.deleted >= 20 * SHOTS + 1, `every screenshot's blob went (${gc.deleted})`);
    await assertBack('project deleted', before, full);
  });
});

describe('[sqlite] auto_vacuum (RET-3)', () => {
  test('a new database is created with auto_vacuum=INCREMENTAL', async () => {
    const handle = await createDatabase(loadConfig({ ATTEST_DATA_DIR: tempDir() }));
    try {
      const { rows } = await sql<{ auto_vacuum: number }>`PRAGMA auto_vacuum`.execute(handle.db);
      assert.equal(rows[0]?.auto_vacuum, 2);
    } finally {
      await handle.close();
    }
  });

  test('an existing database with auto_vacuum=NONE is converted once at start, and says so', async () => {
    const dir = tempDir();
    const first = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir }));
    await first.close();
    // Made NONE as an older version left it: the pragma, then a full VACUUM.
    const raw = new SQLite(path.join(dir, 'attest.db'));
    raw.pragma('auto_vacuum = NONE');
    raw.exec('VACUUM');
    assert.equal(raw.pragma('auto_vacuum', { simple: true }), 0);
    raw.close();

    const logged: string[] = [];
    const log = { info: (_: object, message: string) => logged.push(message), warn: (_: object, message: string) => logged.push(message) };
    const handle = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir }), { log });
    try {
      const check = new SQLite(path.join(dir, 'attest.db'), { readonly: true });
      assert.equal(check.pragma('auto_vacuum', { simple: true }), 2);
      check.close();
      assert.deepEqual(logged, ['SQLite database converted to auto_vacuum=INCREMENTAL (one full VACUUM)']);
      assert.deepEqual(await handle.integrityProblems(), []);
    } finally {
      await handle.close();
    }
    // Once: the next start finds it incremental and logs nothing.
    logged.length = 0;
    const next = await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir }), { log });
    await next.close();
    assert.deepEqual(logged, []);
  });
});
