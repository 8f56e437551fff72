import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { AttestClient, v1 } from '../../src/client/index.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { sha256 } from '../helpers/blob-files.ts';
import { attest } from '../helpers/cli.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { NO_RETRY } from '../helpers/http.ts';
import { documentedUpstreamBlocks, nginxAvailable, type RunningNginx, startNginxWith } from '../helpers/nginx.ts';
import { randomPng } from '../helpers/png.ts';
import { completeRun, startRun } from '../helpers/records.ts';
import { startS3, type TestS3 } from '../helpers/s3.ts';
import { createStorage, type ServerStorage, type SpawnedServer, spawnServer } from '../helpers/spawned-server.ts';
import { upload } from '../helpers/uploads.ts';
import { waitFor } from '../helpers/wait.ts';

// The scaled topology of docs/deployment.md, as it runs in production: two server processes
// (`dist/server/main.js`) on one PostgreSQL database and one S3-compatible server (s3rver), with
// nginx in front configured as the document says. Issue 29's first must-hold: what one instance
// writes the other reads byte for byte; a key revoked on one is refused by the other within one
// second (SCALE-3); identical screenshots sent through both are one object (SCALE-2); deleting the
// run and collecting garbage removes its objects; readiness names the store when it is down (SCALE-7).

const missing = [!DIALECTS.includes('postgres') && 'PostgreSQL', !nginxAvailable() && 'nginx'].filter(Boolean);
if (missing.length > 0 && process.env.CI === 'true') {
  test('the scaled topology suite has PostgreSQL and nginx', () => assert.fail(`missing ${missing.join(', ')}`));
}
const skip = missing.length > 0 ? `needs ${missing.join(' and ')}` : false;
if (skip) process.stderr.write(`scaled topology: skipped, ${skip}\n`);

/** The blob keys of the bucket (`attest/blobs/aa/bb/<sha256>`), as digests. */
async function storedDigests(s3: TestS3, bucket: string): Promise<string[]> {
  return (await s3.keys(bucket, 'attest/blobs/')).map((key) => key.slice(key.lastIndexOf('/') + 1));
}

async function bytesOf(url: string, key: string): Promise<{ status: number; body: Buffer; etag: string | null }> {
  const answer = await fetch(url, { headers: { 'service.api-token': key } });
  return { status: answer.status, body: Buffer.from(await answer.arrayBuffer()), etag: answer.headers.get('etag') };
}

