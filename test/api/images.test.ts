import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { v1 } from '../../src/client/index.ts';
import { sha256 } from '../helpers/blob-files.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser } from '../helpers/factories.ts';
import { randomGif, randomPng } from '../helpers/png.ts';
import { startRun } from '../helpers/records.ts';
import { blobEnv, tamperWithBlob } from '../helpers/s3.ts';
import { databaseSettled, startTestServer, type TestServer } from '../helpers/server.ts';
import { upload } from '../helpers/uploads.ts';

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

const SANDBOX_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox";

for (const dialect of DIALECTS) {
  describe(`[${dialect}] GET /images/{imageId}`, () => {
    let server: TestServer;
    let projectId: string;
    let otherProjectId: string;
    let tester: TestUser;
    let viewer: TestUser;
    let outsider: TestUser;
    let runId: string;

    before(async () => {
      // On PostgreSQL the blobs go to an S3-compatible bucket (SCALE-1); on SQLite to the data folder.
      server = await startTestServer(dialect, await blobEnv(dialect));
      projectId = (await createProject(server)).id;
      otherProjectId = (await createProject(server)).id;
      tester = await createUser(server, ['tester'], { projects: [projectId] });
      viewer = await createUser(server, ['viewer'], { projects: [projectId] });
      outsider = await createUser(server, ['tester'], { projects: [otherProjectId] });
      runId = (await startRun(tester.client, projectId)).id;
    });
    after(async () => {
      const unhandled = server.logs.filter((line) => line.includes('"unhandled error"'));
      await server.close();
      assert.deepEqual(unhandled, [], 'no request ended in an unhandled error');
    });

    /** Uploads a screenshot; answers its image id. */
    async function screenshot(bytes: Buffer, asProject = projectId, as = tester, run = runId): Promise<string> {
      const res = await upload(server.url, as.key, asProject, { testRunId: run, kind: 'screenshot', name: 's.png' }, { file: { bytes } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return (res.body.images as { id: string }[])[0]?.id as string;
    }

    /** GET exactly as SPEC-1.2 clients send it: JSON content type and accept, on a binary download too. */
    function get(imageId: string, key: string, headers: Record<string, string> = {}, query = ''): Promise<Raw> {
      return new Promise((resolve, reject) => {
        const request = http.get(
          `${server.url}/api/v1/images/${imageId}${query}`,
          { headers: { 'content-type': 'application/json', accept: 'application/json', 'service.api-token': key, ...headers } },
          (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (c: Buffer) => chunks.push(c));
            response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
          },
        );
        request.on('error', reject);
      });
    }

    test('answers the bytes with their real image type even to Accept: application/json, with the FILE-5 headers', async () => {
      const png = await randomPng();
      const imageId = await screenshot(png);
      const raw = await get(imageId, viewer.key);
      assert.equal(raw.status, 200);
      assert.deepEqual(raw.body, png);
      assert.equal(raw.headers['content-type'], 'image/png');
      assert.equal(raw.headers['content-length'], String(png.length));
      assert.equal(raw.headers.etag, `"${sha256(png)}"`);
      assert.equal(raw.headers['cache-control'], 'private, max-age=31536000, immutable');
      assert.equal(raw.headers['x-content-type-options'], 'nosniff');
      assert.equal(raw.headers['content-security-policy'], SANDBOX_CSP);
      assert.equal(raw.headers['cross-origin-resource-policy'], 'same-site');
      assert.equal(raw.headers['content-disposition'], `inline; filename="${imageId}.png"; filename*=UTF-8''${imageId}.png`);
      assert.equal(raw.headers['accept-ranges'], 'bytes');
    });

    test('an image answered from memory is the same bytes with the same headers (PERF-3)', async () => {
      const png = await randomPng();
      const imageId = await screenshot(png);
      const hot = server.app.attest.hotBlobs;
      const before = hot.size.entries;
      const fromDisk = await get(imageId, viewer.key);
      assert.equal(hot.size.entries, before + 1, 'the first read keeps the bytes');
      // Gone from the store: only the kept bytes can answer now.
      await tamperWithBlob(server, sha256(png));
      try {
        const fromMemory = await get(imageId, viewer.key);
        assert.equal(fromMemory.status, 200);
        assert.deepEqual(fromMemory.body, png);
        const { date: _a, 'x-request-id': _b, ...diskHeaders } = fromDisk.headers;
        const { date: _c, 'x-request-id': _d, ...memoryHeaders } = fromMemory.headers;
        assert.deepEqual(memoryHeaders, diskHeaders);
        // Access is still checked first.
        assert.equal((await get(imageId, outsider.key)).status, 404);
      } finally {
        await tamperWithBlob(server, sha256(png), png);
      }
      assert.ok(hot.size.bytes <= server.config.imageCacheBytes);
    });

    test('answers If-None-Match with the ETag with 304 and no body; another ETag gets the bytes', async () => {
      const png = await randomPng();
      const imageId = await screenshot(png);
      const etag = `"${sha256(png)}"`;
      for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const raw = await get(imageId, viewer.key, { 'if-none-match': header });
        assert.equal(raw.status, 304, header);
        assert.equal(raw.body.length, 0);
        assert.equal(raw.headers.etag, etag);
        assert.equal(raw.headers['cache-control'], 'private, max-age=31536000, immutable');
        // The sandboxing policy, so the API's own never replaces it in a cache (FILE-5).
        assert.equal(raw.headers['content-security-policy'], "default-src 'none'; style-src 'unsafe-inline'; sandbox");
        assert.equal(raw.headers['x-content-type-options'], 'nosniff');
      }
      const stale = await get(imageId, viewer.key, { 'if-none-match': '"0000"' });
      assert.equal(stale.status, 200);
      assert.deepEqual(stale.body, png);
    });

    test('serves byte ranges with 206 and answers 416 for a range outside the image', async () => {
      const png = await randomPng(40, 40);
      const imageId = await screenshot(png);
      const size = png.length;
      const cases: [string, number, number][] = [
        ['bytes=0-9', 0, 9],
        ['bytes=10-', 10, size - 1],
        ['bytes=-16', size - 16, size - 1],
        [`bytes=5-${size + 100}`, 5, size - 1],
      ];
      for (const [range, start, end] of cases) {
        const raw = await get(imageId, viewer.key, { range });
        assert.equal(raw.status, 206, range);
        assert.deepEqual(raw.body, png.subarray(start, end + 1), range);
        assert.equal(raw.headers['content-range'], `bytes ${start}-${end}/${size}`);
        assert.equal(raw.headers['content-type'], 'image/png');
      }
      const outside = await get(imageId, viewer.key, { range: `bytes=${size}-` });
      assert.equal(outside.status, 416);
      assert.equal(outside.headers['content-range'], `bytes */${size}`);
      assert.equal(JSON.parse(outside.body.toString()).code, 'RANGE_NOT_SATISFIABLE');
      // Several ranges, or nonsense, are ignored: the whole image (RFC 9110 allows it).
      for (const range of ['bytes=0-1,4-5', 'bytes=9-3', 'pages=1']) {
        const whole = await get(imageId, viewer.key, { range });
        assert.equal(whole.status, 200, range);
        assert.deepEqual(whole.body, png);
      }
      // If-Range with a stale ETag means "send it all".
      const stale = await get(imageId, viewer.key, { range: 'bytes=0-9', 'if-range': '"old"' });
      assert.equal(stale.status, 200);
    });

    test('serves a GIF/HTML polyglot as image/gif with nosniff and the sandboxing CSP', async () => {
      const polyglot = Buffer.concat([
        await randomGif(),
        Buffer.from('<html><body><script>fetch("http://127.0.0.1:9/")</script></body></html>'),
      ]);
      const imageId = await screenshot(polyglot);
      const raw = await get(imageId, viewer.key);
      assert.equal(raw.status, 200);
      assert.equal(raw.headers['content-type'], 'image/gif');
      assert.equal(raw.headers['x-content-type-options'], 'nosniff');
      assert.equal(raw.headers['content-security-policy'], SANDBOX_CSP);
      assert.deepEqual(raw.body, polyglot);
    });

    test('an image used only in a project the caller cannot see answers 404, like an unknown id', async () => {
      const imageId = await screenshot(await randomPng());
      const hidden = await get(imageId, outsider.key);
      const unknown = await get('33333333-3333-4333-8333-333333333333', outsider.key);
      assert.equal(hidden.status, 404);
      assert.equal(unknown.status, 404);
      assert.equal(JSON.parse(hidden.body.toString()).detail, JSON.parse(unknown.body.toString()).detail);
      assert.equal((await get('not-a-uuid', viewer.key)).status, 400);
    });

    test('identical bytes uploaded in two projects are one image, visible from either project', async () => {
      const png = await randomPng();
      const mine = await screenshot(png);
      const theirRun = (await startRun(outsider.client, otherProjectId)).id;
      const theirs = await screenshot(png, otherProjectId, outsider, theirRun);
      assert.equal(theirs, mine);
      assert.equal((await get(mine, outsider.key)).status, 200);
      assert.equal((await get(mine, viewer.key)).status, 200);
    });

    describe('who may see an image, kept in memory (PERF-6)', () => {
      const etagOf = async (imageId: string, key: string) => String((await get(imageId, key)).headers.etag);
      const statements = () => server.app.attest.database.stats.statements;

      test('a caller of a project known to use the image is answered, 200 and 304, without a query', async () => {
        const imageId = await screenshot(await randomPng());
        const etag = await etagOf(imageId, viewer.key);
        await databaseSettled(server);
        const before = statements();
        assert.equal((await get(imageId, viewer.key, { 'if-none-match': etag })).status, 304);
        assert.equal((await get(imageId, tester.key)).status, 200);
        assert.equal(statements() - before, 0, 'a kept use answered the access check');
        // Someone else's project is not among the known uses: still 404, as before.
        assert.equal((await get(imageId, outsider.key)).status, 404);
        assert.equal((await get(imageId, outsider.key, { 'if-none-match': etag })).status, 404);
      });

      test('the same bytes uploaded into another project are visible there on the very next request', async () => {
        const png = await randomPng();
        const imageId = await screenshot(png);
        await etagOf(imageId, viewer.key); // known: used by the first project
        assert.equal((await get(imageId, outsider.key)).status, 404);
        const theirRun = (await startRun(outsider.client, otherProjectId)).id;
        assert.equal(await screenshot(png, otherProjectId, outsider, theirRun), imageId);
        assert.equal((await get(imageId, outsider.key)).status, 200);
        assert.equal((await get(imageId, viewer.key)).status, 200);
      });

      test('deleting the artifact, the run or the project that used it answers 404 on the very next request', async () => {
        const manager = await createUser(server, ['manager'], { projects: [projectId] });
        const uploaded = await upload(
          server.url,
          tester.key,
          projectId,
          { testRunId: runId, kind: 'screenshot', name: 's.png' },
          { file: { bytes: await randomPng() } },
        );
        const byArtifact = (uploaded.body.images as { id: string }[])[0]?.id as string;
        const artifactId = String(uploaded.body.id);
        const etag = await etagOf(byArtifact, viewer.key);
        await manager.client.call(v1.artifacts.deleteArtifact, { params: { artifactId } });
        assert.equal((await get(byArtifact, viewer.key)).status, 404);
        assert.equal((await get(byArtifact, viewer.key, { 'if-none-match': etag })).status, 404);

        const run = (await startRun(tester.client, projectId)).id;
        const byRun = await screenshot(await randomPng(), projectId, tester, run);
        await etagOf(byRun, viewer.key);
        await manager.client.call(v1.runs.deleteRun, { params: { testRunId: run } });
        assert.equal((await get(byRun, viewer.key)).status, 404);

        // An admin sees every project: only forgetting the use hides an image of a deleted project.
        const doomed = (await createProject(server)).id;
        const doomedRun = (await startRun(server.admin.client, doomed)).id;
        const byProject = await screenshot(await randomPng(), doomed, { ...tester, key: server.admin.key }, doomedRun);
        assert.equal((await get(byProject, server.admin.key)).status, 200);
        await server.admin.client.call(v1.projects.deleteProject, { params: { projectId: doomed } });
        assert.equal((await get(byProject, server.admin.key)).status, 404);
      });
    });

    test('a thumbnail is a WebP within 320 px, made once and stored as its own blob', async () => {
      const png = await randomPng(800, 400);
      const imageId = await screenshot(png);
      const first = await get(imageId, viewer.key, {}, '?thumbnail=true');
      assert.equal(first.status, 200);
      assert.equal(first.headers['content-type'], 'image/webp');
      const meta = await sharp(first.body).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 320, 160]);
      assert.equal(first.headers.etag, `"${sha256(first.body)}"`);
      assert.equal(first.headers['cache-control'], 'private, max-age=31536000, immutable');
      const row = await server.app.attest.db
        .selectFrom('images')
        .select('thumbnail_sha256')
        .where('id', '=', imageId)
        .executeTakeFirstOrThrow();
      assert.equal(row.thumbnail_sha256, sha256(first.body));
      const again = await get(imageId, viewer.key, { 'if-none-match': String(first.headers.etag) }, '?thumbnail=true');
      assert.equal(again.status, 304);
      const original = await get(imageId, viewer.key, {}, '?thumbnail=false');
      assert.deepEqual(original.body, png);
    });

    test('an image that cannot be decoded still answers its thumbnail request, with the original marked and uncached', async () => {
      // Uploads are decoded before they are acknowledged, so only a stored image can fail later (one
      // stored before that check, or damaged on disk): its blob is overwritten with a valid header
      // over pixel data that is not deflate, the same length.
      const png = await randomPng(32, 32);
      const broken = Buffer.from(png);
      const idat = broken.indexOf('IDAT');
      broken.fill(0x55, idat + 6, broken.length - 20);
      const imageId = await screenshot(png);
      await tamperWithBlob(server, sha256(png), broken);
      const raw = await get(imageId, viewer.key, {}, '?thumbnail=true');
      assert.equal(raw.status, 200);
      assert.equal(raw.headers['content-type'], 'image/png');
      assert.equal(raw.headers['x-attest-thumbnail'], 'unavailable');
      assert.equal(raw.headers['cache-control'], 'no-store');
      assert.deepEqual(raw.body, broken);
    });

    test('the documented endpoints read the same image ids: details lead to the bytes', async () => {
      const png = await randomPng();
      const res = await upload(
        server.url,
        tester.key,
        projectId,
        { testRunId: runId, kind: 'screenshot', name: 'x.png' },
        { file: { bytes: png } },
      );
      const details = await viewer.client.call(v1.artifacts.getArtifacts, { query: { ids: String(res.body.id) } });
      const imageId = details.items[0]?.images[0]?.id as string;
      assert.deepEqual((await get(imageId, viewer.key)).body, png);
    });
  });

  describe(`[${dialect}] thumbnail decoding is bounded (FILE-3)`, () => {
    let server: TestServer;
    let projectId: string;
    let tester: TestUser;
    before(async () => {
      server = await startTestServer(dialect, { ATTEST_THUMBNAIL_CONCURRENCY: '1', ATTEST_THUMBNAIL_QUEUE: '1' });
      projectId = (await createProject(server)).id;
      tester = await createUser(server, ['tester'], { projects: [projectId] });
    });
    after(() => server.close());

    /** Screenshots of 25 MP: each decode takes a while, so concurrent requests overlap. */
    async function largeScreenshots(count: number): Promise<string[]> {
      const runId = (await startRun(tester.client, projectId)).id;
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const background = { r: i, g: (Date.now() >> 8) & 0xff, b: Math.floor(Math.random() * 256) };
        const bytes = await sharp({ create: { width: 5000, height: 5000, channels: 3, background } })
          .png()
          .toBuffer();
        const res = await upload(
          server.url,
          tester.key,
          projectId,
          { testRunId: runId, kind: 'screenshot', name: `${i}.png` },
          { file: { bytes } },
        );
        assert.equal(res.status, 201, JSON.stringify(res.body));
        ids.push((res.body.images as { id: string }[])[0]?.id as string);
      }
      return ids;
    }

    const thumbnail = (imageId: string) =>
      fetch(`${server.url}/api/v1/images/${imageId}?thumbnail=true`, {
        headers: { accept: 'application/json', 'content-type': 'application/json', 'service.api-token': tester.key },
      });

    test('a burst beyond the decode queue gets 503 with Retry-After, never another 5xx, and the retries succeed', async () => {
      const ids = await largeScreenshots(6);
      const answers = await Promise.all(ids.map(thumbnail));
      const statuses = answers.map((res) => res.status);
      assert.ok(
        statuses.every((status) => status === 200 || status === 503),
        statuses.join(),
      );
      assert.ok(statuses.includes(503), `one decode and one waiting: a burst of 6 must overflow (${statuses})`);
      for (const res of answers.filter((r) => r.status === 503)) {
        assert.equal(res.headers.get('retry-after'), '1');
        assert.equal(((await res.json()) as { code: string }).code, 'UNAVAILABLE');
      }
      for (const [i, res] of answers.entries()) {
        if (res.status === 200) continue;
        const retried = await thumbnail(ids[i] as string);
        assert.equal(retried.status, 200);
        assert.equal(retried.headers.get('content-type'), 'image/webp');
      }
    });

    test('concurrent requests for one image share its single decode instead of queueing', async () => {
      const [imageId] = await largeScreenshots(1);
      const answers = await Promise.all(Array.from({ length: 6 }, () => thumbnail(imageId as string)));
      assert.deepEqual(
        answers.map((res) => res.status),
        [200, 200, 200, 200, 200, 200],
      );
      const bodies = await Promise.all(answers.map(async (res) => Buffer.from(await res.arrayBuffer())));
      for (const body of bodies) assert.deepEqual(body, bodies[0]);
    });
  });
}
