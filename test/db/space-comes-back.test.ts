import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { v1 } from '../../src/client/index.ts';
import { loadConfig } from '../../src/server/config.ts';
import { createDatabase } from '../../src/server/db/database.ts';
import { collectGarbage, reclaimSpace, verifyStorage } from '../../src/server/services/maintenance.ts';
import { tempDir } from '../helpers/data-folders.ts';
import { createProject } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { completeRun, startRun } from '../helpers/records.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { upload } from '../helpers/uploads.ts';

const RUNS = 40;
const STEPS = 20;
const SHOTS = 3;

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
    server = await startTestServer('sqlite');
  });
  after(() => server.close());

  test('after a project of 40 runs × 20 steps and 120 screenshots is deleted and collected, the blob folder and the database are back to their size', async () => {
    const ctx = server.app.attest;
    // The blob store's folders: blobs/aa/bb/<sha256>, and tmp/ for uploads in progress.
    const blobFolders = ['blobs', 'tmp'].map((name) => path.join(server.dataDir, name));
    const blobsSize = () => blobFolders.reduce((sum, folder) => sum + allocated(folder), 0);
    const dbFile = path.join(server.dataDir, 'attest.db');
    const databaseSize = () => allocated(dbFile) + allocated(`${dbFile}-wal`);
    const project = await createProject(server);
    // Measured as collection leaves it: freed pages returned, the WAL checkpointed and truncated.
    await reclaimSpace(ctx);
    const blobsBefore = blobsSize();
    const databaseBefore = databaseSize();

    const client = server.admin.client;
    for (let r = 0; r < RUNS; r++) {
      const run = await startRun(client, project.id, `run-${r}`);
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
      for (let i = 0; i < SHOTS; i++) {
        const png = await randomPng(100, 100); // Random pixels: about 30 KB, unlike any other.
        const res = await upload(
          server.url,
          server.admin.key,
          project.id,
          { testRunId: run.id, stepId: reply.steps[i]?.id, kind: 'screenshot', name: `shot-${i}.png` },
          { file: { bytes: png, type: 'image/png' } },
        );
        assert.equal(res.status, 201, JSON.stringify(res.body));
      }
      await completeRun(client, run.id);
    }
    // Checkpointed, so the rows are in attest.db itself (as SQLite's own checkpoints put them in time),
    // not only in the write-ahead log that any truncating checkpoint would empty.
    await reclaimSpace(ctx);
    const blobsFull = blobsSize();
    const databaseFull = databaseSize();
    assert.ok(blobsFull > blobsBefore + RUNS * SHOTS * 30_000, `the screenshots were stored (${kib(blobsFull)})`);

    await client.call(v1.projects.deleteProject, { params: { projectId: project.id } });
    // Grace 0, by a clock a second past the wall clock the blob files were written by.
    const gc = await collectGarbage({ ...ctx, clock: () => new Date(Date.now() + 1000) }, { graceMs: 0 });
    assert.ok(gc.deleted >= RUNS * SHOTS, `every screenshot's blob went (${gc.deleted})`);
    assert.ok(gc.reclaimed && gc.reclaimed.freedPages > 0, 'the database returned pages');
    assert.equal(gc.reclaimed?.walTruncated, true);

    const blobsAfter = blobsSize();
    const databaseAfter = databaseSize();
    const sizes = {
      blobs: `${kib(blobsBefore)} → ${kib(blobsFull)} → ${kib(blobsAfter)}`,
      database: `${kib(databaseBefore)} → ${kib(databaseFull)} → ${kib(databaseAfter)}`,
    };
    console.log(`space (before → full → after): ${JSON.stringify(sizes)}`);
    assert.ok(Math.abs(blobsAfter - blobsBefore) <= blobsBefore * 0.01, `blob folder back within 1%: ${sizes.blobs}`);
    assert.deepEqual(fs.readdirSync(path.join(server.dataDir, 'blobs')), [], 'no empty shard folder is left');
    assert.ok(databaseAfter <= databaseBefore * 1.1, `database back within 10%: ${sizes.database}`);

    const verify = await verifyStorage(ctx);
    assert.deepEqual(verify.integrity, []);
    assert.deepEqual(verify.missingBlobs, []);
    assert.deepEqual(verify.badBlobs, []);
    assert.equal(verify.orphanBlobs, 0);
    // And the instance still works: a new screenshot lands in a shard folder made afresh.
    const again = await createProject(server);
    const run = await startRun(client, again.id);
    const res = await upload(
      server.url,
      server.admin.key,
      again.id,
      { testRunId: run.id, kind: 'screenshot', name: 'again.png' },
      { file: { bytes: await randomPng(), type: 'image/png' } },
    );
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual((await verifyStorage(ctx)).missingBlobs, []);
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
