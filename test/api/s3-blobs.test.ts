import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { collectGarbage, verifyStorage } from '../../src/server/services/operations/maintenance.ts';
import { sha256 } from '../helpers/blob-files.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { addSteps, startRun } from '../helpers/records.ts';
import { startS3 } from '../helpers/s3.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { adminUpload } from '../helpers/uploads.ts';
import { waitFor } from '../helpers/wait.ts';

// SCALE-1: with ATTEST_BLOB_URL=s3://… the API keeps its bytes in the bucket and behaves as on disk
// (ranges, ETag, thumbnails, one object for identical bytes, garbage collection), and while the
// store is down it answers 503 with Retry-After: never a 500, never an upload acknowledged that
// was not stored.

const s3 = await startS3();
after(() => s3.close());

for (const dialect of DIALECTS) {
  describe(`[${dialect}] blobs in an S3-compatible bucket (SCALE-1)`, () => {
    let server: TestServer;
    let bucket: string;
    let projectId: string;
    let runId: string;
    let stepId: string;
    before(async () => {
      bucket = await s3.createBucket();
      // Quick failures while the store is down: two attempts of at most a second.
      server = await startTestServer(dialect, { ...s3.env(bucket, 'attest'), ATTEST_S3_TIMEOUT_MS: '1000', ATTEST_S3_MAX_ATTEMPTS: '2' });
      projectId = (await createProject(server)).id;
      runId = (await startRun(server.admin.client, projectId)).id;
      stepId = (await addSteps(server.admin.client, runId, ['s1'])).s1 as string;
    });
    after(() => server.close());

    const get = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/api/v1${path}`, { headers: { accept: 'application/json', 'service.api-token': server.admin.key, ...headers } });
    const blobKeys = async () => (await s3.keys(bucket, 'attest/blobs/')).map((key) => key.split('/').at(-1));

    async function uploadShot(png: Buffer, name = 'shot.png') {
      const answer = await adminUpload(
        server,
        projectId,
        { testRunId: runId, stepId, kind: 'screenshot', name },
        { bytes: png, type: 'image/png' },
      );
      return answer;
    }

    async function imageIdOf(artifactId: string): Promise<string> {
      const details = await server.admin.client.call(v1.artifacts.getArtifacts, { query: { ids: artifactId } });
      return String(details.items[0]?.images[0]?.id);
    }

    test('screenshots and artifacts read back byte-identical, by range, with ETag and 304, and as thumbnails', async () => {
      const png = await randomPng(64, 48);
      const shot = await uploadShot(png);
      assert.equal(shot.status, 201, JSON.stringify(shot.body));
      const log = randomBytes(7 * 1024 * 1024); // past the store's buffering: a multipart upload
      const file = await adminUpload(
        server,
        projectId,
        { testRunId: runId, kind: 'log', name: 'device.log' },
        { bytes: log, type: 'text/plain' },
      );
      assert.equal(file.status, 201, JSON.stringify(file.body));
      assert.deepEqual((await blobKeys()).sort(), [sha256(png), sha256(log)].sort(), 'both are objects in the bucket');

      const imageId = await imageIdOf(String(shot.body.id));
      const image = await get(`/images/${imageId}`);
      assert.equal(image.status, 200);
      assert.equal(image.headers.get('content-type'), 'image/png');
      assert.deepEqual(Buffer.from(await image.arrayBuffer()), png);
      const etag = image.headers.get('etag') ?? '';
      assert.equal(etag, `"${sha256(png)}"`);
      assert.equal((await get(`/images/${imageId}`, { 'if-none-match': etag })).status, 304);

      const content = `/artifact/artifacts/${file.body.id}/content`;
      const whole = await get(content);
      assert.equal(whole.status, 200);
      assert.deepEqual(Buffer.from(await whole.arrayBuffer()), log);
      for (const [range, start, end] of [
        ['bytes=0-0', 0, 0],
        ['bytes=5242870-5242890', 5242870, 5242890],
        ['bytes=-100', log.length - 100, log.length - 1],
      ] as const) {
        const part = await get(content, { range });
        assert.equal(part.status, 206, range);
        assert.equal(part.headers.get('content-range'), `bytes ${start}-${end}/${log.length}`);
        assert.deepEqual(Buffer.from(await part.arrayBuffer()), log.subarray(start, end + 1), range);
      }
      assert.equal((await get(content, { range: `bytes=${log.length}-` })).status, 416);

      const thumbnail = await get(`/images/${imageId}?thumbnail=true`);
      assert.equal(thumbnail.status, 200);
      assert.equal(thumbnail.headers.get('x-attest-thumbnail'), null, 'a real thumbnail, not the original instead');
      const thumbnailBytes = Buffer.from(await thumbnail.arrayBuffer());
      assert.ok((await blobKeys()).includes(sha256(thumbnailBytes)), 'the thumbnail is stored in the bucket too');
    });

    test('identical uploads are one object in the bucket', async () => {
      const png = await randomPng(20, 20);
      for (const name of ['a.png', 'b.png', 'c.png']) assert.equal((await uploadShot(png, name)).status, 201);
      assert.equal((await blobKeys()).filter((key) => key === sha256(png)).length, 1);
    });

    test('deleting the run and collecting garbage removes its objects from the bucket; verify finds the rest sound', async () => {
      const run = await startRun(server.admin.client, projectId);
      const png = await randomPng(30, 10);
      const answer = await adminUpload(
        server,
        projectId,
        { testRunId: run.id, kind: 'screenshot', name: 'gone.png' },
        { bytes: png, type: 'image/png' },
      );
      assert.equal(answer.status, 201);
      assert.ok((await blobKeys()).includes(sha256(png)));
      await server.admin.client.call(v1.runs.deleteRun, { params: { testRunId: run.id } });
      const ctx = server.app.attest;
      const report = await collectGarbage({ ...ctx, clock: () => new Date(Date.now() + 2 * 3600_000) }, { graceMs: 3600_000 });
      assert.ok(report.deleted >= 1, JSON.stringify(report));
      assert.ok(!(await blobKeys()).includes(sha256(png)), 'the object is gone from the bucket');
      const verified = await verifyStorage(ctx);
      assert.deepEqual([verified.missingBlobs, verified.badBlobs, verified.integrity], [[], [], []]);
      assert.ok(verified.artifactsChecked > 0);
    });

    test('the store stopped while uploads run: 503 with Retry-After, nothing acknowledged is missing, uploads succeed once it is back; reads while down are 503', async () => {
      const logArtifact = await adminUpload(
        server,
        projectId,
        { testRunId: runId, kind: 'log', name: 'before.log' },
        { bytes: randomBytes(2000), type: 'text/plain' },
      );
      assert.equal(logArtifact.status, 201);
      const shotBefore = await uploadShot(await randomPng(40, 40), 'before.png');
      const imageBefore = await imageIdOf(String(shotBefore.body.id));

      const acknowledged = new Map<string, Buffer>(); // artifact id → bytes
      const refusals: { status: number; retryAfter: string | null; code: unknown }[] = [];
      let stopped = false;
      // Each client uploads until the store goes, and twice more during the outage.
      const uploader = async (n: number) => {
        for (let i = 0, during = 0; during < 2; i++) {
          if (stopped) during++;
          const png = await randomPng(12, 12);
          const answer = await uploadShot(png, `c${n}-${i}.png`);
          if (answer.status === 201) acknowledged.set(String(answer.body.id), png);
          else refusals.push({ status: answer.status, retryAfter: answer.headers.get('retry-after'), code: answer.body.code });
        }
      };
      const uploaders = [0, 1, 2].map((n) => uploader(n));
      // Some uploads through first; the others' are in flight when the store goes.
      await waitFor(() => acknowledged.size >= 6, { message: 'six uploads acknowledged before the outage' });
      await s3.stop();
      stopped = true;
      await Promise.all(uploaders);

      assert.ok(refusals.length > 0, 'uploads during the outage were refused');
      for (const refusal of refusals) {
        assert.deepEqual([refusal.status, refusal.code], [503, 'UNAVAILABLE'], JSON.stringify(refusal));
        assert.ok(Number(refusal.retryAfter) > 0, 'with Retry-After');
      }
      const down = await get(`/artifact/artifacts/${logArtifact.body.id}/content`);
      assert.equal(down.status, 503, 'a download while the store is down');
      assert.ok(Number(down.headers.get('retry-after')) > 0);
      assert.equal((await get(`/images/${imageBefore}`, { range: 'bytes=0-9' })).status, 503, 'an image read while down');
      assert.equal((await get(`/images/${imageBefore}?thumbnail=true`)).status, 503, 'a thumbnail while down');

      await s3.start();
      // s3rver just started can answer its first listing with InternalError: the listing is the
      // test's own look into the bucket, asked again until the store answers it.
      const stored = new Set(await waitFor(() => blobKeys().catch(() => undefined), { message: 'the bucket listed again' }));
      for (const [artifactId, png] of acknowledged) {
        assert.ok(stored.has(sha256(png)), `the bytes of acknowledged artifact ${artifactId} are in the bucket`);
        const read = await get(`/artifact/artifacts/${artifactId}/content`);
        assert.equal(read.status, 200, `acknowledged artifact ${artifactId} is there`);
        assert.deepEqual(Buffer.from(await read.arrayBuffer()), png);
      }
      const after = await uploadShot(await randomPng(10, 10), 'after.png');
      assert.equal(after.status, 201, 'uploads succeed once the store is back');
      assert.equal((await get(`/artifact/artifacts/${logArtifact.body.id}/content`)).status, 200);
    });

    test('the store stopped: exports of a run and of a job in every format, and an import, answer 503 with Retry-After before their answer starts; all answer once it is back', async () => {
      const admin = server.admin.client;
      const job = await admin.call(v1.jobs.createJob, { body: { projectId, name: 'outage export', testIds: [] } });
      const run = await admin.call(v1.runs.createRun, { body: { projectId, name: 'exported', jobId: job.id } });
      const step = (await addSteps(admin, run.id, ['shown'])).shown as string;
      // Fresh bytes, never read yet: no instance keeps them in memory (PERF-3).
      const shot = await adminUpload(
        server,
        projectId,
        { testRunId: run.id, stepId: step, kind: 'screenshot', name: 'exported.png' },
        { bytes: await randomPng(20, 20), type: 'image/png' },
      );
      const file = await adminUpload(
        server,
        projectId,
        { testRunId: run.id, kind: 'log', name: 'exported.log' },
        { bytes: randomBytes(300), type: 'text/plain' },
      );
      assert.deepEqual([shot.status, file.status], [201, 201]);
      await admin.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: 'passed' } });
      await admin.call(v1.jobs.completeJob, { params: { jobId: job.id } });
      const exports = ['zip', 'junit', 'junit-zip', 'xray', 'allure', 'html'].flatMap((format) => [
        `/testmgmt/testruns/${run.id}/export?format=${format}`,
        `/testmgmt/jobs/${job.id}/export?format=${format}`,
      ]);
      const report = '<testsuite name="outage"><testcase classname="outage" name="imported"/></testsuite>';
      const importReport = () =>
        fetch(`${server.url}/api/v1/projects/${projectId}/imports`, {
          method: 'POST',
          headers: { accept: 'application/json', 'service.api-token': server.admin.key, 'content-type': 'application/xml' },
          body: report,
        });

      await s3.stop();
      try {
        for (const path of exports) {
          const answer = await get(path);
          const body = await answer.text();
          assert.equal(answer.status, 503, `${path}: ${body.slice(0, 200)}`);
          assert.ok(Number(answer.headers.get('retry-after')) > 0, `${path} says when to retry`);
          assert.equal((JSON.parse(body) as { code: string }).code, 'UNAVAILABLE');
        }
        const imported = await importReport();
        assert.equal(imported.status, 503, await imported.text());
        assert.ok(Number(imported.headers.get('retry-after')) > 0);
      } finally {
        await s3.start();
      }
      for (const path of exports) {
        const answer = await get(path);
        assert.equal(answer.status, 200, path);
        assert.ok((await answer.arrayBuffer()).byteLength > 0, `${path} is read whole`);
      }
      assert.equal((await importReport()).status, 202);
    });
  });
}
