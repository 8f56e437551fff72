import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import zlib from 'node:zlib';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { twoProjects } from '../helpers/factories.ts';
import { databaseSettled, startTestServer, type TestServer } from '../helpers/server.ts';

// PERF-2: a completed run's results are answered from bytes built once, compressed as the client
// accepts, with a strong ETag; access is checked on every request; runs not completed stay live.

const steps = (n: number, prefix: string) =>
  Array.from({ length: n }, (_, i) => ({
    key: `${prefix}-${i}`,
    title: `Step ${i}`,
    status: 'passed' as const,
    cells: [{ key: `${prefix}-${i}-c`, name: 'actual', text: `Seen on step ${i}: ${'é'.repeat(20)}` }],
  }));

for (const dialect of DIALECTS) {
  describe(`[${dialect}] completed results from kept bytes (PERF-2)`, () => {
    let server: TestServer;
    let cast: Awaited<ReturnType<typeof twoProjects>>;
    before(async () => {
      server = await startTestServer(dialect);
      cast = await twoProjects(server);
    });
    after(() => server?.close());

    const url = (runId: string, query = '') => `${server.url}/api/v1/testmgmt/testruns/${runId}/results${query}`;

    async function completedRun(n = 40) {
      const run = await cast.tester.client.call(v1.runs.createRun, { body: { projectId: cast.projectA, name: 'kept' } });
      await cast.tester.client.call(v1.results.appendResults, { params: { testRunId: run.id }, body: { steps: steps(n, 's') } });
      await cast.tester.client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: 'passed' } });
      return run.id;
    }

    test('identity, gzip and brotli decode to the same results; the second request runs no query', async () => {
      const runId = await completedRun();
      const first = await fetch(url(runId), { headers: { 'service.api-token': cast.viewer.key, 'accept-encoding': 'identity' } });
      assert.equal(first.status, 200);
      const identity = await first.text();
      const expected = await cast.viewer.client.call(v1.results.getResults, { params: { testRunId: runId } });
      assert.deepEqual(JSON.parse(identity), expected);
      assert.equal(expected.steps.length, 40);
      assert.match(first.headers.get('etag') ?? '', /^"[A-Za-z0-9_-]{32}"$/);
      assert.match(first.headers.get('vary') ?? '', /accept-encoding/i);

      for (const [encoding, decode] of [
        ['gzip', zlib.gunzipSync],
        ['br', zlib.brotliDecompressSync],
      ] as const) {
        const answer = await rawBytes(url(runId), { 'service.api-token': cast.viewer.key, 'accept-encoding': encoding });
        assert.equal(answer.status, 200);
        assert.equal(answer.headers['content-encoding'], encoding);
        assert.notEqual(answer.headers.etag, first.headers.get('etag'), 'each encoding has its own strong ETag');
        assert.equal(decode(answer.body).toString('utf8'), identity);
      }
      // q-values decide: gzip preferred over a brotli the client rates lower.
      const preferred = await rawBytes(url(runId), { 'service.api-token': cast.viewer.key, 'accept-encoding': 'br;q=0.1, gzip;q=0.9' });
      assert.equal(preferred.headers['content-encoding'], 'gzip');

      await databaseSettled(server);
      const before = server.app.attest.database.stats.statements;
      const again = await fetch(url(runId), { headers: { 'service.api-token': cast.viewer.key } });
      assert.equal(await again.text(), identity);
      // The kept answer knows its run's project: the owner check needs no query, and no row is read again.
      assert.equal(server.app.attest.database.stats.statements - before, 0);
    });

    test('If-None-Match with the ETag answers 304 with no body', async () => {
      const runId = await completedRun(5);
      const first = await fetch(url(runId), { headers: { 'service.api-token': cast.viewer.key } });
      await first.arrayBuffer();
      const etag = first.headers.get('etag') as string;
      const conditional = await fetch(url(runId), { headers: { 'service.api-token': cast.viewer.key, 'if-none-match': etag } });
      assert.equal(conditional.status, 304);
      assert.equal((await conditional.arrayBuffer()).byteLength, 0);
      const otherTag = await fetch(url(runId), { headers: { 'service.api-token': cast.viewer.key, 'if-none-match': '"something-else"' } });
      assert.equal(otherTag.status, 200);
      await otherTag.arrayBuffer();
    });

    test('a caller who cannot see the project gets 404 even when the answer is kept', async () => {
      const runId = await completedRun(3);
      assert.equal((await fetch(url(runId), { headers: { 'service.api-token': cast.viewer.key } })).status, 200);
      const outsider = await fetch(url(runId), { headers: { 'service.api-token': cast.outsider.key } });
      assert.equal(outsider.status, 404);
      assert.doesNotMatch(await outsider.text(), /Step 0/);
      const anonymous = await fetch(url(runId));
      assert.equal(anonymous.status, 401);
    });

    test('a kept run that is deleted answers 404 on the very next request', async () => {
      const runId = await completedRun(3);
      assert.equal((await fetch(url(runId), { headers: { 'service.api-token': cast.viewer.key } })).status, 200);
      await server.admin.client.call(v1.runs.deleteRun, { params: { testRunId: runId } });
      const gone = await fetch(url(runId), { headers: { 'service.api-token': cast.viewer.key } });
      assert.equal(gone.status, 404);
      assert.doesNotMatch(await gone.text(), /Step 0/);
    });

    test('a running run is read live: every append is in the very next partial answer, and completion shows at once', async () => {
      const run = await cast.tester.client.call(v1.runs.createRun, { body: { projectId: cast.projectA, name: 'live' } });
      for (let i = 1; i <= 3; i++) {
        await cast.tester.client.call(v1.results.appendResults, { params: { testRunId: run.id }, body: { steps: steps(1, `live${i}`) } });
        const partial = await cast.viewer.client.call(v1.results.getResults, { params: { testRunId: run.id }, query: { partial: true } });
        assert.equal(partial.steps.length, i);
        assert.equal(partial.status, 'running');
      }
      const early = await fetch(url(run.id), { headers: { 'service.api-token': cast.viewer.key } });
      assert.equal(early.status, 409);
      await cast.tester.client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: 'failed' } });
      const final = await cast.viewer.client.call(v1.results.getResults, { params: { testRunId: run.id } });
      assert.equal(final.status, 'completed');
      assert.equal(final.verdict, 'failed');
      assert.equal(final.steps.length, 3);
    });

    test('the cache keeps within its byte bound', async () => {
      const kept = server.app.attest.frozenResults;
      assert.ok(kept.size.bytes <= server.config.resultsCacheBytes);
      assert.ok(kept.size.entries > 0);
    });
  });
}

/** A GET whose body is returned as raw bytes, not decoded (fetch would undo Content-Encoding). */
async function rawBytes(url: string, headers: Record<string, string>) {
  const { request } = await import('node:http');
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
    request(url, { headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}
