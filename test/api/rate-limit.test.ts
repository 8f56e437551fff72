import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/server/config.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createUser } from '../helpers/factories.ts';
import { rawRequest } from '../helpers/http.ts';
import { assertProblem } from '../helpers/problems.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// The per-key request budget (ATTEST_RATE_LIMIT_PER_MINUTE, docs/configuration.md): a key over it
// gets 429 with Retry-After, other keys keep theirs, and 0 removes the limiter altogether.

const me = (server: TestServer, key: string) =>
  fetch(`${server.url}/api/v1/me`, { headers: { 'service.api-token': key, accept: 'application/json' } });

test('the default budget is 60,000 requests a minute per key', () => {
  assert.equal(loadConfig({}).rateLimitPerMinute, 60_000);
});

for (const dialect of DIALECTS) {
  describe(`[${dialect}] per-key rate limit`, () => {
    let limited: TestServer;
    let unlimited: TestServer;
    before(async () => {
      limited = await startTestServer(dialect, { ATTEST_RATE_LIMIT_PER_MINUTE: '5' });
      unlimited = await startTestServer(dialect, { ATTEST_RATE_LIMIT_PER_MINUTE: '0' });
    });
    after(async () => {
      await limited?.close();
      await unlimited?.close();
    });

    test('a key over its budget gets 429 with Retry-After; another key keeps its own', async () => {
      const [first, second] = [await createUser(limited, ['viewer']), await createUser(limited, ['viewer'])];
      for (let i = 0; i < 5; i++) {
        const answer = await me(limited, first.key);
        assert.equal(answer.status, 200);
        assert.equal(answer.headers.get('x-ratelimit-limit'), '5');
        await answer.arrayBuffer();
      }
      const refused = await rawRequest(`${limited.url}/api/v1/me`, { headers: { 'service.api-token': first.key } });
      assertProblem(refused, 429, 'RATE_LIMITED');
      assert.ok(Number(refused.headers['retry-after']) > 0);
      assert.equal((await me(limited, second.key)).status, 200);
    });

    test("before a key is known the budget is the address's: the login exchange is counted, and keys keep their own", async () => {
      // A server of its own: the admin key's budget on `limited` is spent by the test before.
      const server = await startTestServer(dialect, { ATTEST_RATE_LIMIT_PER_MINUTE: '5' });
      try {
        const user = await createUser(server, ['viewer']);
        const login = () =>
          rawRequest(`${server.url}/api/v1/auth/login`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json' },
            body: JSON.stringify({ email: 'nobody@example.test', password: 'not the password' }),
          });
        const left: number[] = [];
        for (let i = 0; i < 5; i++) {
          const answer = await login();
          assert.equal(answer.status, 401, `attempt ${i + 1}`);
          left.push(Number(answer.headers['x-ratelimit-remaining']));
        }
        assert.deepEqual(left, [4, 3, 2, 1, 0]);
        assertProblem(await login(), 429, 'RATE_LIMITED');
        // The address's budget is spent; a key sent from the same address has a budget of its own.
        const answer = await me(server, user.key);
        assert.equal(answer.status, 200);
        assert.equal(answer.headers.get('x-ratelimit-remaining'), '4');
      } finally {
        await server.close();
      }
    });

    test('0 installs no limiter: no budget headers, no refusal', async () => {
      const user = await createUser(unlimited, ['viewer']);
      for (let i = 0; i < 20; i++) {
        const answer = await me(unlimited, user.key);
        assert.equal(answer.status, 200);
        assert.equal(answer.headers.get('x-ratelimit-limit'), null);
        await answer.arrayBuffer();
      }
    });
  });
}
