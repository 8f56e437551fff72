import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { v1 } from '../../src/client/index.ts';
import { PgSharedCounts } from '../../src/server/cluster/pg-shared-counts.ts';
import { loadConfig } from '../../src/server/config.ts';
import { createContext } from '../../src/server/context.ts';
import { StartupError } from '../../src/server/errors.ts';
import { LoginThrottle } from '../../src/server/security/login-throttle.ts';
import { SharedFailureLimiter } from '../../src/server/security/shared-limits.ts';
import { cuttableProxy } from '../helpers/cuttable-proxy.ts';
import { createPostgresDatabase, DIALECTS } from '../helpers/dialects.ts';
import { createUser, unique } from '../helpers/factories.ts';
import { closedPort, login, rawRequest } from '../helpers/http.ts';
import { assertProblem } from '../helpers/problems.ts';
import { startPeerServer, startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// Shared limits (SCALE-4): two instances on one PostgreSQL database count the per-key rate limit,
// the failed authentications per address and the password guesses per account in one store, the
// database's `shared_limits` table or Redis, so a client spreading its requests over both gets one
// budget, not two.

const REDIS_URL = process.env.ATTEST_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether Redis answers; without it the Redis suite is skipped with a visible message, as PostgreSQL's is. */
async function redisAnswers(): Promise<boolean> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}
const REDIS = DIALECTS.includes('postgres') && (await redisAnswers());
if (DIALECTS.includes('postgres') && !REDIS) {
  // In CI a missing Redis fails the run, as a missing PostgreSQL does, rather than testing less.
  if (process.env.CI === 'true')
    test('the Redis store of the shared limits has a Redis to run against', () => assert.fail(`no Redis at ${REDIS_URL}`));
  else process.stdout.write(`\n# SKIPPED: the Redis store of the shared limits (no Redis at ${REDIS_URL})\n`);
}

