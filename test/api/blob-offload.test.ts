import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { blobFile, sha256 } from '../helpers/blob-files.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { startRun } from '../helpers/records.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { upload } from '../helpers/uploads.ts';

// PERF-4: behind nginx (X-Accel-Redirect) or a server with X-Sendfile, Attest checks access, sets
// every header and names the file; the proxy sends the bytes.

function get(url: string, key: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
    http
      .get(url, { headers: { 'service.api-token': key, ...headers } }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (c: Buffer) => chunks.push(c));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
      })
      .on('error', reject);
  });
}

for (const dialect of DIALECTS) {
  for (const mode of ['x-accel-redirect', 'x-sendfile'] as const) {
    describe(`[${dialect}] ATTEST_BLOB_OFFLOAD=${mode} (PERF-4)`, () => {
      let server: TestServer;
      let member: TestUser;
      let outsider: TestUser;
      let projectId: string;
      before(async () => {
        server = await startTestServer(dialect, { ATTEST_BLOB_OFFLOAD: mode, ATTEST_BLOB_OFFLOAD_PREFIX: '/protected/' });
        projectId = (await createProject(server)).id;
        member = await createUser(server, ['tester'], { projects: [projectId] });
        outsider = await createUser(server, ['tester'], { projects: [(await createProject(server)).id] });
      });
      after(() => server?.close());

      test('the answer names the file for the proxy, carries every header and no body; access is still checked', async () => {
        const png = await randomPng();
        const run = await startRun(member.client, projectId);
        const uploaded = await upload(
          server.url,
          member.key,
          projectId,
          { testRunId: run.id, kind: 'screenshot', name: 's.png' },
          { file: { bytes: png } },
        );
        assert.equal(uploaded.status, 201);
        const imageId = (uploaded.body.images as { id: string }[])[0]?.id as string;
        const digest = sha256(png);
        const url = `${server.url}/api/v1/images/${imageId}`;

        const answer = await get(url, member.key, { range: 'bytes=0-9' });
        assert.equal(answer.status, 200, 'ranges are the proxy’s to serve');
        assert.equal(answer.body.length, 0);
        const expected =
          mode === 'x-sendfile' ? blobFile(server.dataDir, digest) : `/protected/${digest.slice(0, 2)}/${digest.slice(2, 4)}/${digest}`;
        assert.equal(answer.headers[mode], expected);
        assert.equal(answer.headers['content-type'], 'image/png');
        assert.equal(answer.headers.etag, `"${digest}"`);
        assert.equal(answer.headers['x-content-type-options'], 'nosniff');
        assert.match(String(answer.headers['content-disposition']), /^inline; filename=/);

        const notModified = await get(url, member.key, { 'if-none-match': `"${digest}"` });
        assert.equal(notModified.status, 304);
        assert.equal(notModified.headers[mode], undefined);

        const refused = await get(url, outsider.key);
        assert.equal(refused.status, 404);
        assert.equal(refused.headers[mode], undefined);
      });
    });
  }
}
