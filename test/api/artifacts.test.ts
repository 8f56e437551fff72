import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { after, before, describe, test } from 'node:test';
import { type ApiError, v1 } from '../../src/client/index.ts';
import type { BlobFs } from '../../src/server/blob/fs-blob-store.ts';
import { FsBlobStore, nodeBlobFs } from '../../src/server/blob/fs-blob-store.ts';
import { sha256 } from '../helpers/blob-files.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { gifWithFrames, pixelFloodPng, pngClaiming, randomAnimation, randomGif, randomPng } from '../helpers/png.ts';
import { addSteps, completeRun, startRun } from '../helpers/records.ts';
import { blobEnv, leftoverUploads } from '../helpers/s3.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { type FilePart, filesUnder, upload, uploadHead } from '../helpers/uploads.ts';
import { waitFor } from '../helpers/wait.ts';

const MiB = 1024 * 1024;

interface ArtifactBody {
  id: string;
  stepId: string | null;
  kind: string;
  name: string;
  contentType: string;
  size: number;
  sha256: string;
  images: { id: string; role: string; contentType: string; width: number; height: number; size: number; sha256: string }[];
}

const HTML = Buffer.from('<!doctype html><html><body><script>fetch("http://127.0.0.1:9/hit")</script></body></html>');
const SVG = Buffer.from(
  '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><rect width="9" height="9"/></svg>',
);

