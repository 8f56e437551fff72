import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { sha256 } from '../helpers/blob-files.ts';
import { attest } from '../helpers/cli.ts';
import { createProject } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { startRun } from '../helpers/records.ts';
import { startS3, tamperWithBlob } from '../helpers/s3.ts';
import { startTestServer } from '../helpers/server.ts';
import { adminUpload } from '../helpers/uploads.ts';

// DUR-12 with blobs in a bucket (SCALE-1): attest backup downloads the objects the snapshot
// references into the backup, attest restore uploads them into the bucket it is configured with,
// and attest verify re-hashes the objects there; a PostgreSQL instance is told precisely how to
// back itself up instead.

const s3 = await startS3();
after(() => s3.close());

/** A SQLite instance in a temp folder with its blobs in a new bucket, holding `shots` as screenshots of one run. */
async function instanceWithShots(shots: Buffer[]) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-s3-cli-'));
  const env = { ATTEST_DATA_DIR: path.join(dir, 'data'), ...s3.env(await s3.createBucket(), 'attest') };
  const server = await startTestServer('sqlite', env);
  const project = await createProject(server);
  const run = await startRun(server.admin.client, project.id);
  for (const png of shots) {
    const res = await adminUpload(server, project.id, { testRunId: run.id, kind: 'screenshot', name: 'shot.png' }, { bytes: png });
    assert.equal(res.status, 201);
  }
  return { dir, env, server };
}

describe('attest backup / restore / verify with blobs in a bucket', () => {
  test('a SQLite instance on a bucket backs up its blobs into the backup, restores them into another bucket, and verifies sound', async () => {
    const shots = [await randomPng(), await randomPng(30, 20)];
    const { dir, env, server } = await instanceWithShots(shots);

    const backupDir = path.join(dir, 'backup');
    const backup = await attest(['backup', backupDir], env);
    assert.equal(backup.code, 0, backup.output);
    assert.match(backup.stdout, /and 2 blobs downloaded from s3:\/\/attest-[0-9a-f]+\/attest/);
    for (const png of shots) {
      const sha = sha256(png);
      assert.deepEqual(fs.readFileSync(path.join(backupDir, 'blobs', sha.slice(0, 2), sha.slice(2, 4), sha)), png);
    }
    await server.close();

    const otherBucket = await s3.createBucket();
    const restoredEnv = { ATTEST_DATA_DIR: path.join(dir, 'restored'), ...s3.env(otherBucket, 'attest') };
    const restored = await attest(['restore', backupDir, '--json'], restoredEnv);
    assert.equal(restored.code, 0, restored.output);
    assert.equal(JSON.parse(restored.stdout).blobs, 2);
    const keys = await s3.keys(otherBucket, 'attest/blobs/');
    assert.deepEqual(keys.map((key) => key.split('/').at(-1)).sort(), shots.map(sha256).sort());

    const verified = await attest(['verify', '--json'], restoredEnv);
    assert.equal(verified.code, 0, verified.output);
    const report = JSON.parse(verified.stdout);
    assert.deepEqual([report.sound, report.missingBlobs, report.badBlobs, report.orphanBlobs], [true, [], [], 0]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a backup fails loudly when an object in the bucket holds another size than its rows record', async () => {
    const png = await randomPng();
    const { dir, env, server } = await instanceWithShots([png]);
    await tamperWithBlob(server, sha256(png), png.subarray(0, png.length - 10));
    await server.close();

    const backup = await attest(['backup', path.join(dir, 'backup')], env);
    assert.notEqual(backup.code, 0, backup.output);
    assert.match(
      backup.output,
      new RegExp(`blob ${sha256(png)} .*\\(${png.length - 10} bytes downloaded where its database records ${png.length}\\)`),
    );
    assert.equal(fs.existsSync(path.join(dir, 'backup', 'attest-backup.json')), false, 'no manifest: restore refuses the folder');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('attest verify against a bucket that does not exist reports the store failing, not missing blobs', async () => {
    const { dir, env, server } = await instanceWithShots([await randomPng()]);
    await server.close();

    const verified = await attest(['verify', '--json'], { ...env, ...s3.env('attest-no-such-bucket', 'attest') });
    assert.notEqual(verified.code, 0, verified.output);
    assert.match(verified.output, /blob store: S3 HeadBucket failed/);
    assert.doesNotMatch(verified.output, /missingBlobs/);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a PostgreSQL instance is told how to back up its database and its bucket instead', async () => {
    const backup = await attest(['backup', path.join(os.tmpdir(), 'attest-never-written')], {
      ATTEST_DATABASE_URL: 'postgres://127.0.0.1:1/attest',
      ...s3.env('attest-any', 'attest'),
    });
    assert.notEqual(backup.code, 0);
    assert.match(backup.output, /pg_dump/);
    assert.match(backup.output, /versioning and replication of the bucket/);
    assert.match(backup.output, /docs\/storage\.md/);
  });
});
