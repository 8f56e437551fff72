import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { isDatabaseUnavailable } from '../../src/server/db/errors.ts';
import { cuttableProxy } from '../helpers/cuttable-proxy.ts';
import { createPostgresDatabase, DIALECTS } from '../helpers/dialects.ts';
import { createUser } from '../helpers/factories.ts';
import { startTestServer } from '../helpers/server.ts';

// A database that stops answering (DUR-15): the request pool's time limits turn every request into a
// 503 with Retry-After, readiness says so while a balancer still asks, and a lookup that failed for
// the database's sake never counts as a failed authentication.

/** Status, Retry-After and body of a GET with the key. */
async function get(url: string, key?: string) {
  const response = await fetch(url, { headers: { accept: 'application/json', ...(key ? { 'service.api-token': key } : {}) } });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: (await response.json()) as Record<string, unknown>,
  };
}

describe('isDatabaseUnavailable', () => {
  test("tells the database's absence from a statement's own failure", () => {
    for (const error of [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      new Error('timeout exceeded when trying to connect'),
      new Error('Query read timeout'),
      new Error('Connection terminated unexpectedly'),
      Object.assign(new Error('the database system is shutting down'), { code: '57P03' }),
      Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }),
      Object.assign(new Error('sorry, too many clients already'), { code: '53300' }),
      Object.assign(new Error('connection failure'), { code: '08006' }),
    ])
      assert.equal(isDatabaseUnavailable(error), true, error.message);
    for (const error of [
      Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }),
      Object.assign(new Error('syntax error'), { code: '42601' }),
      new Error('something else'),
      null,
      'ECONNREFUSED',
    ])
      assert.equal(isDatabaseUnavailable(error), false, String(error));
  });
});

for (const dialect of DIALECTS.filter((d) => d === 'postgres')) {
  describe(`[${dialect}] a database that stops answering`, () => {
    test('readiness answers 503 within its limit, requests 503 with Retry-After, and a valid key is never throttled', {
      timeout: 120_000,
    }, async () => {
      const database = await createPostgresDatabase();
      const proxy = await cuttableProxy(database.url);
      const server = await startTestServer(dialect, {
        ATTEST_DATABASE_URL: proxy.url,
        // Readiness waits less than any statement may: its own limit, not the pool's, must answer.
        ATTEST_DB_CONNECT_TIMEOUT_MS: '3000',
        ATTEST_DB_STATEMENT_TIMEOUT_MS: '3000',
        ATTEST_READINESS_TIMEOUT_MS: '500',
        // Three failed authentications a minute per address: a fourth counted one would be a 429.
        ATTEST_AUTH_FAILURES_PER_MINUTE: '3',
      });
      try {
        // Made before the cut and never used: the credentials cache does not know it, so each
        // request below looks it up in the database.
        const user = await createUser(server, ['admin']);
        assert.equal((await get(`${server.url}/api/v1/health/ready`)).status, 200);

        proxy.cut();
        const started = Date.now();
        const ready = await get(`${server.url}/api/v1/health/ready`);
        const waited = Date.now() - started;
        assert.equal(ready.status, 503);
        assert.ok(ready.retryAfter, 'readiness says when to ask again');
        assert.deepEqual(ready.body.unreachable, ['database']);
        assert.ok(waited < 2000, `readiness answered after ${waited} ms (its limit 500 ms, a statement's 4 s)`);

        for (let i = 0; i < 4; i++) {
          const me = await get(`${server.url}/api/v1/me`, user.key);
          assert.equal(me.status, 503, `request ${i + 1} while the database is cut off`);
          assert.equal(me.body.code, 'UNAVAILABLE');
          assert.ok(me.retryAfter, 'a 503 says when to come back');
        }
        const write = await server.client(user.key).fetchRaw('POST', '/projects', {
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ key: 'CUT', name: 'Cut off' }),
        });
        assert.equal(write.status, 503);

        // Refusing connections instead (the proxy gone, breaking the connections in use): still 503,
        // never 500, never 429, and the process lives on.
        await proxy.close();
        for (let i = 0; i < 3; i++) {
          const me = await get(`${server.url}/api/v1/me`, user.key);
          assert.equal(me.status, 503, `request ${i + 1} while the database refuses connections`);
          assert.ok(me.retryAfter);
        }
        const refused = await get(`${server.url}/api/v1/health/ready`);
        assert.equal(refused.status, 503);
        assert.deepEqual(refused.body.unreachable, ['database']);
        assert.ok(!server.logs.join('').includes('"unhandled error"'), 'no database failure was an unhandled 500');
        await assert.rejects(server.client(user.key).call(v1.meta.getMe, {}), (e: { status?: number }) => e.status === 503);
      } finally {
        await server.close().catch(() => {});
        await proxy.close().catch(() => {});
        await database.drop();
      }
    });
  });
}