/** Deletes the keys a suite's servers left in Redis (a known client's is kept for 30 days). */
async function forgetRedisKeys(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

const BUDGET = 10;
const FAILURES = 6;

const me = (server: TestServer, key: string, localAddress?: string) =>
  rawRequest(`${server.url}/api/v1/me`, { headers: { 'service.api-token': key, accept: 'application/json' }, localAddress });

const stores = [
  ...DIALECTS.filter((d) => d === 'postgres').map(() => ({ store: 'postgres' as const, env: {} })),
  ...(REDIS ? [{ store: 'redis' as const, env: { ATTEST_REDIS_URL: REDIS_URL } }] : []),
];

for (const { store, env } of stores) {
  describe(`[postgres] limits shared by two instances, counted in ${store} (SCALE-4)`, () => {
    let first: TestServer;
    let second: TestServer;
    /** Loopback addresses of this suite's own, so the two stores' suites never share an address's budget. */
    const block = store === 'postgres' ? 20 : 21;
    before(async () => {
      const limits = { ...env, ATTEST_RATE_LIMIT_PER_MINUTE: String(BUDGET), ATTEST_AUTH_FAILURES_PER_MINUTE: String(FAILURES) };
      first = await startTestServer('postgres', limits);
      second = await startPeerServer(first, limits);
      // Instances keep their clocks in step (NTP); the tests' clocks stand still until moved.
      second.clock.now = new Date(first.clock.now.getTime());
    });
    after(async () => {
      await second?.close();
      await first?.close();
      if (store === 'redis') await forgetRedisKeys(`attest:${new URL(first.config.databaseUrl as string).pathname.slice(1)}:`);
    });

    test(`the counts are in ${store}`, async () => {
      assert.equal(first.app.attest.cluster.countsIn, store);
      assert.equal(second.app.attest.cluster.countsIn, store);
      await me(first, unique('atk_not-a-key-'), `127.${block}.9.1`);
      const rows = await sql<{ n: number }>`SELECT count(*)::int AS n FROM shared_limits`.execute(first.app.attest.db);
      assert.equal(rows.rows[0]?.n === 0, store === 'redis', 'the table holds the counts only when Redis does not');
    });

    test('a key spreading its requests over both instances has one budget: at most one request over it, taken in turns', async (t) => {
      const user = await createUser(first, ['viewer']);
      const counts = first.app.attest.cluster.counts;
      assert.ok(counts);
      const sent = { count: 0 };
      const passed: string[] = [];
      // In turns, each request once its instance has added it to the shared count: each instance
      // then decides on everything but the other's latest request, the overshoot documented in
      // shared-limits.ts ("what the other instances passed since this one's last exchange").
      for (let i = 0; i < 3 * BUDGET; i++) {
        const [server, name] = i % 2 === 0 ? [first, 'first'] : [second, 'second'];
        const answer = await me(server, user.key);
        sent.count++;
        if (answer.status === 200) passed.push(name);
        else assertProblem(answer, 429, 'RATE_LIMITED');
        await waitFor(async () => (await counts.read(`rate:key:${user.keyId}`, Date.now()))?.count === sent.count, {
          message: () => `the shared count reached ${sent.count}`,
        });
      }
      t.diagnostic(`${passed.length} of ${3 * BUDGET} requests passed a budget of ${BUDGET}: ${passed.join(', ')}`);
      assert.ok(passed.length >= BUDGET && passed.length <= BUDGET + 1);
      assert.ok(passed.includes('first') && passed.includes('second'));
    });

    test('a burst over both instances at once passes at most each instance its budget, and then both refuse', async (t) => {
      const user = await createUser(first, ['viewer']);
      const answers = await Promise.all(Array.from({ length: 4 * BUDGET }, (_, i) => me(i % 2 === 0 ? first : second, user.key)));
      const passed = answers.filter((a) => a.status === 200).length;
      t.diagnostic(`${passed} of ${4 * BUDGET} requests sent at once passed a budget of ${BUDGET}`);
      // The documented worst case: instances × budget, when every instance bursts before any exchange.
      assert.ok(passed >= BUDGET && passed <= 2 * BUDGET, `${passed} passed`);
      const counts = first.app.attest.cluster.counts;
      await waitFor(async () => (await counts?.read(`rate:key:${user.keyId}`, Date.now()))?.count === 4 * BUDGET);
      for (const server of [first, second]) assertProblem(await me(server, user.key), 429, 'RATE_LIMITED');
    });

    test('failed keys from one address are counted once across both instances: the next failure anywhere answers 429', async () => {
      const address = `127.${block}.0.1`;
      const statuses: number[] = [];
      for (let i = 0; i <= FAILURES; i++) {
        statuses.push((await me(i % 2 === 0 ? first : second, `atk_${unique()}`, address)).status);
      }
      assert.deepEqual(statuses, [...Array(FAILURES).fill(401), 429], 'the budget of the address, spent on both');
      const refused = await me(first, `atk_${unique()}`, address);
      assertProblem(refused, 429, 'RATE_LIMITED');
      assert.ok(Number(refused.headers['retry-after']) > 0);
      // Only failures count: a valid key from the throttled address still passes on either.
      const user = await createUser(first, ['viewer']);
      for (const server of [first, second]) assert.equal((await me(server, user.key, address)).status, 200);
    });

    test("guesses at one account over both instances add up to the account's count, and its known address keeps its way in", async () => {
      const user = await createUser(first, ['viewer']);
      const password = `pw-${unique()}-long-enough`;
      await first.admin.client.call(v1.users.setUserPassword, { params: { email: user.email }, body: { password } });
      const home = `127.${block}.1.1`;
      assert.equal((await login(first, home, user.email, password)).status, 200);
      const statuses: number[] = [];
      for (let i = 0; i <= LoginThrottle.FREE_FAILURES; i++) {
        statuses.push((await login(i % 2 === 0 ? first : second, `127.${block}.2.${i + 1}`, user.email, 'not the password')).status);
      }
      assert.deepEqual(statuses, [...Array(LoginThrottle.FREE_FAILURES).fill(401), 429], 'one count for the account');
      assertProblem(await login(first, `127.${block}.3.1`, user.email, password), 429, 'RATE_LIMITED');
      // The address it signed in from through the first instance is known to the second.
      assert.equal((await login(second, home, user.email, password)).status, 200, 'the owner is not locked out');
    });
  });

  describe(`[postgres] password guesses at once over two instances, counted in ${store} (SEC-2d)`, () => {
    let first: TestServer;
    let second: TestServer;
    const block = store === 'postgres' ? 22 : 23;
    before(async () => {
      first = await startTestServer('postgres', env);
      second = await startPeerServer(first, env);
      second.clock.now = new Date(first.clock.now.getTime());
    });
    after(async () => {
      await second?.close();
      await first?.close();
      if (store === 'redis') await forgetRedisKeys(`attest:${new URL(first.config.databaseUrl as string).pathname.slice(1)}:`);
    });

    test('200 concurrent wrong passwords for one account over both instances: the free ones are checked, the rest 429 (SEC-2d)', async () => {
      const user = await createUser(first, ['viewer']);
      const password = `pw-${unique()}-long-enough`;
      await first.admin.client.call(v1.users.setUserPassword, { params: { email: user.email }, body: { password } });
      const home = `127.${block}.4.1`;
      assert.equal((await login(second, home, user.email, password)).status, 200);
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          login(i % 2 === 0 ? first : second, `127.${block}.${5 + Math.floor(i / 250)}.${(i % 250) + 1}`, user.email, `wrong ${i}`),
        ),
      );
      assert.equal(answers.filter((a) => a.status === 401).length, LoginThrottle.FREE_FAILURES, 'counted before checked, in one store');
      assert.equal(answers.filter((a) => a.status === 429).length, 200 - LoginThrottle.FREE_FAILURES);
      // The known address's own budget is claimed atomically too: of 20 at once, KNOWN_FAILURES are checked.
      const fromHome = await Promise.all(
        Array.from({ length: 20 }, (_, i) => login(i % 2 === 0 ? first : second, home, user.email, `home guess ${i}`)),
      );
      assert.equal(fromHome.filter((a) => a.status === 401).length, LoginThrottle.KNOWN_FAILURES);
    });
  });
}

