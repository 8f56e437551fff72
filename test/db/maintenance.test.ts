import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { backupEmbedded, restoreEmbedded } from '../../src/server/backup/backup.ts';
import { collectGarbage, verifyStorage } from '../../src/server/services/operations/maintenance.ts';
import { blobFile, sha256 } from '../helpers/blob-files.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { addSteps, startRun } from '../helpers/records.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { adminUpload } from '../helpers/uploads.ts';
import { delay, waitFor } from '../helpers/wait.ts';

async function uploadScreenshots(server: TestServer, count: number) {
  const project = await createProject(server);
  const run = await startRun(server.admin.client, project.id);
  const steps = await addSteps(server.admin.client, run.id, ['s1']);
  const shas: string[] = [];
  for (let i = 0; i < count; i++) {
    const png = await randomPng();
    const res = await adminUpload(
      server,
      project.id,
      { testRunId: run.id, stepId: steps.s1, kind: 'screenshot', name: `shot-${i}.png` },
      { bytes: png, type: 'image/png' },
    );
    assert.equal(res.status, 201, JSON.stringify(res.body));
    shas.push(sha256(png));
  }
  return { project, run, shas };
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] storage maintenance`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    describe('collectGarbage', () => {
      test('deletes only unreferenced blobs older than the grace period, and a dry run deletes nothing', async () => {
        const { shas } = await uploadScreenshots(server, 2);
        const ctx = server.app.attest;
        const old = await ctx.blobs.put([Buffer.from(`orphan-old-${Math.random()}`)]);
        const fresh = await ctx.blobs.put([Buffer.from(`orphan-fresh-${Math.random()}`)]);
        // Planted orphans: no row will reference them.
        old.release();
        fresh.release();
        const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
        fs.utimesSync(blobFile(server.dataDir, old.sha256), twoHoursAgo, twoHoursAgo);

        const dry = await collectGarbage({ ...ctx, clock: () => new Date() }, { graceMs: 3600_000, dryRun: true });
        assert.ok(dry.deleted >= 1);
        assert.ok(fs.existsSync(blobFile(server.dataDir, old.sha256)), 'a dry run must not delete');

        const report = await collectGarbage({ ...ctx, clock: () => new Date() }, { graceMs: 3600_000 });
        assert.ok(report.deleted >= 1);
        assert.ok(!fs.existsSync(blobFile(server.dataDir, old.sha256)), 'the old orphan is gone');
        assert.ok(fs.existsSync(blobFile(server.dataDir, fresh.sha256)), 'a fresh orphan may be an upload in flight: kept');
        for (const sha of shas) assert.ok(fs.existsSync(blobFile(server.dataDir, sha)), 'referenced blobs stay');
      });

      test('run as a periodic task, it stops once its lease is lost and deletes nothing more', async () => {
        const ctx = server.app.attest;
        const orphan = await ctx.blobs.put([Buffer.from(`orphan-leased-${Math.random()}`)]);
        orphan.release();
        const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
        fs.utimesSync(blobFile(server.dataDir, orphan.sha256), twoHoursAgo, twoHoursAgo);
        // The lease as the task runner hands it: here lost (another instance has the task, or this one stops).
        const lost = { stillHeld: () => false, signal: AbortSignal.abort() };
        const stopped = await collectGarbage({ ...ctx, clock: () => new Date() }, { graceMs: 3600_000, lease: lost });
        assert.equal(stopped.deleted, 0);
        assert.ok(fs.existsSync(blobFile(server.dataDir, orphan.sha256)), 'left to the next run');
        const held = { stillHeld: () => true, signal: new AbortController().signal };
        await collectGarbage({ ...ctx, clock: () => new Date() }, { graceMs: 3600_000, lease: held });
        assert.ok(!fs.existsSync(blobFile(server.dataDir, orphan.sha256)), 'collected by the next run');
      });
    });

    describe('collectGarbage under concurrent uploads (DUR-10)', () => {
      test('GC every 100 ms with no grace period never costs an acknowledged artifact its bytes', async (t) => {
        const ctx = server.app.attest;
        const project = await createProject(server);
        const run = await startRun(server.admin.client, project.id);
        // A few byte sequences are uploaded again and again while all their artifacts are deleted
        // now and then: each becomes an orphan that GC may judge just as an upload of the same
        // bytes finds it. The rest are new bytes, unreferenced until their row commits; some of
        // those are deleted at once, so GC always has true garbage to delete (the test is not
        // vacuous however fast uploads re-reference the pool's bytes).
        const pool = await Promise.all(Array.from({ length: 4 }, () => randomPng(24, 24)));
        const acknowledged = new Map<string, string>(); // artifact id → sha256
        let gcRuns = 0;
        let deletedByGc = 0;
        let uploads = 0;
        let stop = false;
        const gc = (async () => {
          while (!stop) {
            // Grace 0: only the holds protect an upload whose row is not committed yet.
            const report = await collectGarbage({ ...ctx, clock: () => new Date(Date.now() + 1000) }, { graceMs: 0 });
            gcRuns++;
            deletedByGc += report.deleted;
            // Deliberate: the pace under test is one collection every 100 ms.
            await delay(100);
          }
        })();
        const client = async (n: number) => {
          for (let i = 0; !stop; i++) {
            const bytes = i % 3 === 0 ? await randomPng(8, 8) : (pool[(n + i) % pool.length] as Buffer);
            const res = await adminUpload(
              server,
              project.id,
              { testRunId: run.id, kind: i % 2 === 0 ? 'screenshot' : 'file', name: `c${n}-${i}.png` },
              { bytes, type: 'image/png' },
            );
            assert.equal(res.status, 201, JSON.stringify(res.body));
            uploads++;
            // Enough uploads made: the clients slow down, so a loaded machine's GC (which reads every
            // blob each time) still gets its collections in while they go on, instead of falling ever
            // further behind a store that keeps growing.
            if (uploads >= 120) await delay(50);
            acknowledged.set(String(res.body.id), sha256(bytes));
            if (i % 2 === 1 || i % 6 === 0) {
              // Delete every artifact of one of the pool's byte sequences, leaving its blob to GC
              // while the other clients keep uploading the same bytes; and now and then the new
              // bytes just uploaded, whose blob then is garbage for good.
              const target = i % 6 === 0 ? sha256(bytes) : sha256(pool[(n + i) % pool.length] as Buffer);
              const victims = [...acknowledged].filter(([, sha]) => sha === target).map(([id]) => id);
              for (const victim of victims) {
                acknowledged.delete(victim);
                const gone = await fetch(`${server.url}/api/v1/artifact/artifacts/${victim}`, {
                  method: 'DELETE',
                  headers: { accept: 'application/json', 'service.api-token': server.admin.key },
                });
                assert.ok([204, 404].includes(gone.status), String(gone.status));
              }
            }
          }
        };
        const clients = Promise.all(Array.from({ length: 8 }, (_, n) => client(n)));
        // Until GC has raced the uploads long enough (about what 4 s gave on an idle machine): several
        // collections while 8 clients kept uploading. A client that fails ends the wait at once.
        const raced = () => gcRuns >= 6 && uploads >= 120;
        try {
          await Promise.race([
            waitFor(raced, {
              timeoutMs: 60_000,
              intervalMs: 50,
              message: () => `GC runs ${gcRuns} (want 6) during uploads ${uploads} (want 120)`,
            }),
            clients,
          ]);
        } finally {
          // Also when the wait fails: uploads and collections left running would race the next tests.
          stop = true;
          await Promise.allSettled([clients, gc]);
        }
        await clients;
        await gc;
        t.diagnostic(`GC ran ${gcRuns} times and deleted ${deletedByGc} blobs during ${uploads} uploads`);
        assert.ok(gcRuns >= 3 && deletedByGc > 0, `GC ran ${gcRuns} times and deleted ${deletedByGc} blobs`);
        for (const [artifactId, sha] of acknowledged) {
          const res = await fetch(`${server.url}/api/v1/artifact/artifacts/${artifactId}/content`, {
            headers: { 'service.api-token': server.admin.key },
          });
          assert.equal(res.status, 200, `artifact ${artifactId} lost its bytes`);
          assert.equal(sha256(new Uint8Array(await res.arrayBuffer())), sha);
        }
        const verify = await verifyStorage(ctx);
        assert.deepEqual(verify.missingBlobs, []);
      });
    });

    describe('collectGarbage after deletions', () => {
      test('removes the image rows and blobs of deleted artifacts, and keeps images still in use', async () => {
        const { project, run, shas } = await uploadScreenshots(server, 2);
        const listed = await server.admin.client.call(v1.artifacts.listArtifacts, {
          params: { projectId: project.id },
          query: { testRunId: run.id },
        });
        const [gone, kept] = listed.items as unknown as [{ id: string; sha256: string }, { id: string; sha256: string }];
        await server.admin.client.call(v1.artifacts.deleteArtifact, { params: { artifactId: gone.id } });
        const ctx = server.app.attest;
        const later = () => new Date(Date.now() + 2 * 3600_000);
        const report = await collectGarbage({ ...ctx, clock: later }, { graceMs: 3600_000 });
        assert.ok(report.unusedImages >= 1);
        assert.ok(!fs.existsSync(blobFile(server.dataDir, gone.sha256)), "a deleted screenshot's bytes are gone");
        assert.ok(fs.existsSync(blobFile(server.dataDir, kept.sha256)));
        assert.ok(shas.includes(gone.sha256));
        const image = await ctx.db.selectFrom('images').select('id').where('sha256', '=', gone.sha256).executeTakeFirst();
        assert.equal(image, undefined);
      });
    });

    describe('verifyStorage', () => {
      test('reports a sound store, then a damaged and a missing blob', async () => {
        const { shas } = await uploadScreenshots(server, 2);
        const ctx = server.app.attest;
        const sound = await verifyStorage(ctx);
        assert.deepEqual(sound.integrity, []);
        assert.deepEqual(sound.missingBlobs, []);
        assert.deepEqual(sound.badBlobs, []);

        const [damaged, missing] = shas as [string, string];
        const file = blobFile(server.dataDir, damaged);
        const bytes = fs.readFileSync(file);
        bytes.writeUInt8((bytes.at(-1) ?? 0) ^ 0xff, bytes.length - 1);
        fs.chmodSync(file, 0o600);
        fs.writeFileSync(file, bytes);
        fs.unlinkSync(blobFile(server.dataDir, missing));
        const report = await verifyStorage(ctx);
        assert.ok(report.badBlobs.includes(damaged));
        assert.ok(report.missingBlobs.includes(missing));
      });

      // SQLite's statements run synchronously in this process, so no write can land between a
      // verify's reads there; PostgreSQL's reads wait on the network while other requests commit.
      const concurrent = dialect === 'postgres' ? false : 'no write can interleave with a synchronous SQLite read';
      test('reads the counters and the rows they count on one snapshot: sound under live writes', { skip: concurrent }, async () => {
        const ctx = server.app.attest;
        const project = await createProject(server, 'Live writes');
        let stop = false;
        let written = 0;
        // Runs and artifacts committed all the while: each moves a project's and a run's counters.
        const writer = async () => {
          while (!stop) {
            const run = await startRun(server.admin.client, project.id);
            const res = await adminUpload(
              server,
              project.id,
              { testRunId: run.id, kind: 'file', name: 'log.txt' },
              { bytes: Buffer.from(`line ${written}\n`), type: 'text/plain' },
            );
            assert.equal(res.status, 201, JSON.stringify(res.body));
            written++;
          }
        };
        // The test before this one left a blob missing on purpose: only what changes under the writes counts.
        const baseline = await verifyStorage(ctx, { hashContents: false });
        const writers = [writer(), writer()];
        try {
          await waitFor(() => written >= 3);
          let overlapped = 0;
          for (let i = 0; i < 40; i++) {
            const before = written;
            const report = await verifyStorage(ctx, { hashContents: false });
            assert.deepEqual(report.usageMismatches, baseline.usageMismatches, `verify ${i + 1}: usage counters`);
            assert.deepEqual(report.runCountMismatches, baseline.runCountMismatches, `verify ${i + 1}: run artifact counts`);
            assert.deepEqual(report.missingBlobs, baseline.missingBlobs, `verify ${i + 1}: blobs`);
            if (written > before) overlapped++;
          }
          // Not vacuous: writes were committed while verifies read.
          assert.ok(overlapped >= 5, `${overlapped} of 40 verifies overlapped a write`);
        } finally {
          stop = true;
          await Promise.all(writers);
        }
      });
    });
  });
}

describe('[sqlite] backup and restore', () => {
  test('an online backup restores into a fresh folder that serves every screenshot byte-identically', async () => {
    const server = await startTestServer('sqlite');
    const target = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-backup-'));
    const restored = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-restored-'));
    try {
      const { project, run, shas } = await uploadScreenshots(server, 3);
      // The server keeps running (and holding its lock) while the backup reads.
      const report = await backupEmbedded(server.dataDir, path.join(target, 'b'));
      assert.equal(report.blobs, 3);
      await restoreEmbedded(path.join(target, 'b'), path.join(restored, 'data'));
      await server.close();

      const again = await startTestServer('sqlite', { ATTEST_DATA_DIR: path.join(restored, 'data') });
      try {
        const client = again.client(server.admin.key);
        const listed = await client.call(v1.artifacts.listArtifacts, { params: { projectId: project.id }, query: { testRunId: run.id } });
        assert.equal(listed.items.length, 3);
        const details = await client.call(v1.artifacts.getArtifacts, { query: { ids: listed.items.map((a) => a.id).join(',') } });
        const downloaded: string[] = [];
        for (const artifact of details.items) {
          for (const image of artifact.images) {
            const response = await client.fetchRaw('GET', `/images/${image.id}`);
            assert.equal(response.status, 200);
            downloaded.push(sha256(new Uint8Array(await response.arrayBuffer())));
          }
        }
        assert.deepEqual(downloaded.sort(), [...shas].sort());
        const verify = await verifyStorage(again.app.attest);
        assert.deepEqual([verify.integrity, verify.missingBlobs, verify.badBlobs], [[], [], []]);
      } finally {
        await again.close();
      }
    } finally {
      fs.rmSync(target, { recursive: true, force: true });
      fs.rmSync(restored, { recursive: true, force: true });
    }
  });

  test('refuses to restore into a folder that is not empty', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-restore-'));
    fs.writeFileSync(path.join(dir, 'attest.db'), 'x');
    fs.mkdirSync(path.join(dir, 'data'));
    fs.writeFileSync(path.join(dir, 'data', 'keep'), 'x');
    fs.writeFileSync(path.join(dir, 'attest-backup.json'), '{}');
    await assert.rejects(restoreEmbedded(dir, path.join(dir, 'data')), /not empty/);
  });

  test('refuses an interrupted backup; a failed restore leaves the data folder as it was; a crashed one blocks start-up', async () => {
    const server = await startTestServer('sqlite');
    const backup = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-backup-'));
    const restored = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'attest-restored-')), 'data');
    try {
      const { shas } = await uploadScreenshots(server, 2);
      await backupEmbedded(server.dataDir, path.join(backup, 'b'));
      await server.close();
      const manifest = path.join(backup, 'b', 'attest-backup.json');
      const saved = fs.readFileSync(manifest);
      fs.unlinkSync(manifest); // as if the backup had been cut off before its last step
      await assert.rejects(restoreEmbedded(path.join(backup, 'b'), restored), /incomplete backup/);
      fs.writeFileSync(manifest, saved);
      const damaged = blobFile(path.join(backup, 'b'), shas[1] as string);
      const removed = fs.readFileSync(damaged);
      fs.unlinkSync(damaged); // a damaged backup
      fs.mkdirSync(restored); // an empty folder, as a mounted volume would be
      await assert.rejects(
        restoreEmbedded(path.join(backup, 'b'), restored),
        /is damaged: blob [0-9a-f]{64}, which its database references, is missing/,
      );
      assert.deepEqual(fs.readdirSync(restored), [], 'the data folder is as empty as before');
      // A restore cut off by a crash leaves its staging folder: the server refuses to start there.
      fs.mkdirSync(path.join(restored, '.restoring'));
      await assert.rejects(startTestServer('sqlite', { ATTEST_DATA_DIR: restored }), /restore into .* was interrupted/);
      // A complete backup restores over that leftover.
      fs.writeFileSync(damaged, removed);
      await restoreEmbedded(path.join(backup, 'b'), restored);
      assert.deepEqual(fs.readdirSync(restored).sort(), ['attest.db', 'blobs']);
    } finally {
      fs.rmSync(backup, { recursive: true, force: true });
      fs.rmSync(path.dirname(restored), { recursive: true, force: true });
    }
  });
});