for (const dialect of DIALECTS) {
  describe(`[${dialect}] artifacts`, () => {
    let server: TestServer;
    let projectId: string;
    let otherProjectId: string;
    let tester: TestUser;
    let viewer: TestUser;
    let manager: TestUser;
    let outsider: TestUser;

    before(async () => {
      // On PostgreSQL the blobs go to an S3-compatible bucket (SCALE-1); on SQLite to the data folder.
      server = await startTestServer(dialect, await blobEnv(dialect));
      projectId = (await createProject(server, 'Web')).id;
      otherProjectId = (await createProject(server, 'Other')).id;
      tester = await createUser(server, ['tester'], { projects: [projectId] });
      viewer = await createUser(server, ['viewer'], { projects: [projectId] });
      manager = await createUser(server, ['manager'], { projects: [projectId] });
      outsider = await createUser(server, ['tester'], { projects: [otherProjectId] });
    });
    after(async () => {
      const unhandled = server.logs.filter((line) => line.includes('"unhandled error"'));
      await server.close();
      assert.deepEqual(unhandled, [], 'no request ended in an unhandled error');
    });

    /** One file part (`file`) uploaded by the project's tester. */
    const testerUpload = (metadata: Record<string, unknown>, file: FilePart) =>
      upload(server.url, tester.key, projectId, metadata, { file });
    const db = () => server.app.attest.db;
    /** The digests the blob store holds, whichever store it is. */
    const storedBlobs = async () => {
      const digests: string[] = [];
      for await (const blob of server.app.attest.blobs.list()) digests.push(blob.sha256);
      return digests.sort();
    };
    const leftovers = () => leftoverUploads(server);
    const runArtifactCount = async (runId: string) =>
      Number(
        (
          await db()
            .selectFrom('artifacts')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('run_id', '=', runId)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const newRun = async () => (await startRun(tester.client, projectId)).id;
    const shot = (runId: string, extra: Record<string, unknown> = {}) => ({
      testRunId: runId,
      kind: 'screenshot',
      name: 'screen.png',
      ...extra,
    });

    describe('POST /projects/{projectId}/artifact', () => {
      test('stores a screenshot streamed as multipart and answers 201 with its image', async () => {
        const runId = await newRun();
        const png = await randomPng(20, 10);
        const res = await upload(server.url, tester.key, projectId, shot(runId), { file: { bytes: png, type: 'image/png' } });
        assert.equal(res.status, 201, JSON.stringify(res.body));
        const artifact = res.body as unknown as ArtifactBody;
        assert.equal(artifact.kind, 'screenshot');
        assert.equal(artifact.stepId, null);
        assert.equal(artifact.contentType, 'image/png');
        assert.equal(artifact.size, png.length);
        assert.equal(artifact.sha256, sha256(png));
        assert.deepEqual(
          artifact.images.map(({ id: _id, ...image }) => image),
          [{ role: 'screenshot', contentType: 'image/png', width: 20, height: 10, size: png.length, sha256: sha256(png) }],
        );
        assert.deepEqual(await buffer((await server.app.attest.blobs.get(artifact.sha256)) as NodeJS.ReadableStream), png);
        assert.deepEqual(await leftovers(), []);
      });

      test('a retried upload with the same idempotencyKey stores nothing new and answers 200 with the first artifact', async () => {
        const runId = await newRun();
        const png = await randomPng();
        const metadata = shot(runId, { idempotencyKey: 'shot-1' });
        const first = await upload(server.url, tester.key, projectId, metadata, { file: { bytes: png } });
        assert.equal(first.status, 201);
        const blobsBefore = await storedBlobs();
        for (let attempt = 0; attempt < 3; attempt++) {
          const retry = await upload(server.url, tester.key, projectId, metadata, { file: { bytes: png } });
          assert.equal(retry.status, 200, JSON.stringify(retry.body));
          assert.deepEqual(retry.body, first.body);
        }
        assert.equal(await runArtifactCount(runId), 1);
        assert.deepEqual(await storedBlobs(), blobsBefore);
        assert.deepEqual(await leftovers(), []);
      });

      test('concurrent retries with one idempotencyKey create exactly one artifact', async () => {
        const runId = await newRun();
        const png = await randomPng();
        const results = await Promise.all(
          Array.from({ length: 6 }, () =>
            upload(server.url, tester.key, projectId, shot(runId, { idempotencyKey: 'racy' }), { file: { bytes: png } }),
          ),
        );
        assert.deepEqual(results.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 201]);
        assert.equal(new Set(results.map((r) => r.body.id)).size, 1);
        assert.equal(await runArtifactCount(runId), 1);
      });

      test('the same idempotencyKey with other bytes answers 409 STATE_CONFLICT and stores nothing new', async () => {
        const runId = await newRun();
        const metadata = shot(runId, { idempotencyKey: 'retaken' });
        const first = await upload(server.url, tester.key, projectId, metadata, { file: { bytes: await randomPng() } });
        assert.equal(first.status, 201);
        const blobsBefore = await storedBlobs();
        // A re-taken screenshot is another artifact, not a retry: answering the first would drop it silently.
        const clash = await upload(server.url, tester.key, projectId, metadata, { file: { bytes: await randomPng() } });
        assert.equal(clash.status, 409, JSON.stringify(clash.body));
        assert.equal(clash.body.code, 'STATE_CONFLICT');
        assert.match(String(clash.body.detail), /other content/);
        assert.equal(await runArtifactCount(runId), 1);
        assert.deepEqual(await storedBlobs(), blobsBefore);
      });

      test('a visual diff retried with one image changed answers 409; with the same three, 200', async () => {
        const runId = await newRun();
        const [baseline, actual, diff] = await Promise.all([randomPng(), randomPng(), randomPng()]);
        const metadata = { testRunId: runId, kind: 'visual-diff', name: 'retried', idempotencyKey: 'vd' };
        const parts = { baseline: { bytes: baseline }, actual: { bytes: actual }, diff: { bytes: diff } };
        const first = await upload(server.url, tester.key, projectId, metadata, parts);
        assert.equal(first.status, 201, JSON.stringify(first.body));
        const changed = await upload(server.url, tester.key, projectId, metadata, { ...parts, actual: { bytes: await randomPng() } });
        assert.equal(changed.status, 409, JSON.stringify(changed.body));
        const same = await upload(server.url, tester.key, projectId, metadata, parts);
        assert.equal(same.status, 200, JSON.stringify(same.body));
        assert.deepEqual(same.body, first.body);
      });

      test('the same idempotencyKey for another name answers 409 STATE_CONFLICT', async () => {
        const runId = await newRun();
        const png = await randomPng();
        assert.equal(
          (await upload(server.url, tester.key, projectId, shot(runId, { idempotencyKey: 'k' }), { file: { bytes: png } })).status,
          201,
        );
        const clash = await upload(server.url, tester.key, projectId, shot(runId, { idempotencyKey: 'k', name: 'other.png' }), {
          file: { bytes: png },
        });
        assert.equal(clash.status, 409);
        assert.equal(clash.body.code, 'STATE_CONFLICT');
      });

      test('identical bytes in two artifacts are stored as one image row and one blob', async () => {
        const runId = await newRun();
        const png = await randomPng();
        const a = (await upload(server.url, tester.key, projectId, shot(runId, { name: 'a.png' }), { file: { bytes: png } }))
          .body as unknown as ArtifactBody;
        const b = (await upload(server.url, tester.key, projectId, shot(runId, { name: 'b.png' }), { file: { bytes: png } }))
          .body as unknown as ArtifactBody;
        assert.notEqual(a.id, b.id);
        assert.equal(a.images[0]?.id, b.images[0]?.id);
        const rows = await db().selectFrom('images').select('id').where('sha256', '=', sha256(png)).execute();
        assert.equal(rows.length, 1);
        assert.equal((await storedBlobs()).filter((f) => f.endsWith(sha256(png))).length, 1);
      });

      test('attaches evidence to a step named by stepId or by stepKey', async () => {
        const runId = await newRun();
        const steps = await addSteps(tester.client, runId, ['login', 'checkout']);
        const byId = await upload(server.url, tester.key, projectId, shot(runId, { stepId: steps.login }), {
          file: { bytes: await randomPng() },
        });
        assert.equal(byId.status, 201);
        assert.equal(byId.body.stepId, steps.login);
        const byKey = await upload(server.url, tester.key, projectId, shot(runId, { stepKey: 'checkout' }), {
          file: { bytes: await randomPng() },
        });
        assert.equal(byKey.status, 201);
        assert.equal(byKey.body.stepId, steps.checkout);
      });

      test('a step that is not in the run is a 400 naming the field, and nothing is stored', async () => {
        const runId = await newRun();
        const otherRun = await newRun();
        const foreign = await addSteps(tester.client, otherRun, ['elsewhere']);
        for (const [field, metadata] of [
          ['stepId', shot(runId, { stepId: foreign.elsewhere })],
          ['stepKey', shot(runId, { stepKey: 'never-posted' })],
        ] as const) {
          const res = await upload(server.url, tester.key, projectId, metadata, { file: { bytes: await randomPng() } });
          assert.equal(res.status, 400);
          assert.equal((res.body.errors as { pointer: string }[])[0]?.pointer, `/body/metadata/${field}`);
        }
        const both = await upload(server.url, tester.key, projectId, shot(runId, { stepId: foreign.elsewhere, stepKey: 'x' }), {
          file: { bytes: await randomPng() },
        });
        assert.equal(both.status, 400);
        assert.equal(await runArtifactCount(runId), 0);
      });

      test('stores a visual diff with its baseline, actual and diff images in that order', async () => {
        const runId = await newRun();
        const [baseline, actual, diff] = [await randomPng(30, 20), await randomPng(30, 20), await randomPng(30, 20)];
        const res = await upload(
          server.url,
          tester.key,
          projectId,
          { testRunId: runId, kind: 'visual-diff', name: 'header' },
          {
            baseline: { bytes: baseline },
            actual: { bytes: actual },
            diff: { bytes: diff },
          },
        );
        assert.equal(res.status, 201, JSON.stringify(res.body));
        const artifact = res.body as unknown as ArtifactBody;
        assert.deepEqual(
          artifact.images.map((i) => [i.role, i.sha256]),
          [
            ['baseline', sha256(baseline)],
            ['actual', sha256(actual)],
            ['diff', sha256(diff)],
          ],
        );
        assert.equal(artifact.sha256, sha256(diff), "a visual diff's content is its diff image");
      });

      test('a visual diff without one of its parts, or with a part it does not take, is a 400 naming it', async () => {
        const runId = await newRun();
        const missing = await upload(
          server.url,
          tester.key,
          projectId,
          { testRunId: runId, kind: 'visual-diff', name: 'd' },
          {
            baseline: { bytes: await randomPng() },
            diff: { bytes: await randomPng() },
          },
        );
        assert.equal(missing.status, 400);
        assert.equal((missing.body.errors as { pointer: string }[])[0]?.pointer, '/body/actual');
        const stray = await upload(server.url, tester.key, projectId, shot(runId), { baseline: { bytes: await randomPng() } });
        assert.equal(stray.status, 400);
        assert.equal((stray.body.errors as { pointer: string }[])[0]?.pointer, '/body/baseline');
        const form = new FormData();
        form.append('metadata', JSON.stringify(shot(runId)));
        form.append('file', new Blob([await randomPng()]), 'one.png');
        form.append('file', new Blob([await randomPng()]), 'two.png');
        const twice = await fetch(`${server.url}/api/v1/projects/${projectId}/artifact`, {
          method: 'POST',
          headers: { accept: 'application/json', 'service.api-token': tester.key },
          body: form,
        });
        assert.equal(twice.status, 400);
        assert.match(((await twice.json()) as { detail: string }).detail, /more than once/);
        assert.equal(await runArtifactCount(runId), 0);
        assert.deepEqual(await leftovers(), []);
      });

      describe('types come from the bytes (FILE-1)', () => {
        test('an HTML file declared image/png and named x.png is refused with 415', async () => {
          const runId = await newRun();
          const res = await upload(server.url, tester.key, projectId, shot(runId, { name: 'x.png' }), {
            file: { bytes: HTML, type: 'image/png', filename: 'x.png' },
          });
          assert.equal(res.status, 415);
          assert.equal(res.body.code, 'UNSUPPORTED_MEDIA_TYPE');
          assert.equal(await runArtifactCount(runId), 0);
          assert.deepEqual(await leftovers(), []);
        });

        test('an SVG with an onload handler is never an image: 415 as a screenshot and in a visual diff', async () => {
          const runId = await newRun();
          const res = await upload(server.url, tester.key, projectId, shot(runId, { name: 'x.svg' }), {
            file: { bytes: SVG, type: 'image/svg+xml' },
          });
          assert.equal(res.status, 415);
          const diff = await upload(
            server.url,
            tester.key,
            projectId,
            { testRunId: runId, kind: 'visual-diff', name: 'd' },
            {
              baseline: { bytes: await randomPng() },
              actual: { bytes: await randomPng() },
              diff: { bytes: SVG, type: 'image/png' },
            },
          );
          assert.equal(diff.status, 415);
          assert.equal(await runArtifactCount(runId), 0);
        });

        test('a PNG declared application/octet-stream is stored as image/png', async () => {
          const runId = await newRun();
          const res = await upload(server.url, tester.key, projectId, shot(runId), {
            file: { bytes: await randomPng(), type: 'application/octet-stream', filename: 'blob' },
          });
          assert.equal(res.status, 201);
          assert.equal(res.body.contentType, 'image/png');
        });

        test('a GIF/HTML polyglot is stored as image/gif', async () => {
          const runId = await newRun();
          const polyglot = Buffer.concat([await randomGif(), Buffer.from('<html><script>alert(document.domain)</script></html>')]);
          const res = await upload(server.url, tester.key, projectId, shot(runId), { file: { bytes: polyglot, type: 'text/html' } });
          assert.equal(res.status, 201, JSON.stringify(res.body));
          assert.equal(res.body.contentType, 'image/gif');
        });

        test('other kinds keep the detected type, or application/octet-stream, and never take the declared one', async () => {
          const runId = await newRun();
          const log = await testerUpload(
            { testRunId: runId, kind: 'log', name: 'console' },
            { bytes: Buffer.from('line 1\n'), type: 'text/html' },
          );
          assert.equal(log.status, 201);
          assert.equal(log.body.contentType, 'application/octet-stream', 'no signature and no extension that names a text kind');
          const page = await testerUpload({ testRunId: runId, kind: 'file', name: 'page' }, { bytes: HTML, type: 'text/html' });
          assert.equal(page.body.contentType, 'application/octet-stream', 'the declared text/html is never taken');
          const png = await testerUpload(
            { testRunId: runId, kind: 'file', name: 'chart' },
            { bytes: await randomPng(), type: 'text/plain' },
          );
          assert.equal(png.body.contentType, 'image/png');
          assert.deepEqual(png.body.images, [], 'only screenshots and visual diffs have images');
        });
      });

      describe('dimensions are checked before any decode (FILE-2)', () => {
        test('a 20 000 × 20 000 PNG is refused with 422 IMAGE_TOO_LARGE from its header, and nothing is stored', async () => {
          const runId = await newRun();
          const flood = await pixelFloodPng();
          const res = await upload(server.url, tester.key, projectId, shot(runId), { file: { bytes: flood, type: 'image/png' } });
          assert.equal(res.status, 422);
          assert.equal(res.body.code, 'IMAGE_TOO_LARGE');
          assert.match(String(res.body.detail), /20000×20000/);
          // The refusal comes from the header: with only the first 8 KiB sent, the answer is the
          // same, so the server neither waited for the pixels nor decoded them.
          const head = await uploadHead(server.url, tester.key, projectId, shot(runId), flood, 8192);
          assert.equal(head.status, 422, JSON.stringify(head.body));
          assert.equal(head.body.code, 'IMAGE_TOO_LARGE');
          assert.ok(head.unsent > 0);
          assert.equal(await runArtifactCount(runId), 0);
          await waitFor(async () => (await leftovers()).length === 0, { message: 'no temp file or object left' });
        });

        test('a GIF whose frames are larger than its header states is judged by its frames', async () => {
          const runId = await newRun();
          const send = (bytes: Buffer) => upload(server.url, tester.key, projectId, shot(runId), { file: { bytes } });
          // A 1 × 1 header over a 30 000-pixel-wide frame: the side limit applies to the frame.
          const wide = await send(gifWithFrames(1, 1, 30_000, 10, 1));
          assert.equal(wide.status, 422, JSON.stringify(wide.body));
          assert.match(String(wide.body.detail), /30000×10/);
          // Tiny frames, but more of them than any animation may have.
          const many = await send(gifWithFrames(1, 1, 1, 1, 10_001));
          assert.equal(many.status, 422, JSON.stringify(many.body));
          assert.match(String(many.body.detail), /more than 10000 frames/);
          // Within every limit it is stored with the size its frames cover.
          const fine = await send(gifWithFrames(1, 1, 64, 48, 2));
          assert.equal(fine.status, 201, JSON.stringify(fine.body));
          assert.deepEqual(
            (fine.body.images as { width: number; height: number }[]).map((i) => [i.width, i.height]),
            [[64, 48]],
          );
          assert.equal(await runArtifactCount(runId), 1);
          assert.deepEqual(await leftovers(), []);
        });

        test('a hand-made PNG header claiming 100 000 × 100 000 is refused with 422', async () => {
          const runId = await newRun();
          const res = await upload(server.url, tester.key, projectId, shot(runId), { file: { bytes: pngClaiming(100_000, 100_000) } });
          assert.equal(res.status, 422);
          assert.equal(res.body.code, 'IMAGE_TOO_LARGE');
          // Within the side limit but over the pixel limit (50 MP by default).
          const wide = await upload(server.url, tester.key, projectId, shot(runId), { file: { bytes: pngClaiming(10_000, 6_000) } });
          assert.equal(wide.status, 422);
          assert.equal(await runArtifactCount(runId), 0);
        });
      });

      test('a hostile name is kept as sanitised metadata only and never reaches the filesystem (FILE-4)', async () => {
        const runId = await newRun();
        const hostile = '../../../etc/passwd\r\nX: y';
        const before = filesUnder(server.dataDir);
        const res = await upload(
          server.url,
          tester.key,
          projectId,
          { testRunId: runId, kind: 'log', name: hostile },
          {
            file: { bytes: Buffer.from(unique('log line ')), filename: hostile },
          },
        );
        assert.equal(res.status, 201, JSON.stringify(res.body));
        assert.equal(res.body.name, '......etcpasswdX: y');
        const created = filesUnder(server.dataDir).filter((f) => !before.includes(f));
        assert.ok(
          created.every((f) => f.startsWith(`blobs${path.sep}`) || /^attest\.db/.test(f)),
          `only blobs are written: ${created.join(', ')}`,
        );
        const raw = await rawGet(`/api/v1/artifact/artifacts/${res.body.id}/content`, tester.key);
        assert.equal(
          raw.headers['content-disposition'],
          `attachment; filename="......etcpasswdX: y"; filename*=UTF-8''......etcpasswdX%3A%20y`,
        );
        assert.doesNotMatch(String(raw.headers['content-disposition']), /[\r\n]/);
        assert.equal(raw.headers.x, undefined, 'no header was injected');
        const long = await testerUpload({ testRunId: runId, kind: 'log', name: `${'é'.repeat(200)}` }, { bytes: Buffer.from('x') });
        assert.equal(Buffer.byteLength(String(long.body.name)), 254, 'cut to at most 255 bytes on a character boundary');
      });

      test('the run must be in the project of the path; outsiders get 404 and viewers 403', async () => {
        const runId = await newRun();
        const png = await randomPng();
        const otherRun = (await startRun(outsider.client, otherProjectId)).id;
        const wrongProject = await upload(server.url, tester.key, projectId, shot(otherRun), { file: { bytes: png } });
        assert.equal(wrongProject.status, 404);
        const unknownRun = await upload(server.url, tester.key, projectId, shot('00000000-0000-4000-8000-000000000000'), {
          file: { bytes: png },
        });
        assert.equal(unknownRun.status, 404);
        const outsiderUpload = await upload(server.url, outsider.key, projectId, shot(runId), { file: { bytes: png } });
        assert.equal(outsiderUpload.status, 404);
        const viewerUpload = await upload(server.url, viewer.key, projectId, shot(runId), { file: { bytes: png } });
        assert.equal(viewerUpload.status, 403);
        assert.equal(await runArtifactCount(runId), 0);
      });

      test('a completed run is frozen (409 RUN_FROZEN), but a retry of an upload it already holds still answers 200', async () => {
        const runId = await newRun();
        const png = await randomPng();
        const first = await upload(server.url, tester.key, projectId, shot(runId, { idempotencyKey: 'before-complete' }), {
          file: { bytes: png },
        });
        await completeRun(tester.client, runId);
        const late = await upload(server.url, tester.key, projectId, shot(runId), { file: { bytes: await randomPng() } });
        assert.equal(late.status, 409);
        assert.equal(late.body.code, 'RUN_FROZEN');
        const retry = await upload(server.url, tester.key, projectId, shot(runId, { idempotencyKey: 'before-complete' }), {
          file: { bytes: png },
        });
        assert.equal(retry.status, 200);
        assert.equal(retry.body.id, first.body.id);
      });

      test('the metadata part comes first and is validated, each problem a 400 naming the field', async () => {
        const runId = await newRun();
        const png = await randomPng();
        const cases: [string | Record<string, unknown>, string][] = [
          ['{not json', '/body/metadata'],
          [{ testRunId: runId, kind: 'screenshot' }, '/body/metadata/name'],
          [{ testRunId: runId, kind: 'hologram', name: 'x' }, '/body/metadata/kind'],
          [{ testRunId: 'run-1', kind: 'screenshot', name: 'x' }, '/body/metadata/testRunId'],
          [{ ...shot(runId), extra: true }, '/body/metadata/extra'],
          [{ ...shot(runId), idempotencyKey: 'a\u0000b' }, '/body/metadata/idempotencyKey'],
          [{ ...shot(runId), name: '\r\n/' }, '/body/metadata/name'],
        ];
        for (const [metadata, pointer] of cases) {
          const res = await upload(server.url, tester.key, projectId, metadata, { file: { bytes: png } });
          assert.equal(res.status, 400, JSON.stringify(metadata));
          assert.equal((res.body.errors as { pointer: string }[])[0]?.pointer, pointer, JSON.stringify(res.body));
        }
        const form = new FormData();
        form.append('file', new Blob([png]), 'a.png');
        form.append('metadata', JSON.stringify(shot(runId)));
        const fileFirst = await fetch(`${server.url}/api/v1/projects/${projectId}/artifact`, {
          method: 'POST',
          headers: { accept: 'application/json', 'service.api-token': tester.key },
          body: form,
        });
        assert.equal(fileFirst.status, 400);
        assert.equal(((await fileFirst.json()) as { errors: { pointer: string }[] }).errors[0]?.pointer, '/body/metadata');
        const asJson = await fetch(`${server.url}/api/v1/projects/${projectId}/artifact`, {
          method: 'POST',
          headers: { accept: 'application/json', 'content-type': 'application/json', 'service.api-token': tester.key },
          body: JSON.stringify(shot(runId)),
        });
        assert.equal(asJson.status, 415);
        assert.equal(await runArtifactCount(runId), 0);
      });

      test('takes the metadata as a JSON part too', async () => {
        const runId = await newRun();
        const form = new FormData();
        form.append('metadata', new Blob([JSON.stringify(shot(runId))], { type: 'application/json' }), 'metadata.json');
        form.append('file', new Blob([await randomPng()]), 'a.png');
        const res = await fetch(`${server.url}/api/v1/projects/${projectId}/artifact`, {
          method: 'POST',
          headers: { accept: 'application/json', 'service.api-token': tester.key },
          body: form,
        });
        assert.equal(res.status, 201);
      });

      test('a malformed multipart body is a 400, never a 5xx', async () => {
        const runId = await newRun();
        const boundary = 'XyZ';
        const body = `--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n${JSON.stringify(shot(runId))}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\n\x89PNG trunc`;
        const res = await fetch(`${server.url}/api/v1/projects/${projectId}/artifact`, {
          method: 'POST',
          headers: {
            accept: 'application/json',
            'service.api-token': tester.key,
            'content-type': `multipart/form-data; boundary=${boundary}`,
          },
          body,
        });
        assert.equal(res.status, 400, await res.clone().text());
        assert.equal(await runArtifactCount(runId), 0);
        assert.deepEqual(await leftovers(), []);
      });

      describe('storage failures (DUR-7)', () => {
        for (const { name, fault, status, code } of [
          {
            name: 'ENOSPC while writing',
            fault: { write: async () => Promise.reject(Object.assign(new Error('no space'), { code: 'ENOSPC' })) },
            status: 507,
            code: 'STORAGE_FULL',
          },
          {
            name: 'EIO on fsync',
            fault: { fsync: async () => Promise.reject(Object.assign(new Error('io'), { code: 'EIO' })) },
            status: 503,
            code: 'UNAVAILABLE',
          },
          {
            name: 'EIO on rename',
            fault: { rename: async () => Promise.reject(Object.assign(new Error('io'), { code: 'EIO' })) },
            status: 503,
            code: 'UNAVAILABLE',
          },
        ] as { name: string; fault: Partial<BlobFs>; status: number; code: string }[]) {
          test(`${name} answers ${status} ${code}, writes no row, leaves tmp/ empty, and the next upload works`, async (t) => {
            if (server.config.blobUrl) {
              t.skip('file-system faults; the S3 store meets its own in test/blob/s3-blob-store.test.ts and test/api/s3-blobs.test.ts');
              return;
            }
            const runId = await newRun();
            const ctx = server.app.attest;
            const healthy = ctx.blobs;
            ctx.blobs = new FsBlobStore(server.dataDir, { fs: { ...nodeBlobFs, ...fault } });
            try {
              const res = await upload(server.url, tester.key, projectId, shot(runId), { file: { bytes: await randomPng() } });
              assert.equal(res.status, status, JSON.stringify(res.body));
              assert.equal(res.body.code, code);
            } finally {
              ctx.blobs = healthy;
            }
            assert.equal(await runArtifactCount(runId), 0);
            assert.deepEqual(await leftovers(), []);
            const next = await upload(server.url, tester.key, projectId, shot(runId), { file: { bytes: await randomPng() } });
            assert.equal(next.status, 201);
          });
        }
      });
    });

    describe('GET /projects/{projectId}/artifact (endpoint 3)', () => {
      test('lists every artifact of the run in one answer, each with its step id (null when none), and nothing of other runs', async () => {
        const runId = await newRun();
        const steps = await addSteps(tester.client, runId, ['s1']);
        const uploaded: string[] = [];
        for (let i = 0; i < 7; i++) {
          const metadata = i % 2 === 0 ? shot(runId, { stepId: steps.s1, name: `shot-${i}.png` }) : shot(runId, { name: `shot-${i}.png` });
          uploaded.push(
            String((await upload(server.url, tester.key, projectId, metadata, { file: { bytes: await randomPng() } })).body.id),
          );
        }
        await upload(server.url, tester.key, projectId, shot(await newRun()), { file: { bytes: await randomPng() } });
        const page = await viewer.client.call(v1.artifacts.listArtifacts, { params: { projectId }, query: { testRunId: runId } });
        assert.equal(page.nextCursor, null);
        assert.deepEqual(page.items.map((a) => a.id).sort(), [...uploaded].sort());
        for (const item of page.items) {
          assert.equal(item.stepId, Number(item.name.match(/\d/)?.[0]) % 2 === 0 ? steps.s1 : null);
          assert.deepEqual(Object.keys(item).sort(), [
            'contentType',
            'createdAt',
            'id',
            'idempotencyKey',
            'kind',
            'name',
            'projectId',
            'sha256',
            'size',
            'stepId',
            'testRunId',
          ]);
        }
        const seen: string[] = [];
        let cursor: string | undefined;
        do {
          const next = await viewer.client.call(v1.artifacts.listArtifacts, {
            params: { projectId },
            query: { testRunId: runId, limit: 3, cursor },
          });
          assert.ok(next.items.length <= 3);
          seen.push(...next.items.map((a) => a.id));
          cursor = next.nextCursor ?? undefined;
        } while (cursor);
        assert.deepEqual(
          seen,
          page.items.map((a) => a.id),
          'paging walks the same order',
        );
      });

      test('a run of another project, and a project the caller cannot see, answer 404', async () => {
        const otherRun = (await startRun(outsider.client, otherProjectId)).id;
        await assert.rejects(
          viewer.client.call(v1.artifacts.listArtifacts, { params: { projectId }, query: { testRunId: otherRun } }),
          (e: ApiError) => e.status === 404,
        );
        const runId = await newRun();
        await assert.rejects(
          outsider.client.call(v1.artifacts.listArtifacts, { params: { projectId }, query: { testRunId: runId } }),
          (e: ApiError) => e.status === 404,
        );
      });
    });

    describe('GET /artifact/artifacts (endpoint 4)', () => {
      test('answers the details in the order asked, with image ids and step ids', async () => {
        const runId = await newRun();
        const steps = await addSteps(tester.client, runId, ['a']);
        const first = (
          await upload(server.url, tester.key, projectId, shot(runId, { stepKey: 'a' }), { file: { bytes: await randomPng() } })
        ).body as unknown as ArtifactBody;
        const second = (await testerUpload({ testRunId: runId, kind: 'video', name: 'run.webm' }, { bytes: randomBytes(5000) }))
          .body as unknown as ArtifactBody;
        const details = await viewer.client.call(v1.artifacts.getArtifacts, { query: { ids: `${second.id},${first.id}` } });
        assert.deepEqual(details.missing, []);
        assert.deepEqual(
          details.items.map((a) => a.id),
          [second.id, first.id],
        );
        assert.equal(details.items[1]?.stepId, steps.a);
        assert.deepEqual(details.items[1]?.images, first.images);
        assert.deepEqual(details.items[0]?.images, []);
      });

      test('unknown ids and ids of invisible projects are reported identically in `missing`', async () => {
        const runId = await newRun();
        const mine = String((await upload(server.url, tester.key, projectId, shot(runId), { file: { bytes: await randomPng() } })).body.id);
        const unknown = '11111111-1111-4111-8111-111111111111';
        const asOutsider = await outsider.client.call(v1.artifacts.getArtifacts, { query: { ids: `${mine},${unknown}` } });
        assert.deepEqual(asOutsider, { items: [], missing: [mine, unknown] });
        const asOutsiderReversed = await outsider.client.call(v1.artifacts.getArtifacts, { query: { ids: `${unknown},${mine}` } });
        assert.deepEqual(asOutsiderReversed.missing, [unknown, mine]);
        const asMember = await viewer.client.call(v1.artifacts.getArtifacts, { query: { ids: `${mine},${unknown}` } });
        assert.deepEqual(asMember.missing, [unknown]);
      });

      test('more ids than ATTEST_MAX_IDS_PER_BATCH, or a malformed id, is a 400 naming ids', async () => {
        const ids = Array.from({ length: server.config.maxIdsPerBatch + 1 }, () => crypto.randomUUID()).join(',');
        await assert.rejects(
          viewer.client.call(v1.artifacts.getArtifacts, { query: { ids } }),
          (e: ApiError) => e.status === 400 && /\/query\/ids/.test(e.message),
        );
        await assert.rejects(viewer.client.call(v1.artifacts.getArtifacts, { query: { ids: 'abc' } }), (e: ApiError) => e.status === 400);
        await assert.rejects(viewer.client.call(v1.artifacts.getArtifacts, { query: { ids: ',' } }), (e: ApiError) => e.status === 400);
      });
    });

    describe('GET /artifact/artifacts/{artifactId}/content', () => {
      test('downloads a non-image as an attachment with the FILE-5 headers, and supports ranges', async () => {
        const runId = await newRun();
        const bytes = randomBytes(10_000);
        const created = await testerUpload({ testRunId: runId, kind: 'trace', name: 'trace ünïcode.zip' }, { bytes });
        const raw = await rawGet(`/api/v1/artifact/artifacts/${created.body.id}/content`, viewer.key);
        assert.equal(raw.status, 200);
        assert.deepEqual(raw.body, bytes);
        assert.equal(raw.headers['content-type'], 'application/octet-stream');
        assert.equal(
          raw.headers['content-disposition'],
          `attachment; filename="trace unicode.zip"; filename*=UTF-8''trace%20%C3%BCn%C3%AFcode.zip`,
        );
        assert.equal(raw.headers['x-content-type-options'], 'nosniff');
        assert.equal(raw.headers['content-security-policy'], "default-src 'none'; style-src 'unsafe-inline'; sandbox");
        assert.equal(raw.headers['cross-origin-resource-policy'], 'same-site');
        assert.equal(raw.headers.etag, `"${sha256(bytes)}"`);
        const part = await rawGet(`/api/v1/artifact/artifacts/${created.body.id}/content`, viewer.key, { range: 'bytes=100-199' });
        assert.equal(part.status, 206);
        assert.deepEqual(part.body, bytes.subarray(100, 200));
        assert.equal(part.headers['content-range'], 'bytes 100-199/10000');
      });

      test('serves an HTML file uploaded as a file as a text/html attachment, and a screenshot inline', async () => {
        const runId = await newRun();
        const page = await testerUpload({ testRunId: runId, kind: 'file', name: 'page.html' }, { bytes: HTML, type: 'text/html' });
        const html = await rawGet(`/api/v1/artifact/artifacts/${page.body.id}/content`, viewer.key);
        assert.equal(html.headers['content-type'], 'text/html');
        assert.match(String(html.headers['content-disposition']), /^attachment;/);
        assert.equal(html.headers['content-security-policy'], "default-src 'none'; style-src 'unsafe-inline'; sandbox");
        const png = await randomPng();
        const screenshot = await upload(server.url, tester.key, projectId, shot(runId), { file: { bytes: png } });
        const image = await rawGet(`/api/v1/artifact/artifacts/${screenshot.body.id}/content`, viewer.key);
        assert.equal(image.headers['content-type'], 'image/png');
        assert.match(String(image.headers['content-disposition']), /^inline/);
        assert.deepEqual(image.body, png);
      });

      test('an artifact of a project the caller cannot see answers 404, like an unknown one', async () => {
        const runId = await newRun();
        const created = await upload(server.url, tester.key, projectId, shot(runId), { file: { bytes: await randomPng() } });
        const hidden = await rawGet(`/api/v1/artifact/artifacts/${created.body.id}/content`, outsider.key);
        const unknown = await rawGet('/api/v1/artifact/artifacts/22222222-2222-4222-8222-222222222222/content', outsider.key);
        assert.equal(hidden.status, 404);
        assert.equal(unknown.status, 404);
        assert.equal(JSON.parse(hidden.body.toString()).detail, JSON.parse(unknown.body.toString()).detail);
      });
    });

    describe('DELETE /artifact/artifacts/{artifactId}', () => {
      test('a manager deletes the row; the blob stays for garbage collection; a tester may not', async () => {
        const runId = await newRun();
        const png = await randomPng();
        const created = (await upload(server.url, tester.key, projectId, shot(runId), { file: { bytes: png } }))
          .body as unknown as ArtifactBody;
        await assert.rejects(
          tester.client.call(v1.artifacts.deleteArtifact, { params: { artifactId: created.id } }),
          (e: ApiError) => e.status === 403,
        );
        const outsideManager = await createUser(server, ['manager'], { projects: [otherProjectId] });
        await assert.rejects(
          outsideManager.client.call(v1.artifacts.deleteArtifact, { params: { artifactId: created.id } }),
          (e: ApiError) => e.status === 404,
        );
        await manager.client.call(v1.artifacts.deleteArtifact, { params: { artifactId: created.id } });
        await assert.rejects(
          manager.client.call(v1.artifacts.deleteArtifact, { params: { artifactId: created.id } }),
          (e: ApiError) => e.status === 404,
        );
        const listed = await viewer.client.call(v1.artifacts.listArtifacts, { params: { projectId }, query: { testRunId: runId } });
        assert.deepEqual(listed.items, []);
        assert.deepEqual((await viewer.client.call(v1.artifacts.getArtifacts, { query: { ids: created.id } })).missing, [created.id]);
        // Row first, blob later (DUR-8): the bytes are still on disk, and no longer reachable.
        assert.ok((await storedBlobs()).some((f) => f.endsWith(created.sha256)));
        const image = await rawGet(`/api/v1/images/${created.images[0]?.id}`, viewer.key);
        assert.equal(image.status, 404);
      });
    });

    async function rawGet(pathname: string, key: string, headers: Record<string, string> = {}) {
      return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        const request = http.get(
          `${server.url}${pathname}`,
          { headers: { accept: 'application/json', 'content-type': 'application/json', 'service.api-token': key, ...headers } },
          (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (c: Buffer) => chunks.push(c));
            response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
          },
        );
        request.on('error', reject);
      });
    }
  });

  describe(`[${dialect}] artifact limits`, () => {
    let server: TestServer;
    let projectId: string;
    let tester: TestUser;
    let manager: TestUser;
    before(async () => {
      server = await startTestServer(dialect, {
        ...(await blobEnv(dialect)),
        ATTEST_MAX_ARTIFACT_BYTES: String(1 * MiB),
        ATTEST_MAX_IMAGE_BYTES: String(64 * 1024),
        ATTEST_MAX_ARTIFACTS_PER_RUN: '3',
        ATTEST_MAX_IDS_PER_BATCH: '2',
        ATTEST_MAX_ANIMATION_PIXELS: String(10 * 40 * 30),
      });
      projectId = (await createProject(server)).id;
      tester = await createUser(server, ['tester'], { projects: [projectId] });
      manager = await createUser(server, ['manager'], { projects: [projectId] });
    });
    after(() => server.close());

    const tmpFiles = () => leftoverUploads(server);
    const log = (runId: string) => ({ testRunId: runId, kind: 'log', name: 'big.log' });

    test('a file of exactly ATTEST_MAX_ARTIFACT_BYTES is stored; one byte more is 413 with tmp/ empty and no row', async () => {
      const runId = (await startRun(tester.client, projectId)).id;
      const exact = await upload(server.url, tester.key, projectId, log(runId), { file: { bytes: randomBytes(MiB) } });
      assert.equal(exact.status, 201, JSON.stringify(exact.body));
      assert.equal(exact.body.size, MiB);
      const over = await upload(server.url, tester.key, projectId, log(runId), { file: { bytes: randomBytes(MiB + 1) } });
      assert.equal(over.status, 413);
      assert.equal(over.body.code, 'PAYLOAD_TOO_LARGE');
      assert.deepEqual(await tmpFiles(), []);
      const rows = await server.app.attest.db.selectFrom('artifacts').select('id').where('run_id', '=', runId).execute();
      assert.equal(rows.length, 1);
    });

    test('an animated GIF or WebP over ATTEST_MAX_ANIMATION_PIXELS (frames × pixels) is 422; within it, stored', async () => {
      for (const format of ['gif', 'webp'] as const) {
        const runId = (await startRun(tester.client, projectId)).id;
        const shot = { testRunId: runId, kind: 'screenshot', name: `a.${format}` };
        const within = await upload(server.url, tester.key, projectId, shot, {
          file: { bytes: await randomAnimation(format, 10, 40, 30) },
        });
        assert.equal(within.status, 201, JSON.stringify(within.body));
        const over = await upload(server.url, tester.key, projectId, shot, { file: { bytes: await randomAnimation(format, 11, 40, 30) } });
        assert.equal(over.status, 422, JSON.stringify(over.body));
        assert.equal(over.body.code, 'IMAGE_TOO_LARGE');
        assert.match(String(over.body.detail), /11 frames of 40×30/);
        assert.deepEqual(await tmpFiles(), []);
        const rows = await server.app.attest.db.selectFrom('artifacts').select('id').where('run_id', '=', runId).execute();
        assert.equal(rows.length, 1);
      }
    });

    test('an image over ATTEST_MAX_IMAGE_BYTES is 413 even though other files may be larger', async () => {
      const runId = (await startRun(tester.client, projectId)).id;
      const big = await randomPng(160, 160); // random pixels do not compress: about 77 KB
      assert.ok(big.length > 64 * 1024);
      const res = await upload(
        server.url,
        tester.key,
        projectId,
        { testRunId: runId, kind: 'screenshot', name: 's.png' },
        { file: { bytes: big } },
      );
      assert.equal(res.status, 413);
      assert.deepEqual(await tmpFiles(), []);
    });

    test('a declared Content-Length over the upload limit is refused with 413 before the body is sent', async () => {
      // The request sends its headers and not one byte of the body: any answer at all came before it.
      const response = await new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
        const request = http.request(`${server.url}/api/v1/projects/${projectId}/artifact`, {
          method: 'POST',
          headers: {
            accept: 'application/json',
            'service.api-token': tester.key,
            'content-type': 'multipart/form-data; boundary=x',
            'content-length': '10737418240',
          },
        });
        request.on('response', (res) => {
          let text = '';
          res.on('data', (c: Buffer) => {
            text += c.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
        });
        request.on('error', reject);
        request.flushHeaders(); // headers only: not one byte of the 10 GiB body
      });
      assert.equal(response.status, 413, response.text);
      assert.equal(JSON.parse(response.text).code, 'PAYLOAD_TOO_LARGE');
      assert.equal(response.headers.connection, 'close');
    });

    test('a run holds at most ATTEST_MAX_ARTIFACTS_PER_RUN artifacts (409 TOO_MANY_ARTIFACTS)', async () => {
      const runId = (await startRun(tester.client, projectId)).id;
      for (let i = 0; i < 3; i++) {
        assert.equal(
          (await upload(server.url, tester.key, projectId, log(runId), { file: { bytes: Buffer.from(`line ${i}`) } })).status,
          201,
        );
      }
      const fourth = await upload(server.url, tester.key, projectId, log(runId), { file: { bytes: Buffer.from('one too many') } });
      assert.equal(fourth.status, 409);
      assert.equal(fourth.body.code, 'TOO_MANY_ARTIFACTS');

      // The run's count (a counter on its row, migration 0007) goes down with a deletion: room for one again.
      const listing = await tester.client.call(v1.artifacts.listArtifacts, { params: { projectId }, query: { testRunId: runId } });
      await manager.client.call(v1.artifacts.deleteArtifact, { params: { artifactId: listing.items[0]?.id as string } });
      assert.equal(
        (await upload(server.url, tester.key, projectId, log(runId), { file: { bytes: Buffer.from('fits again') } })).status,
        201,
      );
      assert.equal(
        (await upload(server.url, tester.key, projectId, log(runId), { file: { bytes: Buffer.from('full again') } })).status,
        409,
      );
    });

    test('concurrent uploads to a run near its limit: exactly those that fit are stored', async () => {
      const runId = (await startRun(tester.client, projectId)).id;
      const statuses = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          upload(server.url, tester.key, projectId, log(runId), { file: { bytes: Buffer.from(`racer ${i}`) } }).then((r) => r.status),
        ),
      );
      assert.deepEqual(statuses.filter((s) => s === 201).length, 3, String(statuses));
      assert.ok(
        statuses.every((s) => s === 201 || s === 409),
        String(statuses),
      );
      const listing = await tester.client.call(v1.artifacts.listArtifacts, { params: { projectId }, query: { testRunId: runId } });
      assert.equal(listing.items.length, 3);
    });

    test('a metadata part over 64 KiB is a 413', async () => {
      const runId = (await startRun(tester.client, projectId)).id;
      const res = await upload(
        server.url,
        tester.key,
        projectId,
        { ...log(runId), name: 'n'.repeat(70 * 1024) },
        { file: { bytes: Buffer.from('x') } },
      );
      assert.equal(res.status, 413);
    });
  });
}
