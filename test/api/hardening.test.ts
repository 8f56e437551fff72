import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type ApiError, v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, unique } from '../helpers/factories.ts';
import { rawRequest } from '../helpers/http.ts';
import { isProblem } from '../helpers/problems.ts';
import { completeRun, startRun } from '../helpers/records.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** GET from a chosen loopback address, so tests can play clients on different hosts. */
async function getFrom(localAddress: string, url: string, headers: Record<string, string>): Promise<number> {
  return (await rawRequest(url, { headers, localAddress })).status;
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] hardening`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect, { ATTEST_AUTH_FAILURES_PER_MINUTE: '5', ATTEST_LEGACY_KEYS_SUNSET: '2027-06-30' });
    });
    after(() => server.close());

    describe('POST /users/{email}/apikeys', () => {
      test('a read-only key can neither mint itself a full key nor set its password', async () => {
        const user = await createUser(server, ['tester']);
        const readOnly = await server.admin.client.call(v1.users.createApiKey, {
          params: { email: user.email },
          body: { name: 'ro', scope: 'read' },
        });
        const client = server.client(readOnly.key);
        await assert.rejects(
          client.call(v1.users.createApiKey, { params: { email: user.email }, body: { name: 'escalate', scope: 'full' } }),
          isProblem(403, 'FORBIDDEN'),
        );
        await assert.rejects(
          client.call(v1.users.setUserPassword, { params: { email: user.email }, body: { password: 'correct horse battery' } }),
          isProblem(403, 'FORBIDDEN'),
        );
        await assert.rejects(
          client.call(v1.users.revokeApiKey, { params: { email: user.email, keyId: user.keyId } }),
          isProblem(403, 'FORBIDDEN'),
        );
        const keys = await server.admin.client.call(v1.users.listApiKeys, { params: { email: user.email } });
        assert.deepEqual(keys.items.map((k) => k.name).sort(), ['ro', 'test']);
        assert.equal((await client.call(v1.meta.getMe)).email, user.email, 'it still reads');
      });
    });

    describe('authentication throttling', () => {
      test("guessing a user's old-format key from elsewhere never locks out the correct pair", async () => {
        const user = await createUser(server, ['viewer']);
        const legacy = await server.admin.client.call(v1.users.createApiKey, {
          params: { email: user.email },
          body: { name: 'old', format: 'legacy' },
        });
        const url = `${server.url}/api/v1/me`;
        for (let i = 0; i < 8; i++) {
          await getFrom('127.0.0.3', url, { 'service.api-token': randomUUID(), 'service.user': user.email, accept: 'application/json' });
        }
        const guessing = await getFrom('127.0.0.3', url, { 'service.api-token': randomUUID(), 'service.user': user.email });
        assert.equal(guessing, 429, 'the guesser is throttled');
        const owner = await getFrom('127.0.0.4', url, {
          'service.api-token': legacy.key,
          'service.user': user.email,
          accept: 'application/json',
        });
        assert.equal(owner, 200, 'the owner, elsewhere, is not');
      });
    });

    describe('old-format keys', () => {
      test('announce the configured end of old-format keys in a Sunset header', async () => {
        const user = await createUser(server, ['viewer']);
        const legacy = await server.admin.client.call(v1.users.createApiKey, {
          params: { email: user.email },
          body: { name: 'old', format: 'legacy' },
        });
        const response = await server.client(legacy.key, user.email).fetchRaw('GET', '/me');
        assert.equal(response.status, 200);
        assert.equal(response.headers.get('sunset'), 'Wed, 30 Jun 2027 00:00:00 GMT');
        const standard = await server.client(user.key).fetchRaw('GET', '/me');
        assert.equal(standard.headers.get('sunset'), null);
      });
    });

    describe('POST /testmgmt/tests', () => {
      test('refuses a Gherkin text body holding U+0000 with a 400 naming the body', async () => {
        const project = await createProject(server);
        const response = await server.admin.client.fetchRaw('POST', `/testmgmt/tests?projectId=${project.id}`, {
          headers: { 'content-type': 'text/x-gherkin' },
          body: 'Feature: login\n  Scenario: a\0b\n    Given a page\n',
        });
        assert.equal(response.status, 400);
        const problem = (await response.json()) as { errors: { pointer: string }[] };
        assert.equal(problem.errors[0]?.pointer, '/body');
      });
    });

    describe('POST /testmgmt/testruns', () => {
      test('answers 400, not 500, for a leap-second timestamp that no date can hold', async () => {
        const project = await createProject(server);
        await assert.rejects(
          server.admin.client.call(v1.runs.createRun, {
            body: { projectId: project.id, name: 'x', verdict: 'passed', startedAt: '2016-12-31T23:59:60Z' },
          }),
          (e: ApiError) => e.status === 400 && JSON.stringify(e.problem).includes('/body/startedAt'),
        );
        await assert.rejects(
          server.admin.client.call(v1.runs.listRuns, { query: { projectId: project.id, from: '2016-12-31T23:59:60Z' } }),
          isProblem(400, 'INVALID_INPUT'),
        );
      });
    });

    describe('GET /testmgmt/testruns/{testRunId}/results', () => {
      test('accepts ids written in upper case, like the other documented endpoints', async () => {
        const project = await createProject(server);
        const run = await startRun(server.admin.client, project.id, unique('run-'));
        await completeRun(server.admin.client, run.id);
        const results = await server.admin.client.call(v1.results.getResults, { params: { testRunId: run.id.toUpperCase() } });
        assert.equal(results.testRunId, run.id);
        const listed = await server.admin.client.call(v1.runs.listRuns, { query: { projectId: project.id.toUpperCase() } });
        assert.deepEqual(
          listed.items.map((r) => r.id),
          [run.id],
        );
        // A body's id fields, and each id of a comma-separated list, are lower-cased too.
        const created = await server.admin.client.call(v1.runs.createRun, { body: { projectId: project.id.toUpperCase(), name: 'upper' } });
        assert.equal(created.projectId, project.id);
        const unknown = [randomUUID(), randomUUID()];
        const details = await server.admin.client.call(v1.artifacts.getArtifacts, {
          query: { ids: unknown.map((id) => id.toUpperCase()).join(',') },
        });
        assert.deepEqual(details.missing, unknown);
      });
    });
  });
}