for (const dialect of DIALECTS.filter((d) => d === 'postgres')) {
  test(`[${dialect}] an instance whose Redis does not answer at start does not start, and says which`, async () => {
    const database = await createPostgresDatabase();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-redis-'));
    const redisUrl = `redis://127.0.0.1:${await closedPort()}`;
    const ctx = await createContext(
      loadConfig({ ATTEST_DATABASE_URL: database.url, ATTEST_DATA_DIR: dataDir, ATTEST_REDIS_URL: redisUrl }),
    );
    try {
      await assert.rejects(ctx.cluster.start(), (error: Error) => {
        assert.ok(error instanceof StartupError);
        assert.match(error.message, new RegExp(`^Cannot reach Redis at ${redisUrl}/? \\(ATTEST_REDIS_URL\\): .*ECONNREFUSED`));
        return true;
      });
    } finally {
      await ctx.database.close();
      await database.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
}

for (const dialect of DIALECTS.filter((d) => d === 'postgres')) {
  test(`[${dialect}] counts in a database that stops answering: failures count locally after seconds, and closing ends`, {
    timeout: 120_000,
  }, async () => {
    const database = await createPostgresDatabase();
    const proxy = await cuttableProxy(database.url);
    const errors: unknown[] = [];
    const counts = new PgSharedCounts(proxy.url, (error) => errors.push(error));
    const limiter = new SharedFailureLimiter(counts, 2, (error) => errors.push(error));
    const address = '10.9.8.7';
    try {
      assert.equal(await limiter.recordFailure(address), 0);
      assert.deepEqual(errors, [], 'counted in the database while it answers');
      // Its packets dropped from now on: the open connection gets no answer, a new one none either.
      proxy.cut();
      assert.equal(await limiter.recordFailure(address), 0);
      assert.equal(await limiter.recordFailure(address), 0);
      assert.ok((await limiter.retryAfter(address)) > 0, 'two failures counted here: the address waits');
      assert.ok(errors.length >= 3, 'each failed round trip reported');
    } finally {
      await counts.close();
      await proxy.close();
      await database.drop();
    }
  });
}
