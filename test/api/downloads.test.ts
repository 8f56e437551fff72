import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type TestUser, twoProjects, unique } from '../helpers/factories.ts';
import { jsonHeaders, rawRequest } from '../helpers/http.ts';
import { apng, randomGif } from '../helpers/png.ts';
import { blobEnv } from '../helpers/s3.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { upload } from '../helpers/uploads.ts';

const SANDBOX_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox";

/** How downloads save (`curl -OJ`, browsers) and how animated PNGs count against FILE-2's limits. */
for (const dialect of DIALECTS) {
  describe(`[${dialect}] downloads and APNG`, () => {
    let server: TestServer;
    let projectA: string;
    let tester: TestUser;

    before(async () => {
      // On PostgreSQL the blobs go to an S3-compatible bucket (SCALE-1); on SQLite to the data folder.
      server = await startTestServer(dialect, await blobEnv(dialect));
      ({ projectA, tester } = await twoProjects(server));
    });
    after(() => server.close());

    const startRun = async () => (await tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: unique('run-') } })).id;
    const send = (runId: string, kind: string, name: string, bytes: Uint8Array) =>
      upload(server.url, tester.key, projectA, { testRunId: runId, kind, name }, { file: { bytes, type: 'application/octet-stream' } });
    const content = (artifactId: unknown) =>
      rawRequest(`${server.url}/api/v1/artifact/artifacts/${String(artifactId)}/content`, { headers: jsonHeaders(tester.key) });

    describe('GET /artifact/artifacts/{artifactId}/content', () => {
      test('text kinds the bytes cannot tell take their type from the name, and always download as attachments', async () => {
        const runId = await startRun();
        const cases: [string, string, string][] = [
          ['log', 'run.log', 'text/plain'],
          ['file', 'notes.txt', 'text/plain'],
          ['file', 'report.JSON', 'application/json'],
          ['file', 'junit.xml', 'application/xml'],
          ['file', 'report.html', 'text/html'],
          ['file', 'table.csv', 'text/csv'],
          ['file', 'README.md', 'text/markdown'],
          ['file', 'dump.bin', 'application/octet-stream'],
        ];
        for (const [kind, name, type] of cases) {
          const created = await send(runId, kind, name, Buffer.from(`<p>${name}</p>\nline two\n`));
          assert.equal(created.status, 201, JSON.stringify(created.body));
          assert.equal(created.body.contentType, type, name);
          const raw = await content(created.body.id);
          assert.equal(raw.status, 200);
          assert.equal(String(raw.headers['content-type']).split(';')[0], type, name);
          assert.equal(raw.headers['content-disposition'], `attachment; filename="${name}"; filename*=UTF-8''${name}`);
          assert.equal(raw.headers['content-security-policy'], SANDBOX_CSP);
          assert.equal(raw.headers['x-content-type-options'], 'nosniff');
        }
      });

      test('the plain filename= is an ASCII fallback: accents dropped, quotes, percent signs and other characters replaced', async () => {
        const runId = await startRun();
        const created = await send(runId, 'log', 'résumé "final" 50% 日本.log', Buffer.from('text'));
        assert.equal(created.status, 201, JSON.stringify(created.body));
        const raw = await content(created.body.id);
        assert.equal(
          raw.headers['content-disposition'],
          `attachment; filename="resume _final_ 50_ __.log"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22final%22%2050%25%20%E6%97%A5%E6%9C%AC.log`,
        );
      });

      test('a GIF/HTML polyglot named poly.html is served inline as image/gif under the name poly.gif', async () => {
        const runId = await startRun();
        const polyglot = Buffer.concat([await randomGif(), Buffer.from('<html><script>alert(1)</script></html>')]);
        for (const kind of ['file', 'screenshot']) {
          const created = await send(runId, kind, 'poly.html', polyglot);
          assert.equal(created.status, 201, JSON.stringify(created.body));
          const raw = await content(created.body.id);
          assert.equal(raw.headers['content-type'], 'image/gif');
          assert.equal(raw.headers['content-disposition'], `inline; filename="poly.gif"; filename*=UTF-8''poly.gif`, kind);
          assert.equal(raw.headers['content-security-policy'], SANDBOX_CSP);
        }
      });
    });

    describe('animated PNG (FILE-2)', () => {
      test('a 100-frame 5000×5000 APNG is refused with 422, even when its acTL announces a single frame', async () => {
        const runId = await startRun();
        for (const announced of [100, 1]) {
          const bomb = apng(5000, 5000, 100, { announced, pixels: false });
          const refused = await send(runId, 'screenshot', 'bomb.png', bomb);
          assert.equal(refused.status, 422, JSON.stringify(refused.body));
          assert.equal(refused.body.code, 'IMAGE_TOO_LARGE');
          assert.match(String(refused.body.detail), /frames of 5000×5000 pixels; the limit is 500000000 pixels over all frames/);
        }
        const listed = await tester.client.call(v1.artifacts.listArtifacts, {
          params: { projectId: projectA },
          query: { testRunId: runId },
        });
        assert.equal(listed.items.length, 0, 'nothing stored');
      });

      test('an APNG under the limits is accepted as a screenshot', async () => {
        const runId = await startRun();
        const created = await send(runId, 'screenshot', 'small.png', apng(32, 24, 5));
        assert.equal(created.status, 201, JSON.stringify(created.body));
        assert.equal(created.body.contentType, 'image/png');
      });
    });
  });
}
