import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import zlib from 'node:zlib';
import { v1Endpoints } from '../../src/api/v1/index.ts';
import { v1 } from '../../src/client/index.ts';
import { COMPRESSION_THRESHOLD, mayBeLarge } from '../../src/server/plugins/compression.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser } from '../helpers/factories.ts';
import { startRun } from '../helpers/records.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// Large JSON answers go out compressed when the client accepts it (every large JSON
// answer, not only the kept results of PERF-2); small ones and stored content (downloads, with
// their lengths and byte ranges) go out as they are.

/** A GET whose body is read as the bytes on the wire (node:http decodes nothing). */
function get(url: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers, agent: false }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
        response.on('error', reject);
      })
      .on('error', reject);
  });
}

const decode = (encoding: string | undefined, body: Buffer) =>
  encoding === 'br' ? zlib.brotliDecompressSync(body) : encoding === 'gzip' ? zlib.gunzipSync(body) : body;

describe('which answers may be large', () => {
  test('pages, results and the OpenAPI document may; one device, one run and a health answer may not', () => {
    const large = (operationId: string) => {
      const endpoint = v1Endpoints.find((e) => e.operationId === operationId);
      assert.ok(endpoint, operationId);
      return Object.values(endpoint.responses).some(mayBeLarge);
    };
    for (const id of ['listRuns', 'listDevices', 'getResults', 'appendResults', 'getArtifacts', 'getOpenApi', 'listAuditLog'])
      assert.equal(large(id), true, id);
    for (const id of ['getDevice', 'getRun', 'getHealth', 'getProject', 'createRun']) assert.equal(large(id), false, id);
  });
});

for (const dialect of DIALECTS) {
  describe(`[${dialect}] compressed answers`, () => {
    let server: TestServer;
    let projectId: string;
    let tester: TestUser;
    let runId: string;
    let resultsUrl: string;

    before(async () => {
      server = await startTestServer(dialect);
      projectId = (await createProject(server, 'Compression')).id;
      tester = await createUser(server, ['tester'], { projects: [projectId] });
      runId = (await startRun(tester.client, projectId)).id;
      const steps = Array.from({ length: 200 }, (_, i) => ({ key: `s${i}`, title: `Step ${i}: open the page`, status: 'passed' as const }));
      await tester.client.call(v1.results.appendResults, { params: { testRunId: runId }, body: { steps } });
      resultsUrl = `${server.url}/api/v1/testmgmt/testruns/${runId}/results?partial=true`;
    });
    after(() => server.close());

    const headers = (extra: Record<string, string> = {}) => ({ 'service.api-token': tester.key, accept: 'application/json', ...extra });

    test('a large JSON answer is br or gzip as accepted, and decodes to the identity answer', async () => {
      const plain = await get(resultsUrl, headers());
      assert.equal(plain.status, 200);
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.ok(plain.body.length >= COMPRESSION_THRESHOLD, `the answer is large: ${plain.body.length} bytes`);
      assert.equal(Number(plain.headers['content-length']), plain.body.length);

      for (const [accept, expected] of [
        ['gzip, deflate, br', 'br'],
        ['gzip', 'gzip'],
        ['br;q=0.5, gzip', 'gzip'],
      ] as const) {
        const packed = await get(resultsUrl, headers({ 'accept-encoding': accept }));
        assert.equal(packed.status, 200);
        assert.equal(packed.headers['content-encoding'], expected, accept);
        assert.match(String(packed.headers.vary), /accept-encoding/i);
        assert.ok(packed.body.length < plain.body.length / 3, `${expected}: ${packed.body.length} of ${plain.body.length} bytes`);
        assert.deepEqual(JSON.parse(decode(expected, packed.body).toString('utf8')), JSON.parse(plain.body.toString('utf8')));
      }
      const identity = await get(resultsUrl, headers({ 'accept-encoding': 'identity' }));
      assert.equal(identity.headers['content-encoding'], undefined);
    });

    test('a small JSON answer goes out as it is', async () => {
      const me = await get(`${server.url}/api/v1/me`, headers({ 'accept-encoding': 'br, gzip' }));
      assert.equal(me.status, 200);
      assert.equal(me.headers['content-encoding'], undefined);
      assert.ok(me.body.length < COMPRESSION_THRESHOLD);
      assert.equal(JSON.parse(me.body.toString('utf8')).email, tester.email);
    });

    test('stored content is sent as stored: its length, its ETag and its byte ranges', async () => {
      const text = Buffer.from('a line of a long console log\n'.repeat(2000));
      const artifact = await tester.client.upload(projectId, { testRunId: runId, kind: 'log', name: 'console.log' }, [
        { name: 'console.log', bytes: text, type: 'text/plain' },
      ]);
      const url = `${server.url}/api/v1/artifact/artifacts/${String(artifact.id)}/content`;
      const whole = await get(url, { 'service.api-token': tester.key, 'accept-encoding': 'br, gzip' });
      assert.equal(whole.status, 200);
      assert.equal(whole.headers['content-encoding'], undefined);
      assert.equal(Number(whole.headers['content-length']), text.length);
      assert.deepEqual(whole.body, text);
      const part = await get(url, { 'service.api-token': tester.key, 'accept-encoding': 'gzip', range: 'bytes=10-19' });
      assert.equal(part.status, 206);
      assert.equal(part.headers['content-encoding'], undefined);
      assert.deepEqual(part.body, text.subarray(10, 20));
    });
  });
}
