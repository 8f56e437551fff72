import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, mock, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { v1 } from '../../src/client/index.ts';
import { backupEmbedded, restoreEmbedded } from '../../src/server/backup/backup.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { verifyStorage } from '../../src/server/services/operations/maintenance.ts';
import { sha256 } from '../helpers/blob-files.ts';
import { randomPng } from '../helpers/png.ts';
import { startRun } from '../helpers/records.ts';
import { startTestServer } from '../helpers/server.ts';
import { createStorage, spawnServer } from '../helpers/spawned-server.ts';
import { upload } from '../helpers/uploads.ts';
import { waitFor } from '../helpers/wait.ts';

// DUR-12: an online backup taken while clients keep uploading restores into a fresh
// folder on which a server starts with invariants I1 (every referenced blob exists with its size
// and SHA-256) and I3 (database integrity) holding, and with every upload acknowledged before the
// backup started. The server is a separate process, as in production beside `attest backup`, so
// it keeps taking uploads while this process copies. SQLite only: PostgreSQL is backed up by pg_dump.

const CLIENTS = 6;
/** Uploads acknowledged per client before the backup starts, and after it ends. */
const LOAD_BEFORE = 4;
const LOAD_AFTER = 2;

const tempDirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
};
after(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

interface Acknowledged {
  id: string;
  sha256: string;
}

describe('[sqlite] backup under upload load (DUR-12)', () => {
  test('a backup taken while uploads run restores with I1 and I3, holding every upload acknowledged before it', async (t) => {
    const storage = await createStorage('sqlite', path.join(tempDir('attest-load-'), 'data'), generateKey('standard'));
    const server = await spawnServer(storage);
    const backupDir = path.join(tempDir('attest-backup-'), 'backup');
    const restoredDir = path.join(tempDir('attest-restored-'), 'data');
    const acknowledged: Acknowledged[] = [];
    let acknowledgedBeforeBackup: Acknowledged[] = [];
    const failures: string[] = [];
    let inFlight = 0;
    let stop = false;
    try {
      const project = await server.admin.call(v1.projects.createProject, {
        body: { key: `B${randomBytes(3).toString('hex').toUpperCase()}`, name: 'Backup load' },
      });
      const runs = await Promise.all(Array.from({ length: CLIENTS }, () => startRun(server.admin, project.id)));
      /** One reporter on its own run, uploading screenshots and logs back to back until told to stop. */
      const client = async (n: number, runId: string) => {
        for (let i = 0; !stop; i++) {
          const screenshot = i % 2 === 0;
          const bytes = screenshot ? await randomPng(64, 48) : randomBytes(16_384 + Math.floor(Math.random() * 65_536));
          inFlight++;
          try {
            const res = await upload(
              server.url,
              storage.adminKey,
              project.id,
              { testRunId: runId, kind: screenshot ? 'screenshot' : 'log', name: `c${n}-${i}.${screenshot ? 'png' : 'log'}` },
              { file: { bytes } },
            );
            if (res.status === 201) acknowledged.push({ id: String(res.body.id), sha256: sha256(bytes) });
            else failures.push(`${res.status} ${JSON.stringify(res.body)}`);
          } catch (error) {
            failures.push(String(error));
          } finally {
            inFlight--;
          }
        }
      };
      const load = Promise.all(runs.map((run, n) => client(n, run.id)));

      // The load runs a while before the backup starts (uploads acknowledged and more in flight),
      // and on after it ends (more acknowledged after it).
      const loaded = (count: number) => acknowledged.length >= count && inFlight > 0;
      await waitFor(() => loaded(CLIENTS * LOAD_BEFORE) || failures.length > 0, {
        timeoutMs: 60_000,
        message: () => `${CLIENTS * LOAD_BEFORE} uploads acknowledged (${acknowledged.length}) with more in flight`,
      });
      acknowledgedBeforeBackup = [...acknowledged];
      const inFlightAtStart = inFlight;
      const report = await backupEmbedded(storage.dataDir, backupDir);
      const duringBackup = acknowledged.length - acknowledgedBeforeBackup.length;
      const afterBackup = acknowledged.length + CLIENTS * LOAD_AFTER;
      await waitFor(() => acknowledged.length >= afterBackup || failures.length > 0, {
        timeoutMs: 60_000,
        message: () => `${afterBackup} uploads acknowledged (${acknowledged.length})`,
      });
      stop = true;
      await load;
      t.diagnostic(
        `acknowledged ${acknowledgedBeforeBackup.length} before the backup, ${duringBackup} during it, ${acknowledged.length} in all; ` +
          `${inFlightAtStart} in flight when it started; backup: ${report.blobs} blobs, ${report.bytes} bytes`,
      );
      assert.deepEqual(failures, [], 'every upload is acknowledged');
      assert.ok(acknowledgedBeforeBackup.length >= CLIENTS, 'uploads were acknowledged before the backup');
      assert.ok(inFlightAtStart > 0, 'uploads were in flight when the backup started');
      assert.ok(acknowledged.length > acknowledgedBeforeBackup.length + duringBackup, 'the server kept taking uploads after the backup');
      assert.ok(report.blobs >= acknowledgedBeforeBackup.length, 'the backup holds at least the blobs of the uploads before it');
    } finally {
      stop = true;
      await server.stop();
    }

    await restoreEmbedded(backupDir, restoredDir);
    const restored = await startTestServer('sqlite', { ATTEST_DATA_DIR: restoredDir });
    try {
      // I1 and I3 (with blob contents hashed).
      const verify = await verifyStorage(restored.app.attest);
      assert.deepEqual(verify.integrity, [], 'I3: integrity_check and foreign_key_check are clean');
      assert.deepEqual(verify.missingBlobs, [], 'I1: no referenced blob is missing');
      assert.deepEqual(verify.badBlobs, [], 'I1: every referenced blob has its size and SHA-256');

      // Every upload acknowledged before the backup started is there, with its content's digest
      // (which I1 above proved the stored blob has).
      const restoredSha = new Map<string, string>();
      const reader = restored.client(storage.adminKey);
      for (let i = 0; i < acknowledgedBeforeBackup.length; i += 100) {
        const ids = acknowledgedBeforeBackup.slice(i, i + 100).map((a) => a.id);
        const details = await reader.call(v1.artifacts.getArtifacts, { query: { ids: ids.join(',') } });
        for (const item of details.items) restoredSha.set(item.id, item.sha256);
      }
      const lost = acknowledgedBeforeBackup.filter((a) => restoredSha.get(a.id) !== a.sha256);
      assert.deepEqual(lost, [], 'every upload acknowledged before the backup started is restored');
      // Uploads after it may or may not be in it; nothing else is.
      assert.ok(verify.artifactsChecked <= acknowledged.length, 'the backup holds no artifact that was not uploaded');
    } finally {
      await restored.close();
    }
  });

  test('finishes while the server keeps writing to a database larger than one backup step', { timeout: 30_000 }, async () => {
    // SQLite restarts an online backup whenever another connection writes between two of its
    // steps: copied in small steps, a database of thousands of pages under steady writes is never
    // backed up. Here the server's own connection writes every 2 ms throughout.
    const server = await startTestServer('sqlite');
    const backupDir = path.join(tempDir('attest-backup-'), 'backup');
    const db = server.app.attest.db;
    try {
      await sql`CREATE TABLE ballast (bytes BLOB)`.execute(db);
      await sql`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000)
        INSERT INTO ballast SELECT randomblob(200) FROM n`.execute(db);
      let writes = 0;
      const writer = setInterval(() => {
        void sql`INSERT INTO ballast VALUES (randomblob(200))`.execute(db).then(() => writes++);
      }, 2);
      try {
        // Writes are under way before the backup starts.
        await waitFor(() => writes >= 10, { intervalMs: 5, message: () => `10 writes under way (${writes} so far)` });
        await backupEmbedded(server.dataDir, backupDir);
      } finally {
        clearInterval(writer);
      }
      const copied = new SQLite(path.join(backupDir, 'attest.db'), { readonly: true });
      try {
        const { n } = copied.prepare('SELECT count(*) AS n FROM ballast').get() as { n: number };
        assert.ok(n >= 40_010, `the backup holds the ballast and the writes before it (${n} rows)`);
        assert.equal(copied.pragma('integrity_check', { simple: true }), 'ok');
      } finally {
        copied.close();
      }
    } finally {
      await server.close();
    }
  });

  test('backup and restore fsync every file they write and every folder that gained an entry', async () => {
    const server = await startTestServer('sqlite');
    const backupDir = path.join(tempDir('attest-backup-'), 'nested', 'backup');
    const restoredDir = path.join(tempDir('attest-restored-'), 'data');
    try {
      const project = await server.admin.client.call(v1.projects.createProject, {
        body: { key: `F${randomBytes(3).toString('hex').toUpperCase()}`, name: 'Fsync' },
      });
      const run = await startRun(server.admin.client, project.id);
      for (const [kind, bytes] of [
        ['screenshot', await randomPng()],
        ['log', randomBytes(1000)],
      ] as const) {
        const res = await upload(server.url, server.admin.key, project.id, { testRunId: run.id, kind, name: kind }, { file: { bytes } });
        assert.equal(res.status, 201, JSON.stringify(res.body));
      }

      // Which paths were fsynced: fsync takes a descriptor, so remember what each was opened on.
      const openSync = fs.openSync;
      const opened = new Map<number, string>();
      const synced = new Set<string>();
      mock.method(fs, 'openSync', (...args: Parameters<typeof fs.openSync>) => {
        const fd = openSync(...args);
        opened.set(fd, path.resolve(String(args[0])));
        return fd;
      });
      const fsyncSync = fs.fsyncSync;
      mock.method(fs, 'fsyncSync', (fd: number) => {
        fsyncSync(fd);
        synced.add(opened.get(fd) ?? `fd ${fd}`);
      });
      const expectDurable = (root: string, label: string) => {
        const entries = (fs.readdirSync(root, { recursive: true }) as string[]).map((e) => path.join(root, e));
        // Every file and folder in it, the root, and the root's parent (the root is new in it).
        for (const entry of [...entries, root, path.dirname(root)]) assert.ok(synced.has(entry), `${label}: ${entry} was not fsynced`);
        assert.ok(entries.some((e) => e.endsWith(`${path.sep}attest.db`)));
        assert.ok(entries.filter((e) => fs.statSync(e).isFile()).length >= 3, `${label}: the database and the blobs`);
      };
      try {
        await backupEmbedded(server.dataDir, backupDir);
        expectDurable(backupDir, 'backup');
        assert.ok(synced.has(path.dirname(path.dirname(backupDir))), 'the parent of the first folder the backup created');
        synced.clear();
        await restoreEmbedded(backupDir, restoredDir);
        // The restore writes into a staging sibling and renames it into place once durable: what it
        // fsynced under the staging name is fsynced under the final one.
        const staging = path.join(path.resolve(restoredDir), '.restoring');
        for (const entry of [...synced]) if (entry.startsWith(staging)) synced.add(path.resolve(restoredDir) + entry.slice(staging.length));
        expectDurable(restoredDir, 'restore');
      } finally {
        mock.restoreAll();
      }
    } finally {
      await server.close();
    }
  });
});