describe('[postgres] two instances, one database, one bucket, nginx in front', { skip }, () => {
  let s3: TestS3;
  let bucket: string;
  let storage: ServerStorage;
  let one: SpawnedServer;
  let two: SpawnedServer;
  let nginx: RunningNginx;
  const folders: string[] = [];
  let projectId: string;

  before(async () => {
    s3 = await startS3();
    bucket = await s3.createBucket();
    const folder = () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-scaled-'));
      folders.push(dir);
      return dir;
    };
    storage = await createStorage('postgres', folder(), generateKey('standard'));
    // Garbage collection is run by hand below (`attest gc`), with no grace period.
    // Request lines are logged (info), so the test sees which instance nginx sent a request to.
    const env = { ...s3.env(bucket, 'attest'), ATTEST_GC_INTERVAL_MINUTES: '0', ATTEST_LOG_LEVEL: 'info' };
    one = await spawnServer(storage, env);
    // The second instance: its own (empty) data folder, the same database and bucket.
    two = await spawnServer({ ...storage, dataDir: folder() }, env);
    nginx = await startNginxWith((port) => documentedUpstreamBlocks(port, [one.url, two.url]));
    projectId = (
      await one.admin.call(v1.projects.createProject, { body: { key: `S${randomBytes(3).toString('hex').toUpperCase()}`, name: 'Scaled' } })
    ).id;
  });

  after(async () => {
    await nginx?.stop();
    await Promise.all([one?.stop(), two?.stop()]);
    await storage?.drop();
    await s3?.close();
    for (const dir of folders) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a run and its screenshots written through one instance read byte-identical through the other and through nginx', async () => {
    const run = await startRun(one.admin, projectId, 'checkout');
    await one.admin.call(v1.results.appendResults, {
      params: { testRunId: run.id },
      body: { steps: [{ key: 'pay', title: 'Pay', status: 'failed', error: 'total differs' }] },
    });
    const shots = [await randomPng(40, 30), await randomPng(64, 48)];
    for (const [n, png] of shots.entries()) {
      const sent = await upload(
        one.url,
        storage.adminKey,
        projectId,
        { testRunId: run.id, kind: 'screenshot', name: `shot-${n}.png`, stepKey: 'pay' },
        { file: { bytes: png } },
      );
      assert.equal(sent.status, 201, JSON.stringify(sent.body));
    }
    await completeRun(one.admin, run.id, 'failed');

    const results = await two.admin.call(v1.results.getResults, { params: { testRunId: run.id } });
    assert.equal(results.steps[0]?.error, 'total differs');
    const listed = await two.admin.call(v1.artifacts.listArtifacts, { params: { projectId }, query: { testRunId: run.id } });
    const details = await two.admin.call(v1.artifacts.getArtifacts, { query: { ids: listed.items.map((a) => a.id).join(',') } });
    const images = details.items.flatMap((a) => a.images);
    assert.equal(images.length, shots.length);
    for (const base of [two.url, nginx.url]) {
      for (const image of images) {
        const read = await bytesOf(`${base}/api/v1/images/${image.id}`, storage.adminKey);
        assert.equal(read.status, 200);
        assert.ok(
          shots.some((png) => png.equals(read.body)),
          'the bytes sent',
        );
        assert.equal(sha256(read.body), image.sha256);
        const thumbnail = await bytesOf(`${base}/api/v1/images/${image.id}?thumbnail=true`, storage.adminKey);
        assert.equal(thumbnail.status, 200);
        assert.ok(thumbnail.body.length > 0);
      }
    }
  });

  test('a key revoked through one instance is refused by the other within one second', async () => {
    const email = `runner-${randomBytes(4).toString('hex')}@example.test`;
    await one.admin.call(v1.users.createUser, { body: { email, name: 'Runner', roles: ['tester'] } });
    const created = await one.admin.call(v1.users.createApiKey, { params: { email }, body: { name: 'ci' } });
    const onTwo = new AttestClient({ baseUrl: two.url, apiKey: created.key, retry: NO_RETRY });
    // Used on the second instance first, so it has the key's principal cached.
    await onTwo.call(v1.meta.getMe, {});
    await onTwo.call(v1.meta.getMe, {});
    await one.admin.call(v1.users.revokeApiKey, { params: { email, keyId: created.id } });
    const revokedAt = Date.now();
    let refusedAfter = -1;
    await waitFor(
      async () => {
        const answer = await fetch(`${two.url}/api/v1/me`, { headers: { 'service.api-token': created.key, accept: 'application/json' } });
        if (answer.status !== 401) return false;
        refusedAfter = Date.now() - revokedAt;
        return true;
      },
      { timeoutMs: 5000, intervalMs: 20, message: 'the second instance refusing the revoked key' },
    );
    assert.ok(refusedAfter < 1000, `refused after ${refusedAfter} ms`);
  });

  test('identical screenshots sent through both instances are one object; deleting the runs and collecting garbage removes it', async () => {
    const png = await randomPng(50, 50);
    const runs = [await startRun(one.admin, projectId, 'same bytes on one'), await startRun(two.admin, projectId, 'same bytes on two')];
    const sent = await Promise.all(
      [one, two].map((server, n) =>
        upload(
          server.url,
          storage.adminKey,
          projectId,
          { testRunId: runs[n]?.id, kind: 'screenshot', name: 'same.png' },
          { file: { bytes: png } },
        ),
      ),
    );
    for (const answer of sent) assert.equal(answer.status, 201, JSON.stringify(answer.body));
    const digest = sha256(png);
    assert.equal((await storedDigests(s3, bucket)).filter((d) => d === digest).length, 1);
    // A thumbnail is stored too, once asked for.
    const listed = await one.admin.call(v1.artifacts.listArtifacts, { params: { projectId }, query: { testRunId: runs[0]?.id as string } });
    const [artifact] = (await one.admin.call(v1.artifacts.getArtifacts, { query: { ids: listed.items[0]?.id as string } })).items;
    const image = artifact?.images[0];
    assert.ok(image);
    assert.equal((await bytesOf(`${two.url}/api/v1/images/${image.id}?thumbnail=true`, storage.adminKey)).status, 200);
    const before = await storedDigests(s3, bucket);

    await one.admin.call(v1.runs.deleteRun, { params: { testRunId: runs[0]?.id as string } });
    const gcEnv = { ATTEST_DATABASE_URL: storage.databaseUrl as string, ATTEST_DATA_DIR: storage.dataDir, ...s3.env(bucket, 'attest') };
    let gc = await attest(['gc', '--grace-minutes', '0', '--json'], gcEnv);
    assert.equal(gc.code, 0, gc.output);
    assert.ok((await storedDigests(s3, bucket)).includes(digest), 'still referenced by the other run');

    await two.admin.call(v1.runs.deleteRun, { params: { testRunId: runs[1]?.id as string } });
    gc = await attest(['gc', '--grace-minutes', '0', '--json'], gcEnv);
    assert.equal(gc.code, 0, gc.output);
    const after = await storedDigests(s3, bucket);
    assert.ok(!after.includes(digest), 'the screenshot is gone from the bucket');
    assert.ok(after.length < before.length - 1, 'its thumbnail too');
  });

  test('with the S3 server down both instances report not ready, naming the blob store, and ready again once it is back', async () => {
    await s3.stop();
    try {
      for (const server of [one, two]) {
        const answer = await fetch(`${server.url}/api/v1/health/ready`);
        assert.equal(answer.status, 503);
        assert.ok(answer.headers.get('retry-after'));
        assert.deepEqual(((await answer.json()) as { unreachable: string[] }).unreachable, ['blob store']);
      }
    } finally {
      await s3.start();
    }
    for (const server of [one, two]) {
      await waitFor(async () => (await fetch(`${server.url}/api/v1/health/ready`)).status === 200, { message: 'ready again' });
    }
  });

  test('nginx spreads requests over both instances and keeps serving when one stops', async () => {
    const reads = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(`${nginx.url}/api/v1/projects/${projectId}`, { headers: { 'service.api-token': storage.adminKey } }),
      ),
    );
    for (const read of reads) assert.equal(read.status, 200);
    const served = (server: SpawnedServer) => server.output.filter((line) => line.includes(`/api/v1/projects/${projectId}"`)).length;
    assert.ok(served(one) > 0 && served(two) > 0, `one served ${served(one)}, two served ${served(two)}`);
    await two.stop();
    for (let n = 0; n < 10; n++) {
      const read = await fetch(`${nginx.url}/api/v1/projects/${projectId}`, { headers: { 'service.api-token': storage.adminKey } });
      assert.equal(read.status, 200, nginx.errorLog());
    }
  });
});
