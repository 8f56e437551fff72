import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type TestUser, twoProjects, unique } from '../helpers/factories.ts';
import { jsonHeaders, rawRequest } from '../helpers/http.ts';
import { randomPng } from '../helpers/png.ts';
import { assertProblem } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { upload } from '../helpers/uploads.ts';

/**
 * Inputs that default sensibly and errors that say what to do: the answers a new user meets in
 * the first hour, over real HTTP with exact bodies (key order matters to some of these tests, so
 * the JSON is written by hand rather than by the client).
 */
for (const dialect of DIALECTS) {
  describe(`[${dialect}] guidance`, () => {
    let server: TestServer;
    let projectA: string;
    let tester: TestUser;

    before(async () => {
      server = await startTestServer(dialect, { ATTEST_BULK_BODY_LIMIT: String(64 * 1024) });
      ({ projectA, tester } = await twoProjects(server));
    });
    after(() => server.close());

    const post = (path: string, body: string, headers: Record<string, string> = jsonHeaders(tester.key)) =>
      rawRequest(`${server.url}/api/v1${path}`, { method: 'POST', headers, body });
    const startRun = async () => (await tester.client.call(v1.runs.createRun, { body: { projectId: projectA, name: unique('run-') } })).id;

    describe('a text cell without mediaType', () => {
      test('is stored as text/plain: run-level, inline in a step, and in a run created with its results', async () => {
        const runId = await startRun();
        const appended = await post(
          `/testmgmt/testruns/${runId}/results`,
          '{"steps":[{"title":"Open","status":"passed","cells":[{"name":"log","text":"inline"}]}],"cells":[{"name":"note","text":"plain"}]}',
        );
        assert.equal(appended.status, 200, appended.text);
        const results = await tester.client.call(v1.results.getResults, { params: { testRunId: runId }, query: { partial: true } });
        assert.deepEqual([results.cells[0]?.mediaType, results.steps[0]?.cells[0]?.mediaType], ['text/plain', 'text/plain']);

        const created = await post(
          '/testmgmt/testruns',
          JSON.stringify({
            projectId: projectA,
            name: unique('finished-'),
            verdict: 'passed',
            results: { steps: [{ title: 'Only', status: 'passed', cells: [{ name: 'a', text: 'b' }] }], cells: [{ name: 'c', text: 'd' }] },
          }),
        );
        assert.equal(created.status, 201, created.text);
        const finished = await tester.client.call(v1.results.getResults, { params: { testRunId: String(created.json.id) } });
        assert.deepEqual([finished.cells[0]?.mediaType, finished.steps[0]?.cells[0]?.mediaType], ['text/plain', 'text/plain']);
      });
    });

    describe('idempotency keys compare content, not key order (RFC 8785)', () => {
      test('a results post retried with its keys in another order replays the first receipt', async () => {
        const runId = await startRun();
        const first = await post(
          `/testmgmt/testruns/${runId}/results`,
          '{"idempotencyKey":"batch","steps":[{"title":"One","status":"passed","durationMs":5}],"cells":[{"name":"n","text":"t","mediaType":"text/plain"}]}',
        );
        assert.equal(first.status, 200, first.text);
        const retry = await post(
          `/testmgmt/testruns/${runId}/results`,
          '{"cells":[{"mediaType":"text/plain","text":"t","name":"n"}],"steps":[{"durationMs":5,"status":"passed","title":"One"}],"idempotencyKey":"batch"}',
        );
        assert.equal(retry.status, 200, retry.text);
        assert.deepEqual(retry.json, first.json, 'the stored receipt');
        const results = await tester.client.call(v1.results.getResults, { params: { testRunId: runId }, query: { partial: true } });
        assert.deepEqual([results.steps.length, results.cells.length], [1, 1], 'nothing stored twice');
        // Other content under the same key is still a conflict.
        const other = await post(
          `/testmgmt/testruns/${runId}/results`,
          '{"idempotencyKey":"batch","steps":[{"status":"passed","title":"Two"}]}',
        );
        assertProblem(other, 409, 'STATE_CONFLICT');
      });

      test('a run creation retried with its keys in another order answers 200 with the first run', async () => {
        const name = unique('ci-');
        const first = await post(
          '/testmgmt/testruns',
          `{"projectId":"${projectA}","name":"${name}","branch":"main","idempotencyKey":"upload-1"}`,
        );
        assert.equal(first.status, 201, first.text);
        const retry = await post(
          '/testmgmt/testruns',
          `{"idempotencyKey":"upload-1","branch":"main","name":"${name}","projectId":"${projectA}"}`,
        );
        assert.equal(retry.status, 200, retry.text);
        assert.equal(retry.json.id, first.json.id);
        const other = await post(
          '/testmgmt/testruns',
          `{"idempotencyKey":"upload-1","branch":"dev","name":"${name}","projectId":"${projectA}"}`,
        );
        assertProblem(other, 409, 'STATE_CONFLICT');
      });
    });

    describe('errors that say what to do', () => {
      test('a value outside an enumeration is ONE field error listing the values allowed', async () => {
        const runId = await startRun();
        const raw = await post(`/testmgmt/testruns/${runId}/results`, '{"steps":[{"title":"One","status":"pass"}]}');
        assertProblem(raw, 400, 'INVALID_INPUT');
        assert.deepEqual(raw.json.errors, [
          { pointer: '/body/steps/0/status', message: 'must be one of: passed, failed, broken, skipped, running' },
        ]);
        assert.equal(raw.json.detail, '/body/steps/0/status: must be one of: passed, failed, broken, skipped, running');
        // A wrong type is told the same way, and a nullable enumeration names null too.
        const typed = await post(`/testmgmt/testruns/${runId}/results`, '{"cells":[{"name":"n","text":"t","mediaType":5}]}');
        assert.deepEqual(typed.json.errors, [{ pointer: '/body/cells/0/mediaType', message: 'must be one of: text/plain, text/markdown' }]);
      });

      test('a 415 names the Content-Type the operation takes', async () => {
        const json = await post('/projects', '{"key":"X","name":"x"}', { ...jsonHeaders(server.admin.key), 'content-type': 'text/plain' });
        assertProblem(json, 415, 'UNSUPPORTED_MEDIA_TYPE');
        assert.match(String(json.json.detail), /Content-Type: application\/json\b/);
        assert.doesNotMatch(String(json.json.detail), /multipart/);

        const gherkin = await post('/testmgmt/tests', 'Feature: x', { ...jsonHeaders(tester.key), 'content-type': 'text/csv' });
        assertProblem(gherkin, 415, 'UNSUPPORTED_MEDIA_TYPE');
        assert.match(String(gherkin.json.detail), /application\/json or text\/x-gherkin/);

        const file = await post(`/projects/${projectA}/artifact`, '{"testRunId":"x"}', jsonHeaders(tester.key));
        assertProblem(file, 415, 'UNSUPPORTED_MEDIA_TYPE');
        assert.match(String(file.json.detail), /Content-Type: multipart\/form-data/);
      });

      test('a 413 gives the limit in bytes and what to do', async () => {
        const runId = await startRun();
        const bulk = await post(
          `/testmgmt/testruns/${runId}/results`,
          JSON.stringify({ cells: [{ name: 'huge', text: 'x'.repeat(server.config.bulkBodyLimit) }] }),
        );
        assertProblem(bulk, 413, 'PAYLOAD_TOO_LARGE');
        assert.match(String(bulk.json.detail), new RegExp(`limit of ${server.config.bulkBodyLimit} bytes; split .* several posts`));

        const plain = await post(
          '/projects',
          JSON.stringify({ key: 'HUGE', name: 'x', description: 'y'.repeat(server.config.bodyLimit) }),
          {
            ...jsonHeaders(server.admin.key),
          },
        );
        assertProblem(plain, 413, 'PAYLOAD_TOO_LARGE');
        assert.match(String(plain.json.detail), new RegExp(`limit of ${server.config.bodyLimit} bytes; send less in one request`));

        const image = await upload(
          server.url,
          tester.key,
          projectA,
          { testRunId: runId, kind: 'screenshot', name: 'big.png' },
          { file: { bytes: Buffer.concat([await randomPng(), Buffer.alloc(server.config.maxImageBytes)]) } },
        );
        assert.equal(image.status, 413);
        assert.match(String(image.body.detail), new RegExp(`at most ${server.config.maxImageBytes} bytes; send a smaller`));
      });

      test('the one 401 names both headers and when service.user is needed, identically for every cause (AUTH-10)', async () => {
        const causes: Record<string, string>[] = [
          {},
          { 'service.api-token': 'not-a-key' },
          { 'service.api-token': randomUUID() },
          { 'service.api-token': randomUUID(), 'service.user': tester.email },
        ];
        const details = new Set<string>();
        for (const headers of causes) {
          const raw = await rawRequest(`${server.url}/api/v1/me`, { headers: { accept: 'application/json', ...headers } });
          assertProblem(raw, 401, 'UNAUTHENTICATED');
          const { instance: _instance, ...body } = raw.json;
          details.add(JSON.stringify(body));
        }
        assert.equal(details.size, 1, [...details].join('\n'));
        const detail = String(JSON.parse([...details][0] as string).detail);
        assert.match(detail, /service\.api-token/);
        assert.match(detail, /old-format key .* service\.user/);
      });
    });
  });
}
