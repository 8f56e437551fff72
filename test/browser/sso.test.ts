import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { v1 } from '../../src/client/index.ts';
import { axeRecord, browserAvailable, launchChromium, watchedContext } from '../helpers/browser.ts';
import { startIdentityProvider, type TestIdentityProvider } from '../helpers/identity-provider.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// SSO-1..SSO-4 and SSO-6 in Chromium: a real OpenID provider (oidc-provider) runs in the test on a
// free port; the login page offers "Sign in with Acme SSO" and no password form (password sign-in
// is off); Chromium goes through the provider with PKCE and lands on the projects page with the
// role its groups claim maps to; the group is removed at the provider, and the next sign-in has
// lost the role. A forged return to /login/sso is refused on the page. axe-core on every page.

describe('single sign-on in Chromium (SSO-1..SSO-4, SSO-6)', { skip: !browserAvailable() }, () => {
  let idp: TestIdentityProvider;
  let server: TestServer;
  let browser: Browser;
  const consoleErrors: string[] = [];
  const axe = axeRecord();
  const contexts: BrowserContext[] = [];

  before(async () => {
    idp = await startIdentityProvider();
    server = await startTestServer(
      'sqlite',
      idp.env({ ATTEST_OIDC_NAME: 'Acme SSO', ATTEST_OIDC_ROLE_MAP: 'attest-managers=manager', ATTEST_PASSWORD_LOGIN: 'false' }),
    );
    idp.allow(`${server.url}/login/sso`);
    idp.accounts.set('carol', { email: 'carol@acme.example', name: 'Carol Baker', groups: ['attest-managers', 'everyone'] });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await idp?.close();
  });

  /** A fresh browser (no provider session, no Attest session) signing in as `account` through the provider. */
  const signInThroughProvider = async (account: string, view: string): Promise<Page> => {
    const context = await watchedContext(browser, { consoleErrors });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${server.url}/login`);
    const button = page.getByRole('button', { name: 'Sign in with Acme SSO' });
    await button.waitFor();
    assert.equal(await page.getByLabel('Password').count(), 0, 'password sign-in is off: no password field');
    await axe.check(page, `login-${view}`);
    await button.click();
    await page.waitForURL((url) => url.origin === idp.issuer);
    await page.getByLabel('Account').fill(account);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL((url) => url.origin === server.url && url.pathname === '/');
    return page;
  };

  test('Chromium signs in through the provider with PKCE and lands on the projects page as a manager, its groups claim mapped', async () => {
    const page = await signInThroughProvider('carol', 'first');
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    await page.getByText('Carol Baker').waitFor();
    assert.equal(await page.locator('.who .muted').textContent(), '(manager)');
    await axe.check(page, 'projects-manager');

    const authorization = idp.authorizations.at(-1) as URLSearchParams;
    assert.equal(authorization.get('code_challenge_method'), 'S256');
    assert.match(authorization.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.ok(authorization.get('state') && authorization.get('nonce'));
    assert.deepEqual(
      idp.exchanges.map((e) => [e.grantType, e.verifierSent]),
      [['authorization_code', true]],
      'the code was exchanged once, with its PKCE verifier',
    );
    // The session is the browser's, as after a password sign-in: a session key in sessionStorage, nothing in the address.
    const session = JSON.parse((await page.evaluate("sessionStorage.getItem('attest.session')")) as string) as {
      key: string;
      email: string;
    };
    assert.equal(session.email, 'carol@acme.example');
    const me = await server.client(session.key).call(v1.meta.getMe);
    assert.deepEqual([me.role, me.key.format], ['manager', 'session']);
    assert.doesNotMatch(page.url(), /code=|state=/);
  });

  test('removed from the group at the provider, the next sign-in has lost the manager role', async () => {
    (idp.accounts.get('carol') as { groups: string[] }).groups = ['everyone'];
    const page = await signInThroughProvider('carol', 'second');
    await page.getByText('Carol Baker').waitFor();
    assert.equal(await page.locator('.who .muted').textContent(), '(viewer)');
    await axe.check(page, 'projects-viewer');
    const users = await server.admin.client.call(v1.users.listUsers, { query: { email: 'carol@acme.example' } });
    assert.deepEqual(
      users.items.map((u) => u.roles),
      [['viewer']],
      'one user, found again by subject, with only the default role',
    );
  });

  test('a return to /login/sso this tab did not start is refused on the page, and no session starts', async () => {
    const context = await watchedContext(browser, { consoleErrors });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${server.url}/login/sso?code=stolen-code&state=forged-state&iss=${encodeURIComponent(idp.issuer)}`);
    await page.getByRole('heading', { name: 'Sign-in did not complete' }).waitFor();
    assert.match((await page.getByRole('alert').textContent()) ?? '', /not started in this tab/);
    assert.equal(await page.evaluate("sessionStorage.getItem('attest.session')"), null);
    assert.doesNotMatch(page.url(), /code=/, 'the code left the address bar');
    await axe.check(page, 'sso-refused');
  });

  test('no serious or critical accessibility violation on any of these pages, and no console error', () => {
    assert.deepEqual([...axe.checked].sort(), ['login-first', 'login-second', 'projects-manager', 'projects-viewer', 'sso-refused']);
    assert.deepEqual(Object.fromEntries(axe.found), {});
    // The test provider's own page has no favicon: only Attest's pages are held to this.
    assert.deepEqual(
      consoleErrors.filter((e) => !e.includes(idp.issuer)),
      [],
    );
  });
});
