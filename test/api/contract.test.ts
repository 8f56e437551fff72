import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, unique } from '../helpers/factories.ts';
import { jsonHeaders, rawRequest } from '../helpers/http.ts';
import { waitForLogLine } from '../helpers/logs.ts';
import { assertProblem } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// SPEC-1.1 (versioning and addressing), SPEC-1.2 (headers) and the error contract (ERR-1,
// ERR-2, ERR-5, SEC-8): what every client may rely on whatever the endpoint.

/** One raw HTTP exchange: exact headers (Host included), exact body bytes, nothing added. */
const exchange = (
  server: TestServer,
  method: string,
  path: string,
  headers: Record<string, string | number> = {},
  body?: string | Buffer,
) => rawRequest(`${server.url}${path}`, { method, headers, body });

const json = jsonHeaders;

for (const dialect of DIALECTS) {
  describe(`[${dialect}] the fixed contract`, () => {
    let server: TestServer;
    let key: string;
    before(async () => {
      server = await startTestServer(dialect);
      key = server.admin.key;
    });
    after(() => server.close());

    describe('GET /api', () => {
      test('is open and lists the versions with absolute URLs built from the request host', async () => {
        const raw = await exchange(server, 'GET', '/api', { host: 'attest.example.org:8443', accept: 'application/json' });
        assert.equal(raw.status, 200);
        assert.deepEqual(raw.json, {
          versions: [{ version: 'v1', url: 'http://attest.example.org:8443/api/v1', status: 'current' }],
          current: 'v1',
        });
      });

      test('every listed URL answers: the version root leads to the API', async () => {
        const raw = await exchange(server, 'GET', '/api', { accept: 'application/json' });
        const url = (raw.json.versions as { url: string }[])[0]?.url;
        assert.equal(url, `${server.url}/api/v1`);
        const health = await fetch(`${url}/health`);
        assert.equal(health.status, 200);
      });
    });

    describe('unknown API versions', () => {
      test('/api/v2/... answers 404 with a problem naming the supported versions', async () => {
        for (const path of ['/api/v2/projects', '/api/v2', '/api/v0/health', '/api/v10/users/x@example.test', '/api/latest/projects']) {
          const raw = await exchange(server, 'GET', path, json(key));
          assertProblem(raw, 404, 'UNSUPPORTED_API_VERSION');
          assert.deepEqual(raw.json.supportedVersions, ['v1'], path);
          assert.match(String(raw.json.detail), /v1/);
        }
        const post = await exchange(server, 'POST', '/api/v2/testmgmt/tests', json(key), '{}');
        assertProblem(post, 404, 'UNSUPPORTED_API_VERSION');
      });
    });

    describe('request headers (SPEC-1.2)', () => {
      test('Content-Type: application/json with an empty body is fine on GET and DELETE', async () => {
        const project = await createProject(server);
        const deviceId = unique('dev-');
        await server.admin.client.call(v1.devices.registerDevice, { body: { id: deviceId, name: 'n', platform: 'web' } });
        const get = await exchange(server, 'GET', `/api/v1/projects/${project.id}`, { ...json(key), 'content-length': 0 });
        assert.equal(get.status, 200, get.text);
        assert.equal(get.json.id, project.id);
        const getChunked = await exchange(server, 'GET', '/api/v1/projects', { ...json(key), 'transfer-encoding': 'chunked' }, '');
        assert.equal(getChunked.status, 200, getChunked.text);
        const del = await exchange(server, 'DELETE', `/api/v1/device/devices/${deviceId}`, { ...json(key), 'content-length': 0 });
        assert.equal(del.status, 204, del.text);
        const put = await exchange(server, 'PUT', `/api/v1/projects/${project.id}/members/${server.admin.email}`, {
          ...json(key),
          'content-length': 0,
        });
        assert.equal(put.status, 200, put.text);
        const delProject = await exchange(server, 'DELETE', `/api/v1/projects/${project.id}`, json(key));
        assert.equal(delProject.status, 204, delProject.text);
      });

      test('Accept: application/json (and the usual variants) works on every parameterless GET', async () => {
        const doc = (await exchange(server, 'GET', '/api/v1/openapi.json', json(key))).json as {
          paths: Record<string, Record<string, unknown>>;
        };
        const gets = Object.entries(doc.paths)
          .filter(([path, item]) => !path.includes('{') && 'get' in item)
          .map(([path]) => path);
        assert.ok(gets.length >= 8, `${gets.length} parameterless GETs`);
        for (const path of gets) {
          for (const accept of [
            'application/json',
            'application/json; charset=utf-8',
            '*/*',
            'application/*',
            'text/html;q=0.9, application/json',
          ]) {
            const raw = await exchange(server, 'GET', `/api/v1${path}`, { ...json(key), accept });
            // Some list routes need a query parameter (e.g. ?projectId=): a 400 problem is still an answer in JSON.
            assert.ok(raw.status === 200 || raw.status === 400, `${path} with Accept ${accept}: ${raw.status}`);
            assert.match(
              String(raw.headers['content-type']),
              /^application\/(problem\+)?json; charset=utf-8$/,
              `${path} with Accept ${accept}`,
            );
          }
        }
      });

      test('an Accept header that excludes JSON answers 406 with a problem', async () => {
        for (const accept of ['text/html', 'image/png', 'application/xml', 'application/json;q=0']) {
          const raw = await exchange(server, 'GET', '/api/v1/me', { ...json(key), accept });
          assertProblem(raw, 406, 'NOT_ACCEPTABLE');
        }
      });
    });

    describe('error responses', () => {
      test('a method the path does not have answers 405 with Allow', async () => {
        const cases: [string, string, string[]][] = [
          ['PUT', '/api/v1/projects', ['GET', 'POST']],
          ['PATCH', '/api/v1/users/someone@example.test/apikeys', ['GET', 'POST']],
          ['POST', '/api/v1/health', ['GET']],
          ['DELETE', '/api/v1/me', ['GET']],
          ['GET', '/api/v1/auth/login', ['POST']],
        ];
        for (const [method, path, allowed] of cases) {
          const raw = await exchange(server, method, path, json(key), method === 'GET' || method === 'DELETE' ? undefined : '{}');
          assertProblem(raw, 405, 'METHOD_NOT_ALLOWED');
          const allow = String(raw.headers.allow).split(/,\s*/);
          for (const m of allowed) assert.ok(allow.includes(m), `${method} ${path}: Allow ${raw.headers.allow} lacks ${m}`);
          assert.ok(!allow.includes(method), `${method} ${path}: Allow lists the refused method`);
        }
      });

      test('an unknown path answers 404 problem+json, never HTML', async () => {
        for (const path of [
          '/api/v1/nope',
          '/api/v1/projects/x/y/z',
          '/nope',
          '/api/v1/',
          '/favicon.ico',
          '/api/v1/%2e%2e/%2e%2e/etc/passwd',
        ]) {
          const raw = await exchange(server, 'GET', path, json(key));
          assertProblem(raw, 404);
          assert.doesNotMatch(raw.text, /<html/i);
        }
      });

      test('a badly encoded URL or an over-long path segment answers 400 problem+json, without echoing the path', async () => {
        for (const path of [
          '/api/v1/projects/%zz',
          `/api/v1/projects/${'x'.repeat(600)}`,
          `/api/v1/users/${'a'.repeat(700)}@example.test/apikeys`,
        ]) {
          const raw = await exchange(server, 'GET', path, json(key));
          assertProblem(raw, 400, 'INVALID_INPUT');
          assert.ok(!raw.text.includes('xxxxxxxxxx') && !raw.text.includes('aaaaaaaaaa') && !raw.text.includes('%zz'), raw.text);
        }
      });

      test('malformed JSON answers 400 MALFORMED_JSON', async () => {
        for (const body of ['{', '{"key": "WEB",}', "{'key': 'WEB'}", 'nul', '{"a":1}{"b":2}']) {
          const raw = await exchange(server, 'POST', '/api/v1/projects', json(key), body);
          assertProblem(raw, 400, 'MALFORMED_JSON');
        }
      });

      test('a __proto__ or constructor.prototype key in the body answers 400 and pollutes nothing', async () => {
        for (const body of [
          '{"key":"PROTO","name":"x","__proto__":{"isAdmin":true}}',
          '{"__proto__":{"roles":["admin"]}}',
          '{"key":"PROTO","name":"x","constructor":{"prototype":{"isAdmin":true}}}',
        ]) {
          const raw = await exchange(server, 'POST', '/api/v1/projects', json(key), body);
          assertProblem(raw, 400);
        }
        assert.equal(({} as Record<string, unknown>).isAdmin, undefined);
        const list = await server.admin.client.call(v1.projects.listProjects, { query: { limit: 200 } });
        assert.ok(!list.items.some((p) => p.key === 'PROTO'));
      });

      test('a body property the contract does not have answers 400 naming it by JSON pointer', async () => {
        const raw = await exchange(
          server,
          'POST',
          '/api/v1/projects',
          json(key),
          JSON.stringify({ key: 'EXTRA', name: 'x', createdBy: 'me' }),
        );
        assertProblem(raw, 400, 'INVALID_INPUT');
        assert.deepEqual(
          (raw.json.errors as { pointer: string }[]).map((e) => e.pointer),
          ['/body/createdBy'],
        );
        const wrongType = await exchange(server, 'POST', '/api/v1/projects', json(key), JSON.stringify({ key: 'TYPES', name: 42 }));
        assertProblem(wrongType, 400, 'INVALID_INPUT');
        assert.equal((wrongType.json.errors as { pointer: string }[])[0]?.pointer, '/body/name');
        const missing = await exchange(server, 'POST', '/api/v1/projects', json(key), JSON.stringify({ key: 'MISS' }));
        assert.equal((missing.json.errors as { pointer: string }[])[0]?.pointer, '/body/name');
        const empty = await exchange(server, 'POST', '/api/v1/projects', json(key), '');
        assertProblem(empty, 400, 'INVALID_INPUT');
      });

      test('a body of another media type answers 415', async () => {
        const body = JSON.stringify({ key: 'MEDIA', name: 'x' });
        for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'multipart/form-data; boundary=x']) {
          const raw = await exchange(server, 'POST', '/api/v1/projects', { ...json(key), 'content-type': type }, body);
          assertProblem(raw, 415, 'UNSUPPORTED_MEDIA_TYPE');
        }
      });

      test('a body over the configured limit answers 413', async () => {
        const big = JSON.stringify({ key: 'HUGE', name: 'x', description: 'y'.repeat(server.config.bodyLimit) });
        const raw = await exchange(server, 'POST', '/api/v1/projects', json(key), big);
        assertProblem(raw, 413, 'PAYLOAD_TOO_LARGE');
      });

      test('authentication, role and visibility errors follow the same contract', async () => {
        assertProblem(await exchange(server, 'GET', '/api/v1/me', json()), 401, 'UNAUTHENTICATED');
        const viewer = await server.admin.client.call(v1.users.createUser, { body: { email: `${unique('v-')}@example.test`, name: 'V' } });
        const viewerKey = (await server.admin.client.call(v1.users.createApiKey, { params: { email: viewer.email }, body: { name: 'k' } }))
          .key;
        assertProblem(await exchange(server, 'GET', '/api/v1/users', json(viewerKey)), 403, 'FORBIDDEN');
        assertProblem(
          await exchange(server, 'GET', '/api/v1/projects/00000000-0000-4000-8000-000000000000', json(viewerKey)),
          404,
          'NOT_FOUND',
        );
        assertProblem(await exchange(server, 'GET', '/api/v1/projects?limit=0', json(viewerKey)), 400, 'INVALID_INPUT');
        assertProblem(await exchange(server, 'GET', '/api/v1/projects?limit=abc', json(viewerKey)), 400, 'INVALID_INPUT');
        assertProblem(await exchange(server, 'GET', '/api/v1/projects?unknown=1', json(viewerKey)), 400, 'INVALID_INPUT');
      });

      test('an oversized or malformed request line still gets a problem answer', async () => {
        const raw = await exchange(server, 'GET', '/api/v1/me', { ...json(key), 'x-filler': 'a'.repeat(20_000) });
        assertProblem(raw, 431, 'HEADERS_TOO_LARGE');
      });
    });

    describe('security headers (SEC-8a)', () => {
      test('JSON answers carry nosniff, no-store and a UTF-8 JSON type, and no X-Powered-By', async () => {
        for (const path of ['/api/v1/me', '/api/v1/projects', '/api/v1/nope']) {
          const raw = await exchange(server, 'GET', path, json(key));
          assert.equal(raw.headers['x-content-type-options'], 'nosniff', path);
          assert.equal(raw.headers['cache-control'], 'no-store', path);
          assert.match(String(raw.headers['content-type']), /^application\/(problem\+)?json; charset=utf-8$/, path);
          assert.equal(raw.headers['x-powered-by'], undefined);
          assert.equal(raw.headers.server, undefined);
        }
      });

      test('a CORS preflight from another origin gets no Access-Control-Allow-Origin', async () => {
        const raw = await exchange(server, 'OPTIONS', '/api/v1/projects', {
          origin: 'https://evil.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'service.api-token, content-type',
        });
        assert.equal(raw.headers['access-control-allow-origin'], undefined);
        assert.equal(raw.headers['access-control-allow-credentials'], undefined);
        assert.ok(raw.status >= 400 && raw.status < 500, `preflight answered ${raw.status}`);
        const simple = await exchange(server, 'GET', '/api/v1/me', { ...json(key), origin: 'https://evil.example' });
        assert.equal(simple.headers['access-control-allow-origin'], undefined);
      });
    });

    describe('health probes', () => {
      test('/api/v1/health, /api/v1/health/ready and /health answer without a key', async () => {
        const health = await exchange(server, 'GET', '/api/v1/health', { accept: 'application/json' });
        assert.equal(health.status, 200);
        assert.equal(health.json.status, 'ok');
        const ready = await exchange(server, 'GET', '/api/v1/health/ready', {});
        assert.equal(ready.status, 200);
        assert.deepEqual(ready.json, { status: 'ready', database: dialect, blobs: server.config.blobUrl ? 's3' : 'files' });
        assert.equal((await exchange(server, 'GET', '/health', {})).status, 200);
        assert.equal(
          (await exchange(server, 'GET', '/api/v1/health', { 'service.api-token': 'garbage' })).status,
          200,
          'a bad key on an open route is ignored',
        );
      });

      test('readiness only pings the database: the start-up integrity check is not run per probe (DUR-9)', async () => {
        const database = server.app.attest.database;
        const { check, ping } = database;
        let pings = 0;
        try {
          database.check = async () => {
            throw new Error('quick_check must not run on a probe');
          };
          database.ping = async () => {
            pings++;
            return ping.call(database);
          };
          assert.equal((await exchange(server, 'GET', '/api/v1/health/ready', {})).status, 200);
          assert.equal(pings, 1);
          database.ping = async () => {
            throw new Error('connection lost');
          };
          const down = await exchange(server, 'GET', '/api/v1/health/ready', {});
          assert.equal(down.status, 503);
          assert.equal(down.headers['retry-after'], '5');
          assert.deepEqual(down.json.unreachable, ['database']);
        } finally {
          Object.assign(database, { check, ping });
        }
      });

      test('a blob store that does not answer is named in a 200: the instance stays ready; with the database down too, the 503 names both (SCALE-7)', async () => {
        const { blobs, database } = server.app.attest;
        const pings = { blobs: blobs.ping, database: database.ping };
        try {
          blobs.ping = async () => {
            throw new Error('the bucket does not answer');
          };
          const degraded = await exchange(server, 'GET', '/api/v1/health/ready', {});
          assert.equal(degraded.status, 200);
          assert.deepEqual(degraded.json, {
            status: 'ready',
            database: dialect,
            blobs: server.config.blobUrl ? 's3' : 'files',
            unreachable: ['blob store'],
          });
          database.ping = async () => {
            throw new Error('connection lost');
          };
          const down = await exchange(server, 'GET', '/api/v1/health/ready', {});
          assert.equal(down.status, 503);
          assert.equal(down.headers['retry-after'], '5');
          assert.match(String(down.json.detail), /database and the blob store/);
          assert.deepEqual(down.json.unreachable, ['database', 'blob store']);
        } finally {
          Object.assign(blobs, { ping: pings.blobs });
          Object.assign(database, { ping: pings.database });
        }
      });
    });
  });

  describe(`[${dialect}] the contract with ATTEST_PUBLIC_URL`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect, { ATTEST_PUBLIC_URL: 'https://attest.example.com/' });
    });
    after(() => server.close());

    test('GET /api builds its absolute links from the configured base URL, whatever the Host', async () => {
      const raw = await exchange(server, 'GET', '/api', { host: 'evil.example', 'x-forwarded-host': 'evil.example' });
      assert.equal(raw.status, 200);
      assert.deepEqual(
        (raw.json.versions as { url: string }[]).map((v) => v.url),
        ['https://attest.example.com/api/v1'],
      );
    });
  });

  describe(`[${dialect}] internal errors`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    test('a failing database statement answers a bare 500 problem; the details go to the log under the same id', async () => {
      // Break the storage under the running app: the devices table vanishes.
      await sql`ALTER TABLE devices RENAME TO devices_gone`.execute(server.app.attest.db);
      const raw = await exchange(server, 'GET', '/api/v1/device/devices', json(server.admin.key));
      assertProblem(raw, 500, 'INTERNAL');
      const requestId = String(raw.headers['x-request-id']);
      const line = await waitForLogLine(
        server,
        (l) => l.includes(requestId) && l.includes('"level":50'),
        'with the request id at level error: the error is logged with the request id',
      );
      assert.match(line, /devices/, 'the log has the real cause');
      assert.match(line, /"stack"/, 'and the stack');
      await sql`ALTER TABLE devices_gone RENAME TO devices`.execute(server.app.attest.db);
      assert.equal((await exchange(server, 'GET', '/api/v1/device/devices', json(server.admin.key))).status, 200);
    });
  });

  describe(`[${dialect}] graceful shutdown`, () => {
    test('an in-flight request finishes while the server closes; new connections are refused', async () => {
      const server = await startTestServer(dialect);
      try {
        const body = JSON.stringify({ key: `S${unique().toUpperCase()}`.slice(0, 16), name: 'finished during shutdown' });
        const arrived = once(server.app.server, 'request');
        const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
          const request = http.request(
            `${server.url}/api/v1/projects`,
            { method: 'POST', agent: false, headers: { ...json(server.admin.key), 'content-length': Buffer.byteLength(body) } },
            (res) => {
              let text = '';
              res.on('data', (chunk: Buffer) => {
                text += chunk.toString('utf8');
              });
              res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
            },
          );
          request.on('error', reject);
          request.write(body.slice(0, 10));
          // Deliberate: the body stays unfinished for 300 ms, so the request is still in flight while the server closes.
          setTimeout(() => request.end(body.slice(10)), 300);
        });
        await arrived; // the server has the request (its headers): it is in flight
        let closed = false;
        const closing = server.app.close().then(() => {
          closed = true;
        });
        await waitFor(() => !server.app.server.listening, { message: 'the server stopped listening' });
        const late = await exchange(server, 'GET', '/api/v1/health', {}).then(
          (r) => r.status,
          (error: NodeJS.ErrnoException) => error.code,
        );
        assert.ok(late === 'ECONNREFUSED' || late === 503, `a new request during shutdown got ${late}`);
        assert.equal(closed, false, 'close waits for the request in flight');
        const answer = await response;
        assert.equal(answer.status, 201, answer.text);
        assert.equal((JSON.parse(answer.text) as { name: string }).name, 'finished during shutdown');
        await closing;
      } finally {
        await server.close();
      }
    });
  });
}
