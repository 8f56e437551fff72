import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, unique } from '../helpers/factories.ts';
import { login, rawRequest } from '../helpers/http.ts';
import { startIdentityProvider, type TestIdentityProvider } from '../helpers/identity-provider.ts';
import { assertProblem } from '../helpers/problems.ts';
import { databaseSettled, startTestServer, type TestServer } from '../helpers/server.ts';

// Single sign-on through a real OpenID provider (oidc-provider) run in the test, without a browser
// (test/browser/sso.test.ts has Chromium): the flow with PKCE, state and nonce (SSO-2), users made on
// first sign-in and found by subject after (SSO-3), roles and memberships from the groups claim at
// every sign-in (SSO-4, SSO-5), the refusals of the finish step that change nothing (SSO-2), and
// password sign-in turned off (SSO-6).

const post = (server: TestServer, path: string, body?: unknown, localAddress?: string) =>
  rawRequest(`${server.url}/api/v1${path}`, {
    method: 'POST',
    localAddress,
    headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

for (const dialect of DIALECTS) {
  describe(`[${dialect}] single sign-on (SSO-*)`, () => {
    let idp: TestIdentityProvider;
    let server: TestServer;
    let projectKey: string;

    before(async () => {
      idp = await startIdentityProvider();
      server = await startTestServer(
        dialect,
        idp.env({
          ATTEST_OIDC_NAME: 'Acme SSO',
          ATTEST_OIDC_ROLE_MAP: 'attest-managers=manager,attest-testers=tester,attest-admins=admin',
          ATTEST_OIDC_PROJECT_MAP: 'web-team=SSOWEB',
        }),
      );
      idp.allow(`${server.url}/login/sso`);
      projectKey = (await server.admin.client.call(v1.projects.createProject, { body: { key: 'SSOWEB', name: 'Web shop' } })).key;
    });
    after(async () => {
      await server?.close();
      await idp?.close();
    });

    /** Rows a refused finish must not have touched: users, keys, identities, memberships and the audit log. */
    const counts = async () => {
      await databaseSettled(server);
      const db = server.app.attest.db;
      const count = async (table: 'users' | 'api_keys' | 'sso_identities' | 'project_members' | 'audit_log') =>
        Number(
          (
            await db
              .selectFrom(table)
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      return {
        users: await count('users'),
        keys: await count('api_keys'),
        identities: await count('sso_identities'),
        members: await count('project_members'),
        audit: await count('audit_log'),
      };
    };

    /** Starts a sign-in, signs in at the provider as `account`, and answers what came back to /login/sso. */
    const throughProvider = async (account: string) => {
      const started = await post(server, '/auth/sso/start');
      assert.equal(started.status, 200, started.text);
      const back = await idp.authorize(String(started.json.authorizationUrl), account);
      return { started: started.json as { authorizationUrl: string; state: string }, back: Object.fromEntries(back) };
    };

    const signInAs = async (account: string) => {
      const { back } = await throughProvider(account);
      const finished = await post(server, '/auth/sso/finish', back);
      assert.equal(finished.status, 200, finished.text);
      return finished.json as { key: string; keyId: string; expiresAt: string; email: string };
    };

    test('GET /auth/methods names the provider for the login page, and password sign-in as on', async () => {
      const methods = await server.client().call(v1.meta.getAuthMethods);
      assert.deepEqual(methods, { password: true, sso: { name: 'Acme SSO' } });
    });

    test('the authorization request carries PKCE (S256), a state and a nonce, and the verifier never leaves the server', async () => {
      const { started } = await throughProvider(unique('nobody-'));
      const query = new URL(started.authorizationUrl).searchParams;
      assert.equal(query.get('code_challenge_method'), 'S256');
      assert.match(query.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
      assert.equal(query.get('state'), started.state);
      assert.ok((query.get('nonce') ?? '').length >= 32);
      assert.equal(query.get('redirect_uri'), `${server.url}/login/sso`);
      assert.equal(query.get('scope'), 'openid email profile groups');
      assert.ok(!JSON.stringify(started).includes('code_verifier'));
    });

    test('a first sign-in creates the user with the role its groups map to, and a session key as a password login gives', async () => {
      const sub = unique('ann-');
      idp.accounts.set(sub, { email: `${sub}@acme.example`, name: 'Ann Lee', groups: ['attest-managers', 'web-team'] });
      const session = await signInAs(sub);
      assert.equal(session.email, `${sub}@acme.example`);
      assert.match(session.key, /^ats_/);
      const me = await server.client(session.key).call(v1.meta.getMe);
      assert.equal(me.role, 'manager');
      assert.deepEqual(me.roles, ['manager']);
      assert.equal(me.name, 'Ann Lee');
      assert.equal(me.key.format, 'session');
      const project = (await server.admin.client.call(v1.projects.listProjects, { query: { key: projectKey } })).items[0];
      assert.deepEqual(me.projectIds, [project?.id]);
      // The token request carried the PKCE verifier.
      assert.ok(idp.exchanges.some((e) => e.grantType === 'authorization_code' && e.verifierSent));
      const created = await server.admin.client.call(v1.users.listAuditLog, { query: { action: 'user.create' } });
      assert.ok(created.items.some((entry) => entry.details.email === `${sub}@acme.example` && entry.details.via === 'sso'));
    });

    test('roles and managed memberships follow the groups at every sign-in: a user removed from a group loses its role', async () => {
      const sub = unique('bob-');
      idp.accounts.set(sub, { email: `${sub}@acme.example`, name: 'Bob', groups: ['attest-managers', 'web-team'] });
      const first = await signInAs(sub);
      const other = await createProject(server, 'Not managed by groups');
      await server.admin.client.call(v1.projects.addMember, { params: { projectId: other.id, email: `${sub}@acme.example` } });

      (idp.accounts.get(sub) as { groups: string[] }).groups = ['attest-testers'];
      const second = await signInAs(sub);
      const me = await server.client(second.key).call(v1.meta.getMe);
      assert.equal(me.role, 'tester');
      assert.deepEqual(me.projectIds, [other.id], 'the group-managed project is gone, the one a manager added stays');
      // The earlier session of the same user has lost the role too: roles are the user's, not the session's.
      assert.equal((await server.client(first.key).call(v1.meta.getMe)).role, 'tester');
      const users = await server.admin.client.call(v1.users.listUsers, { query: { email: sub } });
      assert.equal(users.items.length, 1, 'the second sign-in found the user by subject');
      const changes = await server.admin.client.call(v1.users.listAuditLog, { query: { action: 'user.roles' } });
      assert.ok(changes.items.some((e) => JSON.stringify(e.details.to) === '["tester"]' && e.details.via === 'sso'));
    });

    test('a bad state is refused with SSO_FAILED, and nothing is created', async () => {
      const sub = unique('eve-');
      idp.accounts.set(sub, { email: `${sub}@acme.example`, name: 'Eve', groups: ['attest-admins'] });
      const { back } = await throughProvider(sub);
      const before = await counts();
      const answer = await post(server, '/auth/sso/finish', { ...back, state: 'a-state-this-server-never-issued' });
      assertProblem(answer, 400, 'SSO_FAILED');
      assert.match(String(answer.json.detail), /unknown, was finished already or has expired/);
      assert.deepEqual(await counts(), before);
    });

    test('a replayed callback is refused: the state works once, and the code with a fresh state is refused by the provider', async () => {
      const sub = unique('rex-');
      idp.accounts.set(sub, { email: `${sub}@acme.example`, name: 'Rex', groups: [] });
      const { back } = await throughProvider(sub);
      assert.equal((await post(server, '/auth/sso/finish', back)).status, 200);
      const before = await counts();
      const again = await post(server, '/auth/sso/finish', back);
      assertProblem(again, 400, 'SSO_FAILED');
      // The same code under a state that is valid but was issued for another sign-in (another verifier and nonce).
      const fresh = (await post(server, '/auth/sso/start')).json as { state: string };
      const replayed = await post(server, '/auth/sso/finish', { ...back, state: fresh.state });
      assertProblem(replayed, 400, 'SSO_FAILED');
      assert.match(String(replayed.json.detail), /refused the code \(invalid_grant\)/);
      assert.deepEqual(await counts(), before);
    });

    test('an answer from another issuer is refused, and nothing is created', async () => {
      const sub = unique('mal-');
      idp.accounts.set(sub, { email: `${sub}@acme.example`, name: 'Mal', groups: ['attest-admins'] });
      const { back } = await throughProvider(sub);
      const before = await counts();
      const answer = await post(server, '/auth/sso/finish', { ...back, iss: 'https://evil.example' });
      assertProblem(answer, 400, 'SSO_FAILED');
      assert.match(String(answer.json.detail), /issuer/);
      assert.deepEqual(await counts(), before);
      const users = await server.admin.client.call(v1.users.listUsers, { query: { email: sub } });
      assert.equal(users.items.length, 0);
    });

    test('the provider refusing the sign-in is a clear problem, and nothing is created', async () => {
      const started = (await post(server, '/auth/sso/start')).json as { authorizationUrl: string };
      const back = Object.fromEntries(await idp.authorize(started.authorizationUrl, 'no-such-account'));
      assert.equal(back.error, 'access_denied');
      const before = await counts();
      const answer = await post(server, '/auth/sso/finish', back);
      assertProblem(answer, 400, 'SSO_FAILED');
      assert.match(String(answer.json.detail), /refused the sign-in: access_denied/);
      assert.deepEqual(await counts(), before);
    });

    test('a user an admin deleted in Attest is not brought back by the provider: SSO_ACCESS_DENIED', async () => {
      const sub = unique('gone-');
      idp.accounts.set(sub, { email: `${sub}@acme.example`, name: 'Gone', groups: ['attest-testers'] });
      await signInAs(sub);
      await server.admin.client.call(v1.users.deleteUser, { params: { email: `${sub}@acme.example` } });
      const { back } = await throughProvider(sub);
      const before = await counts();
      const answer = await post(server, '/auth/sso/finish', back);
      assertProblem(answer, 403, 'SSO_ACCESS_DENIED');
      assert.match(String(answer.json.detail), /deleted by an admin/);
      assert.deepEqual(await counts(), before);
    });

    test('a user without a password sets one through a session only within 10 minutes of signing in (SEC-2g)', async () => {
      const sub = unique('sam-');
      const email = `${sub}@acme.example`;
      idp.accounts.set(sub, { email, name: 'Sam', groups: ['attest-testers'] });
      const stale = await signInAs(sub);
      server.clock.advance(11 * 60_000);
      await assert.rejects(
        server.client(stale.key).call(v1.users.setUserPassword, { params: { email }, body: { password: 'a password set too late' } }),
        (e: { status?: number; code?: string; message?: string }) =>
          e.status === 403 && e.code === 'REAUTHENTICATION_REQUIRED' && /sign in again/.test(String(e.message)),
      );
      const fresh = await signInAs(sub);
      server.clock.advance(60_000);
      await server.client(fresh.key).call(v1.users.setUserPassword, { params: { email }, body: { password: 'a password set in time' } });
      const entries = await server.admin.client.call(v1.users.listAuditLog, { query: { action: 'user.password' } });
      assert.ok(entries.items.some((entry) => entry.details.confirmedBy === 'fresh sign-in'));
    });

    test('an existing password account is linked only when the provider says the e-mail is verified', async () => {
      const email = `${unique('kim-')}@acme.example`;
      await server.admin.client.call(v1.users.createUser, { body: { email, name: 'Kim', roles: ['viewer'] } });
      const unverified = unique('kim-a-');
      idp.accounts.set(unverified, { email, name: 'Kim', groups: ['attest-testers'], emailVerified: false });
      const { back } = await throughProvider(unverified);
      const before = await counts();
      assertProblem(await post(server, '/auth/sso/finish', back), 409, 'ALREADY_EXISTS');
      assert.deepEqual(await counts(), before);

      const verified = unique('kim-b-');
      idp.accounts.set(verified, { email, name: 'Kim', groups: ['attest-testers'] });
      const session = await signInAs(verified);
      const me = await server.client(session.key).call(v1.meta.getMe);
      assert.equal(me.email, email);
      assert.equal(me.role, 'tester');
    });
  });

  describe(`[${dialect}] single sign-on only: password sign-in turned off, groups required (SSO-4, SSO-6)`, () => {
    let idp: TestIdentityProvider;
    let server: TestServer;

    before(async () => {
      idp = await startIdentityProvider();
      server = await startTestServer(
        dialect,
        idp.env({ ATTEST_PASSWORD_LOGIN: 'false', ATTEST_OIDC_ROLE_MAP: 'qa=tester', ATTEST_OIDC_DEFAULT_ROLE: 'none' }),
      );
      idp.allow(`${server.url}/login/sso`);
    });
    after(async () => {
      await server?.close();
      await idp?.close();
    });

    test('POST /auth/login is refused with PASSWORD_LOGIN_DISABLED, even with the right password', async () => {
      const password = 'correct horse battery staple';
      await server.admin.client.call(v1.users.setUserPassword, { params: { email: server.admin.email }, body: { password } });
      const answer = await login(server, '127.0.0.1', server.admin.email, password);
      assertProblem(answer, 403, 'PASSWORD_LOGIN_DISABLED');
      assert.deepEqual(await server.client().call(v1.meta.getAuthMethods), { password: false, sso: { name: new URL(idp.issuer).host } });
    });

    test('someone in no mapped group is refused with SSO_ACCESS_DENIED, and nothing is created', async () => {
      const sub = unique('out-');
      idp.accounts.set(sub, { email: `${sub}@acme.example`, name: 'Out', groups: ['sales'] });
      const started = (await post(server, '/auth/sso/start')).json as { authorizationUrl: string };
      const back = Object.fromEntries(await idp.authorize(started.authorizationUrl, sub));
      const answer = await post(server, '/auth/sso/finish', back);
      assertProblem(answer, 403, 'SSO_ACCESS_DENIED');
      const users = await server.admin.client.call(v1.users.listUsers, { query: { email: sub } });
      assert.equal(users.items.length, 0);
    });
  });

  describe(`[${dialect}] failed sign-ins slow their address down (SSO-2, SEC-2b)`, () => {
    let idp: TestIdentityProvider;
    let server: TestServer;
    before(async () => {
      idp = await startIdentityProvider();
      server = await startTestServer(dialect, idp.env({ ATTEST_AUTH_FAILURES_PER_MINUTE: '3' }));
      idp.allow(`${server.url}/login/sso`);
    });
    after(async () => {
      await server?.close();
      await idp?.close();
    });

    test('after the failure budget, starts and finishes from that address are 429 with Retry-After; other addresses go on', async () => {
      const address = '127.0.0.77';
      for (let i = 0; i < 3; i++) {
        assertProblem(await post(server, '/auth/sso/finish', { state: `forged-${i}`, code: 'x' }, address), 400, 'SSO_FAILED');
      }
      for (const answer of [
        await post(server, '/auth/sso/start', undefined, address),
        await post(server, '/auth/sso/finish', { state: 'forged', code: 'x' }, address),
      ]) {
        assertProblem(answer, 429, 'RATE_LIMITED');
        assert.ok(Number(answer.headers['retry-after']) > 0);
      }
      assert.equal((await post(server, '/auth/sso/start', undefined, '127.0.0.78')).status, 200);
    });
  });

  describe(`[${dialect}] without single sign-on`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server?.close());

    test('the login page is told password only, and the sign-on steps answer 404', async () => {
      assert.deepEqual(await server.client().call(v1.meta.getAuthMethods), { password: true, sso: null });
      assertProblem(await post(server, '/auth/sso/start'), 404, 'NOT_FOUND');
      assertProblem(await post(server, '/auth/sso/finish', { state: 'x', code: 'y' }), 404, 'NOT_FOUND');
    });
  });
}
