import assert from 'node:assert/strict';
import crypto, { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { after, before, describe, mock, test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'kysely';
import { v1 } from '../../src/client/index.ts';
import { generateKey, hasValidChecksum, LEGACY_KEY_PATTERN, SECRET_SCANNING_REGEX } from '../../src/server/security/api-key.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createUser, type TestUser, unique } from '../helpers/factories.ts';
import { rawRequest } from '../helpers/http.ts';
import { waitForRequestLogs } from '../helpers/logs.ts';
import { databaseSettled, startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// SPEC-1.3, the key requirements (AUTH-1..AUTH-10, AUTH-13) and SEC-2: who may call, and how every failure looks.

interface Raw {
  status: number;
  headers: Headers;
  text: string;
  json: Record<string, unknown>;
}

/** One request with exactly the given headers (no client defaults), answered raw. */
async function send(server: TestServer, method: string, url: string, headers: Record<string, string> = {}, body?: string): Promise<Raw> {
  const response = await fetch(`${server.url}${url}`, { method, headers, body });
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON: leave empty, the assertions on `text` say what it was
  }
  return { status: response.status, headers: response.headers, text, json };
}

const me = (server: TestServer, headers: Record<string, string>) =>
  send(server, 'GET', '/api/v1/me', { accept: 'application/json', 'content-type': 'application/json', ...headers });

/** POST /auth/login with `body` as JSON (an e-mail and a password, or what a test sends instead). */
const postLogin = (server: TestServer, body: object) =>
  send(server, 'POST', '/api/v1/auth/login', { 'content-type': 'application/json', accept: 'application/json' }, JSON.stringify(body));

/** A request as seen from a given local address (the loopback has all of 127/8), for per-address limits. */
const meFrom = (server: TestServer, localAddress: string, headers: Record<string, string>) =>
  rawRequest(`${server.url}/api/v1/me`, { headers, localAddress });

/** The parts of a 401 that must be the same for every cause: status, headers (minus per-request ones), body minus `instance`. */
function failureShape(raw: Raw) {
  const headers = [...raw.headers].filter(([name]) => !['date', 'x-request-id'].includes(name)).sort(([a], [b]) => a.localeCompare(b));
  const { instance, ...body } = raw.json;
  assert.equal(typeof instance, 'string', 'a problem carries its instance');
  return { status: raw.status, headers, body };
}

/** Statements the database ran for one request (background writes of earlier requests settled first). */
async function statementsFor(server: TestServer, request: () => Promise<Raw>): Promise<{ raw: Raw; statements: number }> {
  await databaseSettled(server);
  const before = server.app.attest.database.stats.statements;
  const raw = await request();
  const statements = server.app.attest.database.stats.statements - before;
  return { raw, statements };
}

/** Every row of every table as text: what a database dump would show. */
async function databaseText(server: TestServer): Promise<string> {
  const db = server.app.attest.db;
  const tables =
    server.dialect === 'sqlite'
      ? (await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`.execute(db)).rows.map((r) => r.name)
      : (
          await sql<{
            name: string;
          }>`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()`.execute(db)
        ).rows.map((r) => r.name);
  let text = '';
  for (const table of tables) text += JSON.stringify((await sql`SELECT * FROM ${sql.table(table)}`.execute(db)).rows);
  return text;
}

async function legacyKeyFor(server: TestServer, user: TestUser, value?: string): Promise<{ key: string; id: string }> {
  const created = await server.admin.client.call(v1.users.createApiKey, {
    params: { email: user.email },
    body: { name: 'legacy', format: 'legacy', ...(value ? { value } : {}) },
  });
  return { key: created.key, id: created.id };
}

describe('API key format (AUTH-1, AUTH-2)', () => {
  const scanner = new RegExp(SECRET_SCANNING_REGEX);

  test('generated keys match the published secret-scanning regex and carry a valid checksum', () => {
    fc.assert(
      fc.property(fc.constantFrom('standard' as const, 'session' as const), (kind) => {
        const key = generateKey(kind);
        assert.match(key, scanner);
        assert.equal(scanner.exec(` x ${key} y `)?.[0], key, 'the regex finds the whole key inside text');
        assert.ok(hasValidChecksum(key));
      }),
      { numRuns: 2000 },
    );
  });

  test('changing any single character of a key breaks its checksum', () => {
    const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-';
    fc.assert(
      fc.property(fc.nat(), fc.nat(), fc.constantFrom('standard' as const, 'session' as const), (at, replacement, kind) => {
        const key = generateKey(kind);
        const index = at % key.length;
        const candidates = [...alphabet].filter((c) => c !== key[index]);
        const mutated = key.slice(0, index) + candidates[replacement % candidates.length] + key.slice(index + 1);
        assert.equal(hasValidChecksum(mutated), false, `${mutated} (position ${index}) still passes`);
      }),
      { numRuns: 10_000 },
    );
  });

  test('a random UUID or SHA-1 is not taken for a key by the scanner regex', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.stringMatching(/^[0-9a-f]{40}$/), (uuid, sha1) => {
        assert.doesNotMatch(`${uuid} ${sha1}`, scanner);
      }),
    );
  });
});

for (const dialect of DIALECTS) {
  describe(`[${dialect}] authentication`, () => {
    let server: TestServer;
    /** Every secret and e-mail header value this suite sent; the final test checks none reached the logs. */
    const secrets: string[] = [];
    before(async () => {
      server = await startTestServer(dialect);
      secrets.push(server.admin.key);
    });
    after(() => server.close());

    describe('GET /me with a standard key', () => {
      test('a standard key alone in service.api-token authenticates', async () => {
        const user = await createUser(server, ['tester']);
        secrets.push(user.key);
        const raw = await me(server, { 'service.api-token': user.key });
        assert.equal(raw.status, 200);
        assert.equal(raw.json.email, user.email);
        assert.equal((raw.json.key as { format: string }).format, 'standard');
        assert.equal(raw.headers.get('deprecation'), null, 'standard keys are not deprecated');
      });

      test('a service.user header next to a standard key is ignored', async () => {
        const user = await createUser(server, ['viewer']);
        const raw = await me(server, { 'service.api-token': user.key, 'service.user': 'someone-else@example.test' });
        assert.equal(raw.status, 200);
        assert.equal(raw.json.email, user.email);
      });

      test('the header names are exactly service.api-token and service.user (any letter case), nothing else', async () => {
        const key = server.admin.key;
        assert.equal((await me(server, { 'Service.Api-Token': key })).status, 200, 'HTTP header names are case-insensitive');
        const wrongHeaders: Record<string, string>[] = [
          { authorization: `Bearer ${key}` },
          { 'x-api-key': key },
          { 'service-api-token': key },
          { 'service.api_token': key },
          { cookie: `service.api-token=${key}` },
        ];
        for (const headers of wrongHeaders) {
          assert.equal((await me(server, headers)).status, 401, `${Object.keys(headers)[0]} must not authenticate`);
        }
      });
    });

    describe('GET /me with an old-format key', () => {
      test('an old-format key works with service.user naming its owner, the e-mail compared case-insensitively', async () => {
        const user = await createUser(server, ['tester']);
        const legacy = await legacyKeyFor(server, user);
        assert.match(legacy.key, LEGACY_KEY_PATTERN);
        secrets.push(legacy.key);
        const exact = await me(server, { 'service.api-token': legacy.key, 'service.user': user.email });
        assert.equal(exact.status, 200);
        assert.equal(exact.json.email, user.email);
        assert.equal((exact.json.key as { format: string }).format, 'legacy');
        const upperEmail = await me(server, { 'service.api-token': legacy.key, 'service.user': user.email.toUpperCase() });
        assert.equal(upperEmail.status, 200, 'upper-case e-mail header');
        const upperKey = await me(server, { 'service.api-token': legacy.key.toUpperCase(), 'service.user': ` ${user.email} ` });
        assert.equal(upperKey.status, 200, 'upper-case UUID, padded e-mail');
      });

      test('responses to an old-format key carry Deprecation and Link headers', async () => {
        const user = await createUser(server, ['viewer']);
        const legacy = await legacyKeyFor(server, user);
        const raw = await me(server, { 'service.api-token': legacy.key, 'service.user': user.email });
        assert.equal(raw.status, 200);
        assert.match(raw.headers.get('deprecation') ?? '', /^@\d+$/, 'RFC 9745 Deprecation: @<epoch seconds>');
        assert.match(raw.headers.get('link') ?? '', /<[^>]+>;\s*rel="deprecation"/);
      });

      test('an old-format key without service.user, or with another user\u2019s e-mail, is refused with 401', async () => {
        const owner = await createUser(server, ['admin']);
        const other = await createUser(server, ['viewer']);
        const legacy = await legacyKeyFor(server, owner);
        assert.equal((await me(server, { 'service.api-token': legacy.key })).status, 401);
        assert.equal((await me(server, { 'service.api-token': legacy.key, 'service.user': other.email })).status, 401);
        assert.equal((await me(server, { 'service.api-token': legacy.key, 'service.user': '' })).status, 401);
        assert.equal((await me(server, { 'service.api-token': legacy.key, 'service.user': `x${owner.email}` })).status, 401);
      });
    });

    describe('every authentication failure (AUTH-10, SEC-2c)', () => {
      test('no key, unknown, revoked, expired, deleted user, malformed, bad checksum and legacy mismatches all answer the same 401', async () => {
        const revokedUser = await createUser(server, ['viewer']);
        await revokedUser.client.call(v1.users.revokeApiKey, { params: { email: revokedUser.email, keyId: revokedUser.keyId } });
        const expiring = await createUser(server, ['viewer']);
        const shortKey = await server.admin.client.call(v1.users.createApiKey, {
          params: { email: expiring.email },
          body: { name: 'short', expiresAt: new Date(server.clock.now.getTime() + 3_600_000).toISOString() },
        });
        assert.equal((await me(server, { 'service.api-token': shortKey.key })).status, 200, 'works before it expires');
        const deleted = await createUser(server, ['manager']);
        await server.admin.client.call(v1.users.deleteUser, { params: { email: deleted.email } });
        const legacyOwner = await createUser(server, ['tester']);
        const legacy = await legacyKeyFor(server, legacyOwner);
        const stranger = await createUser(server, ['tester']);
        const valid = generateKey('standard');
        const badChecksum = `${valid.slice(0, -1)}${valid.endsWith('0') ? '1' : '0'}`;
        server.clock.advance(2 * 3_600_000);

        const cases: Record<string, Record<string, string>> = {
          'no key': {},
          'empty key': { 'service.api-token': '' },
          'unknown standard key': { 'service.api-token': generateKey('standard') },
          'unknown session key': { 'service.api-token': generateKey('session') },
          'revoked key': { 'service.api-token': revokedUser.key },
          'expired key': { 'service.api-token': shortKey.key },
          "deleted user's key": { 'service.api-token': deleted.key },
          'malformed key': { 'service.api-token': 'not-a-key' },
          'bad checksum': { 'service.api-token': badChecksum },
          'truncated key': { 'service.api-token': valid.slice(0, 30) },
          'old-format key without service.user': { 'service.api-token': legacy.key },
          "old-format key with another user's e-mail": { 'service.api-token': legacy.key, 'service.user': stranger.email },
          'old-format key with an unknown e-mail': { 'service.api-token': legacy.key, 'service.user': 'nobody@example.test' },
          'unknown old-format key with a real e-mail': { 'service.api-token': randomUUID(), 'service.user': legacyOwner.email },
          'key in the Authorization header': { authorization: `Bearer ${server.admin.key}` },
        };
        const reference = failureShape(await me(server, {}));
        assert.equal(reference.status, 401);
        assert.equal(reference.body.code, 'UNAUTHENTICATED');
        assert.ok(
          reference.headers.some(([name]) => name === 'www-authenticate'),
          '401 carries WWW-Authenticate',
        );
        assert.ok(!reference.headers.some(([name]) => name === 'set-cookie'));
        for (const [name, headers] of Object.entries(cases)) {
          assert.deepEqual(failureShape(await me(server, headers)), reference, `"${name}" differs from the no-key 401`);
        }
      });

      test('a standard-looking key with a bad checksum is refused without any database statement (AUTH-2)', async () => {
        const valid = generateKey('standard');
        const bad = `${valid.slice(0, 10)}${valid[10] === 'A' ? 'B' : 'A'}${valid.slice(11)}`;
        for (const token of [bad, `${valid}x`, valid.slice(0, -2), 'atk_short', generateKey('session').replace('ats_', 'atk_')]) {
          const { raw, statements } = await statementsFor(server, () => me(server, { 'service.api-token': token }));
          assert.equal(raw.status, 401);
          assert.equal(statements, 0, `${token} ran ${statements} statements`);
        }
      });

      test('unknown key, wrong e-mail and missing e-mail run the same number of statements', async () => {
        const owner = await createUser(server, ['viewer']);
        const legacy = await legacyKeyFor(server, owner);
        const counts: Record<string, number> = {};
        const cases: Record<string, Record<string, string>> = {
          'unknown old-format key': { 'service.api-token': randomUUID(), 'service.user': owner.email },
          'wrong e-mail': { 'service.api-token': legacy.key, 'service.user': 'wrong@example.test' },
          'missing e-mail': { 'service.api-token': legacy.key },
          'unknown standard key': { 'service.api-token': generateKey('standard') },
        };
        for (const [name, headers] of Object.entries(cases)) {
          const { raw, statements } = await statementsFor(server, () => me(server, headers));
          assert.equal(raw.status, 401, name);
          counts[name] = statements;
        }
        assert.equal(new Set(Object.values(counts)).size, 1, `statement counts differ: ${JSON.stringify(counts)}`);
        assert.ok((counts['wrong e-mail'] ?? 0) >= 1, 'the lookup does run');
      });
    });

    describe('keys outside the headers (SEC-2a)', () => {
      test('a key in the query string is refused with 401 and never written to the logs', async () => {
        const user = await createUser(server, ['viewer']);
        const legacy = await legacyKeyFor(server, user);
        secrets.push(user.key, legacy.key);
        const requestIds: string[] = [];
        for (const query of [
          `api_key=${user.key}`,
          `service.api-token=${user.key}`,
          `token=${user.key}`,
          `key=${legacy.key}&user=${user.email}`,
        ]) {
          const raw = await send(server, 'GET', `/api/v1/me?${query}`, { accept: 'application/json' });
          assert.equal(raw.status, 401, query);
          requestIds.push(raw.headers.get('x-request-id') as string);
        }
        await waitForRequestLogs(server, requestIds);
        const logs = server.logs.join('');
        assert.ok(!logs.includes(user.key), 'the standard key reached the logs');
        assert.ok(!logs.toLowerCase().includes(legacy.key.toLowerCase()), 'the old-format key reached the logs');
        assert.match(logs, /\/api\/v1\/me\?api_key=(%5B|\[)redacted/, 'the query value is masked, and the request still logged');
      });
    });

    describe('key storage and listing (AUTH-3, AUTH-5)', () => {
      test('keys are stored only as digests: neither the secret nor its body is anywhere in the database', async () => {
        const user = await createUser(server, ['viewer']);
        const imported = randomUUID().toUpperCase();
        await legacyKeyFor(server, user, imported);
        secrets.push(user.key, imported);
        await databaseSettled(server);
        const needles = [
          user.key,
          user.key.slice(4, 47),
          user.key.slice(4),
          imported.toLowerCase(),
          imported,
          imported.replace(/-/g, '').toLowerCase(),
        ];
        const dump = await databaseText(server);
        for (const needle of needles) assert.ok(!dump.includes(needle), `${needle} found in the tables`);
        if (dialect === 'sqlite') {
          for (const file of fs.readdirSync(server.dataDir)) {
            const full = path.join(server.dataDir, file);
            if (!fs.statSync(full).isFile()) continue;
            const bytes = fs.readFileSync(full);
            for (const needle of needles) assert.equal(bytes.indexOf(needle), -1, `${needle} found in the bytes of ${file}`);
          }
        }
      });

      test('the key list never returns a secret', async () => {
        const user = await createUser(server, ['manager']);
        const legacy = await legacyKeyFor(server, user);
        await user.client.call(v1.users.createApiKey, { params: { email: user.email }, body: { name: 'second' } });
        const list = await server.admin.client.call(v1.users.listApiKeys, {
          params: { email: user.email },
          query: { includeRevoked: true },
        });
        assert.equal(list.items.length, 3);
        const text = JSON.stringify(list);
        assert.doesNotMatch(text, new RegExp(SECRET_SCANNING_REGEX));
        assert.ok(!text.toLowerCase().includes(legacy.key.toLowerCase()), 'the old-format secret is listed');
        for (const item of list.items) {
          for (const value of Object.values(item)) {
            if (typeof value !== 'string') continue;
            assert.ok(!value.includes(user.key) && !value.includes(user.key.slice(4, 47)), `field value ${value} holds the secret`);
          }
          assert.ok(item.hint.length <= 20, 'the hint shows only a few characters');
        }
        const own = await user.client.call(v1.users.listApiKeys, { params: { email: user.email } });
        assert.ok(!JSON.stringify(own).includes(user.key));
      });
    });

    describe('key lifecycle (AUTH-6, AUTH-7, AUTH-8)', () => {
      test('last_used_at is recorded, but written at most once per minute', async () => {
        const user = await createUser(server, ['viewer']);
        const lastUsed = async () =>
          (await server.admin.client.call(v1.users.listApiKeys, { params: { email: user.email } })).items.find((k) => k.id === user.keyId)
            ?.lastUsedAt;
        assert.equal(await lastUsed(), null, 'unused so far');
        const first = server.clock.now.toISOString();
        assert.equal((await me(server, { 'service.api-token': user.key })).status, 200);
        await waitFor(async () => (await lastUsed()) === first, { message: 'the first use is recorded' });
        // 100 more uses within the minute, each half a (test-clock) second later than the one before:
        // any write among them would record a later time than the first use.
        for (let i = 0; i < 100; i++) {
          server.clock.advance(500);
          assert.equal((await me(server, { 'service.api-token': user.key })).status, 200);
        }
        // Nothing to wait for when all is well: wait until no write is still running, then look.
        await databaseSettled(server);
        assert.equal(await lastUsed(), first, 'no second write within the minute');
        server.clock.advance(11_000);
        const later = server.clock.now.toISOString();
        assert.equal((await me(server, { 'service.api-token': user.key })).status, 200);
        await waitFor(async () => (await lastUsed()) === later, { message: 'a use a minute later is recorded again' });
      });

      test('a revoked key stops working on the very next request', async () => {
        const user = await createUser(server, ['tester']);
        const second = await user.client.call(v1.users.createApiKey, { params: { email: user.email }, body: { name: 'to revoke' } });
        assert.equal((await me(server, { 'service.api-token': second.key })).status, 200);
        await user.client.call(v1.users.revokeApiKey, { params: { email: user.email, keyId: second.id } });
        assert.equal((await me(server, { 'service.api-token': second.key })).status, 401);
        assert.equal((await me(server, { 'service.api-token': user.key })).status, 200, 'other keys of the user still work');
      });

      test('a key stops working once its expiry passes on the clock', async () => {
        const user = await createUser(server, ['viewer']);
        const short = await server.admin.client.call(v1.users.createApiKey, {
          params: { email: user.email },
          body: { name: 'minute', expiresAt: new Date(server.clock.now.getTime() + 60_000).toISOString() },
        });
        assert.equal((await me(server, { 'service.api-token': short.key })).status, 200);
        server.clock.advance(59_000);
        assert.equal((await me(server, { 'service.api-token': short.key })).status, 200);
        server.clock.advance(1_000);
        assert.equal((await me(server, { 'service.api-token': short.key })).status, 401, 'expired at exactly expiresAt');
      });
    });

    describe('POST /auth/login', () => {
      test('exchanges a password set with PUT /users/{email}/password for a session key usable like any key', async () => {
        const user = await createUser(server, ['tester']);
        const password = `pw-${unique()}-long-enough`;
        await user.client.call(v1.users.setUserPassword, { params: { email: user.email }, body: { password } });
        secrets.push(password);
        const login = await postLogin(server, { email: user.email.toUpperCase(), password });
        assert.equal(login.status, 200, login.text);
        const key = login.json.key as string;
        secrets.push(key);
        assert.match(key, /^ats_/);
        assert.match(key, new RegExp(SECRET_SCANNING_REGEX));
        const raw = await me(server, { 'service.api-token': key });
        assert.equal(raw.status, 200);
        assert.equal(raw.json.email, user.email);
        assert.equal((raw.json.key as { format: string }).format, 'session');
        assert.equal(raw.json.role, 'tester');
      });

      test('a wrong password or an unknown e-mail answers the same 401 as a bad key', async () => {
        const user = await createUser(server, ['viewer']);
        await server.admin.client.call(v1.users.setUserPassword, {
          params: { email: user.email },
          body: { password: 'correct horse battery' },
        });
        const login = (body: object) => postLogin(server, body);
        // The login is rate limited per address like any call, so its counter headers move between requests.
        const shape = (raw: Raw) => {
          const { status, headers, body } = failureShape(raw);
          return { status, body, headers: headers.filter(([h]) => !h.startsWith('x-ratelimit-')) };
        };
        const wrong = shape(await login({ email: user.email, password: 'wrong horse battery' }));
        const unknown = shape(await login({ email: 'nobody-here@example.test', password: 'correct horse battery' }));
        const noPassword = shape(await login({ email: (await createUser(server, ['viewer'])).email, password: 'whatever it is' }));
        assert.equal(wrong.status, 401);
        assert.deepEqual(wrong.body, failureShape(await me(server, {})).body, 'the same problem as a bad key');
        assert.deepEqual(unknown, wrong, 'an unknown e-mail answers exactly like a wrong password');
        assert.deepEqual(noPassword, wrong, 'a user without a password answers exactly like a wrong password');
      });
    });

    test('the logs of the whole suite never hold a key, a password or an e-mail header value (AUTH-9)', async () => {
      // The e-mail header value is sent in a letter case no URL of this suite uses, so finding it means the header was logged.
      const user = await createUser(server, ['viewer']);
      const legacy = await legacyKeyFor(server, user);
      const headerEmail = user.email.replace(/^user-/, 'User-').replace('@example.test', '@Example.Test');
      const raw = await me(server, { 'service.api-token': legacy.key, 'service.user': headerEmail });
      assert.equal(raw.status, 200);
      const requestId = raw.headers.get('x-request-id') as string;
      await waitForRequestLogs(server, [requestId]);
      const logs = server.logs.join('');
      assert.ok(logs.includes(requestId), 'the request was logged');
      for (const secret of [...secrets, legacy.key, headerEmail]) {
        assert.ok(!logs.includes(secret), `${secret.slice(0, 8)}… reached the logs`);
      }
      const linesOfRequest = server.logs
        .join('')
        .split('\n')
        .filter((line) => line.includes(requestId));
      assert.ok(linesOfRequest.length > 0);
      for (const line of linesOfRequest) assert.ok(!line.toLowerCase().includes(user.email), `the e-mail header is in: ${line}`);
      assert.doesNotMatch(logs, new RegExp(SECRET_SCANNING_REGEX));
    });
  });

  describe(`[${dialect}] keys over time (AUTH-8, AUTH-13, sessions)`, () => {
    // Its own server: these tests move the clock by days.
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect, { ATTEST_SESSION_MINUTES: '5' });
    });
    after(() => server.close());

    const listed = async (email: string, query: { unusedForDays?: number; includeRevoked?: boolean } = {}) =>
      (await server.admin.client.call(v1.users.listApiKeys, { params: { email }, query })).items;
    const lastUsedOf = async (email: string, keyId: string) => (await listed(email)).find((k) => k.id === keyId)?.lastUsedAt;

    test('an old-format key records its last use like a standard key: once a minute at most, never for a failure', async () => {
      const user = await createUser(server, ['tester']);
      const legacy = await legacyKeyFor(server, user);
      const pair = { 'service.api-token': legacy.key, 'service.user': user.email };
      assert.equal(await lastUsedOf(user.email, legacy.id), null, 'unused so far');
      const first = server.clock.now.toISOString();
      assert.equal((await me(server, pair)).status, 200);
      await waitFor(async () => (await lastUsedOf(user.email, legacy.id)) === first, { message: 'the first use is recorded' });
      for (let i = 0; i < 20; i++) {
        server.clock.advance(2_000);
        assert.equal((await me(server, { ...pair, 'service.user': user.email.toUpperCase() })).status, 200);
      }
      await databaseSettled(server);
      assert.equal(await lastUsedOf(user.email, legacy.id), first, 'no second write within the minute');
      server.clock.advance(30_000);
      assert.equal((await me(server, { ...pair, 'service.user': 'someone-else@example.test' })).status, 401);
      assert.equal((await me(server, { 'service.api-token': legacy.key })).status, 401);
      await databaseSettled(server);
      assert.equal(await lastUsedOf(user.email, legacy.id), first, 'a refused attempt is no use of the key');
      const later = server.clock.now.toISOString();
      assert.equal((await me(server, pair)).status, 200);
      await waitFor(async () => (await lastUsedOf(user.email, legacy.id)) === later, {
        message: 'a use a minute later is recorded again',
      });
      assert.equal(await lastUsedOf(user.email, user.keyId), null, "the owner's other key was not touched");
    });

    test('?unusedForDays=N lists the keys never used or last used more than N days ago', async () => {
      const user = await createUser(server, ['tester']); // its standard key is never used
      const legacy = await legacyKeyFor(server, user);
      const recent = await server.admin.client.call(v1.users.createApiKey, { params: { email: user.email }, body: { name: 'recent' } });
      const revoked = await server.admin.client.call(v1.users.createApiKey, { params: { email: user.email }, body: { name: 'revoked' } });
      await server.admin.client.call(v1.users.revokeApiKey, { params: { email: user.email, keyId: revoked.id } });
      const password = `pw-${unique()}-long-enough`;
      await server.admin.client.call(v1.users.setUserPassword, { params: { email: user.email }, body: { password } });

      assert.equal((await me(server, { 'service.api-token': legacy.key, 'service.user': user.email })).status, 200);
      await waitFor(async () => (await lastUsedOf(user.email, legacy.id)) != null, { message: 'the old-format key use is recorded' });
      server.clock.advance(10 * 86_400_000);
      assert.equal((await me(server, { 'service.api-token': recent.key })).status, 200);
      const login = await postLogin(server, { email: user.email, password });
      assert.equal(login.status, 200, login.text);
      await waitFor(async () => (await lastUsedOf(user.email, recent.id)) != null, { message: 'the use of `recent` is recorded' });
      server.clock.advance(3_600_000);
      // Now: the first key never used, the old-format key used 10 days and an hour ago, `recent` an hour ago.

      const ids = async (query: { unusedForDays?: number; includeRevoked?: boolean }) =>
        (await listed(user.email, query)).map((k) => k.id).sort();
      const sorted = (...list: string[]) => list.sort();
      assert.deepEqual(await ids({}), sorted(user.keyId, legacy.id, recent.id), 'no filter: every active key, sessions aside');
      assert.deepEqual(await ids({ unusedForDays: 30 }), [user.keyId], '30 days: only the key never used');
      assert.deepEqual(await ids({ unusedForDays: 7 }), sorted(user.keyId, legacy.id), '7 days: also the old-format key used 10 days ago');
      assert.deepEqual(
        await ids({ unusedForDays: 0 }),
        sorted(user.keyId, legacy.id, recent.id),
        '0 days: every key not used this instant',
      );
      assert.deepEqual(await ids({ unusedForDays: 30, includeRevoked: true }), sorted(user.keyId, revoked.id), 'revoked keys on request');
      for (const item of await listed(user.email, { unusedForDays: 0 }))
        assert.notEqual(item.format, 'session', 'session keys are never listed');

      for (const bad of ['-1', '1.5', 'x', '36501']) {
        const raw = await send(server, 'GET', `/api/v1/users/${encodeURIComponent(user.email)}/apikeys?unusedForDays=${bad}`, {
          accept: 'application/json',
          'service.api-token': server.admin.key,
        });
        assert.equal(raw.status, 400, `unusedForDays=${bad}: ${raw.text}`);
        assert.equal((raw.json.errors as { pointer: string }[])[0]?.pointer, '/query/unusedForDays');
      }
    });

    test('a session key from POST /auth/login stops working once ATTEST_SESSION_MINUTES have passed', async () => {
      const user = await createUser(server, ['viewer']);
      const password = `pw-${unique()}-long-enough`;
      await user.client.call(v1.users.setUserPassword, { params: { email: user.email }, body: { password } });
      const login = async () => {
        const raw = await postLogin(server, { email: user.email, password });
        assert.equal(raw.status, 200, raw.text);
        return raw.json as { key: string; expiresAt: string };
      };
      const session = await login();
      assert.equal(session.expiresAt, new Date(server.clock.now.getTime() + 5 * 60_000).toISOString(), 'expires 5 minutes from now');
      const withSession = { 'service.api-token': session.key };
      assert.equal((await me(server, withSession)).status, 200);
      server.clock.advance(5 * 60_000 - 1_000);
      assert.equal((await me(server, withSession)).status, 200, 'still valid a second before');
      server.clock.advance(1_000);
      const expired = await me(server, withSession);
      assert.equal(expired.status, 401, 'expired at exactly expiresAt');
      assert.deepEqual(failureShape(expired), failureShape(await me(server, {})), 'the same 401 as no key');
      server.clock.advance(24 * 3_600_000);
      assert.equal((await me(server, withSession)).status, 401, 'and stays expired');
      assert.equal((await me(server, { 'service.api-token': user.key })).status, 200, "the user's API key is unaffected");
      const fresh = await login();
      assert.equal((await me(server, { 'service.api-token': fresh.key })).status, 200, 'a new login gives a new session');
    });

    test('every key confirmation runs crypto.timingSafeEqual once on two 32-byte digests, hit or miss (AUTH-4)', async () => {
      const user = await createUser(server, ['viewer']);
      const legacy = await legacyKeyFor(server, user);
      const cases: [string, Record<string, string>, boolean][] = [
        ['standard key', { 'service.api-token': user.key }, true],
        ['unknown standard key', { 'service.api-token': generateKey('standard') }, false],
        ['old-format key and e-mail', { 'service.api-token': legacy.key, 'service.user': user.email }, true],
        ["old-format key and another's e-mail", { 'service.api-token': legacy.key, 'service.user': server.admin.email }, false],
        ['old-format key without e-mail', { 'service.api-token': legacy.key }, false],
        ['unknown old-format key', { 'service.api-token': randomUUID(), 'service.user': user.email }, false],
      ];
      await databaseSettled(server);
      const spy = mock.method(crypto, 'timingSafeEqual');
      // The server imports timingSafeEqual by name from node:crypto; this makes that binding the spy too.
      syncBuiltinESMExports();
      try {
        for (const [name, headers, hit] of cases) {
          spy.mock.resetCalls();
          const raw = await me(server, headers);
          assert.equal(raw.status, hit ? 200 : 401, name);
          assert.equal(spy.mock.callCount(), 1, `${name}: timingSafeEqual ran ${spy.mock.callCount()} times`);
          const [a, b] = (spy.mock.calls[0]?.arguments ?? []) as unknown[];
          assert.ok(Buffer.isBuffer(a) && Buffer.isBuffer(b), `${name}: compares buffers`);
          assert.deepEqual([(a as Buffer).length, (b as Buffer).length], [32, 32], `${name}: compares two SHA-256 digests`);
          assert.equal((a as Buffer).equals(b as Buffer), hit, `${name}: the digests ${hit ? 'match' : 'differ'}`);
        }
      } finally {
        spy.mock.restore();
        syncBuiltinESMExports();
      }
    });
  });

  describe(`[${dialect}] authentication with old-format keys switched off`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect, { ATTEST_LEGACY_KEYS: 'false' });
    });
    after(() => server.close());

    test('ATTEST_LEGACY_KEYS=false refuses a valid old-format pair with the same 401', async () => {
      const user = await createUser(server, ['viewer']);
      const legacy = await legacyKeyFor(server, user, randomUUID());
      const pair = await me(server, { 'service.api-token': legacy.key, 'service.user': user.email });
      const reference = await me(server, {});
      assert.equal(pair.status, 401);
      assert.deepEqual(failureShape(pair), failureShape(reference));
      assert.equal((await me(server, { 'service.api-token': user.key })).status, 200, 'standard keys still work');
    });
  });

  describe(`[${dialect}] X-Forwarded-For from a trusted proxy (SEC-8c)`, () => {
    let server: TestServer;
    before(async () => {
      // Loopback is trusted, so a client on 127.0.0.x is itself taken for a proxy.
      server = await startTestServer(dialect, { ATTEST_TRUST_PROXY: 'loopback', ATTEST_AUTH_FAILURES_PER_MINUTE: '4' });
    });
    after(() => server.close());

    test('a forwarded hop that is not an address is never logged or counted under its own text', async () => {
      const claims = ['<script>alert(1)</script>', 'evil.example.test', '203.0.113.9:8080', `x${'y'.repeat(2000)}`];
      for (const claim of claims) {
        const raw = await meFrom(server, '127.0.0.21', { 'service.api-token': generateKey('standard'), 'x-forwarded-for': claim });
        assert.equal(raw.status, 401, claim.slice(0, 40));
      }
      // Each claim stood for the hop that passed it on (127.0.0.21): four failures there, a fifth over the budget of four.
      const next = await meFrom(server, '127.0.0.21', { 'service.api-token': generateKey('standard'), 'x-forwarded-for': '<b>' });
      assert.equal(next.status, 429, 'the failures counted under the real address');
      const logged = server.logs.join('');
      for (const claim of claims) assert.ok(!logged.includes(claim.slice(0, 30)), `${claim.slice(0, 30)} is not in the log`);
      assert.match(logged, /"remoteAddress":"127\.0\.0\.21"/);
      // A forwarded address that is one is still the client's, as before.
      const forwarded = await meFrom(server, '127.0.0.22', {
        'service.api-token': generateKey('standard'),
        'x-forwarded-for': '198.51.100.40',
      });
      assert.equal(forwarded.status, 401);
      assert.match(server.logs.join(''), /"remoteAddress":"198\.51\.100\.40"/);
    });
  });

  describe(`[${dialect}] failed-authentication throttling (SEC-2b)`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect, { ATTEST_AUTH_FAILURES_PER_MINUTE: '10' });
    });
    after(() => server.close());

    test('the 11th bad key in a minute from one address answers 429 with Retry-After; other addresses are unaffected', async () => {
      for (let i = 1; i <= 10; i++) {
        // A rotating X-Forwarded-For must not count as a new client: no proxy is trusted (SEC-8c).
        const raw = await me(server, { 'service.api-token': generateKey('standard'), 'x-forwarded-for': `203.0.113.${i}` });
        assert.equal(raw.status, 401, `attempt ${i}`);
      }
      const throttled = await me(server, { 'service.api-token': generateKey('standard'), 'x-forwarded-for': '198.51.100.7' });
      assert.equal(throttled.status, 429);
      assert.equal(throttled.json.code, 'RATE_LIMITED');
      assert.equal(throttled.json.status, 429);
      assert.match(throttled.headers.get('content-type') ?? '', /^application\/problem\+json/);
      const retryAfter = Number(throttled.headers.get('retry-after'));
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
      const elsewhere = await meFrom(server, '127.0.0.2', { 'service.api-token': generateKey('standard'), accept: 'application/json' });
      assert.equal(elsewhere.status, 401, 'a bad key from another address is not throttled');
    });

    test('a valid key from a throttled address still answers 200, while the bad keys there keep getting 429', async () => {
      const address = '127.0.0.5';
      const bad = () => meFrom(server, address, { 'service.api-token': generateKey('standard'), accept: 'application/json' });
      for (let i = 1; i <= 10; i++) assert.equal((await bad()).status, 401, `attempt ${i}`);
      assert.equal((await bad()).status, 429, 'the address is throttled for bad keys');
      // Behind a NAT or a proxy, one broken CI job must not lock everyone else out.
      const valid = await meFrom(server, address, { 'service.api-token': server.admin.key, accept: 'application/json' });
      assert.equal(valid.status, 200, valid.text);
      const guesser = await bad();
      assert.equal(guesser.status, 429, 'the guesser still is');
      const retryAfter = Number(guesser.headers['retry-after']);
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    });

    test('password logins have a budget of their own, which failed keys do not spend', async () => {
      const address = '127.0.0.6';
      // A different e-mail each time (password spraying): the address's budget throttles, not an account's (SEC-2d).
      let attempt = 0;
      const login = (password: string) =>
        rawRequest(`${server.url}/api/v1/auth/login`, {
          method: 'POST',
          localAddress: address,
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({ email: `sprayed-${++attempt}@example.test`, password }),
        });
      for (let i = 1; i <= 11; i++) {
        await meFrom(server, address, { 'service.api-token': generateKey('standard'), accept: 'application/json' });
      }
      assert.equal((await login('x'.repeat(12))).status, 401, 'bad keys from the address do not throttle its logins');
      for (let i = 2; i <= 10; i++) assert.equal((await login('x'.repeat(12))).status, 401, `login ${i}`);
      const throttled = await login('x'.repeat(12));
      assert.equal(throttled.status, 429, 'the 11th failed login is throttled');
      assert.ok(Number(throttled.headers['retry-after']) >= 1);
    });
  });

  describe(`[${dialect}] first start with an old-format ATTEST_ADMIN_API_KEY`, () => {
    let server: TestServer;
    const adminKey = randomUUID();
    before(async () => {
      server = await startTestServer(dialect, { ATTEST_ADMIN_API_KEY: adminKey, ATTEST_ADMIN_EMAIL: 'Root@Example.Test' });
    });
    after(() => server.close());

    test('creates the admin with that key, which works together with the e-mail', async () => {
      const raw = await me(server, { 'service.api-token': adminKey, 'service.user': 'root@example.test' });
      assert.equal(raw.status, 200, raw.text);
      assert.equal(raw.json.role, 'admin');
      assert.equal(raw.json.email, 'root@example.test');
      assert.equal((raw.json.key as { format: string }).format, 'legacy');
      assert.equal((await me(server, { 'service.api-token': adminKey })).status, 401, 'not without the e-mail');
      const created = await send(
        server,
        'POST',
        '/api/v1/users',
        { 'content-type': 'application/json', 'service.api-token': adminKey, 'service.user': 'ROOT@example.test' },
        JSON.stringify({ email: 'second@example.test', name: 'Second', roles: ['viewer'] }),
      );
      assert.equal(created.status, 201, 'the bootstrap admin can administer');
    });
  });
}
