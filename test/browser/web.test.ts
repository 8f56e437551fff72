import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { v1 } from '../../src/client/index.ts';
import { browserAvailable, launchChromium } from '../helpers/browser.ts';
import { tempDir } from '../helpers/data-folders.ts';
import { runWithEvidence } from '../helpers/export-fixture.ts';
import { createProject, createUser } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { shopScreen } from '../helpers/screens.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// UI-1..UI-4, end to end in Debian's Chromium against a real server: sign in, deep links, a run's
// screenshots and visual diff, an admin changing a role and a key made in the page used with the
// API; no console error on any page. Each main page is photographed: into docs/screenshots/ with
// ATTEST_UPDATE_SCREENSHOTS=1 (how the committed pictures were made), else into a temp folder.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SHOTS = process.env.ATTEST_UPDATE_SCREENSHOTS === '1' ? path.join(ROOT, 'docs/screenshots') : tempDir('attest-web-shots-');
const PASSWORD = 'correct horse battery staple';
/** The budget of JavaScript the login and run pages load, gzip (UI-3). */
const SCRIPT_BUDGET = 200 * 1024;

/** In the page: whether an <img> has loaded and decoded to real pixels. */
const rendered = (node: unknown) => {
  const img = node as { complete: boolean; naturalWidth: number };
  return img.complete && img.naturalWidth > 0;
};

describe('the web interface in Chromium (UI-1..UI-4)', { skip: !browserAvailable() }, () => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let project: { id: string; key: string };
  let runId: string;
  /** One tab for the whole walk: the session lives in the tab's sessionStorage, as it does for a person. */
  let page: Page;
  const consoleErrors: string[] = [];
  /** While a test makes the server answer 401 on purpose: Chromium logs each such answer as an error. */
  let expecting401 = false;
  /** Every script the pages loaded, by URL, with its gzip size. */
  const scripts = new Map<string, number>();

  before(async () => {
    server = await startTestServer('sqlite');
    await server.admin.client.call(v1.users.setUserPassword, { params: { email: server.admin.email }, body: { password: PASSWORD } });
    project = await createProject(server, 'Web shop');
    runId = (await runWithEvidence(server, 6, { projectId: project.id, image: shopScreen })).runId;
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.on('console', (message) => {
      if (message.type() !== 'error') return;
      if (expecting401 && message.text().includes('status of 401')) return;
      consoleErrors.push(`${message.text()} (${message.location().url})`);
    });
    context.on('weberror', (error) => consoleErrors.push(error.error().message));
    context.on('response', (response) => {
      if (!response.url().includes('/assets/') || !response.url().endsWith('.js')) return;
      // A body still being read when the browser closes is not a failure of the page.
      response.body().then(
        (body) => scripts.set(response.url(), gzipSync(body).length),
        () => undefined,
      );
    });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const signIn = async (page: Page, email = server.admin.email) => {
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };
  const shoot = (page: Page, name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: false });

  test('a deep link without a session goes to the login page, and after signing in to the page asked for', async () => {
    page = await context.newPage();
    await page.goto(`${server.url}/runs/${runId}`);
    await page.waitForURL(/\/login\?next=/);
    assert.equal(new URL(page.url()).searchParams.get('next'), `/runs/${runId}`);
    await shoot(page, 'login');
    await signIn(page);
    await page.waitForURL(`${server.url}/runs/${runId}`);
    await page.getByRole('heading', { name: 'Checkout: pay by card' }).waitFor();
  });

  test('a run: its screenshots render, open full size, move with the arrow keys; the visual diff slider moves', async () => {
    await page.goto(`${server.url}/runs/${runId}`);
    await page.getByRole('heading', { name: 'Checkout: pay by card' }).waitFor();
    const thumbnails = page.getByTestId('screenshot');
    await waitFor(async () => (await thumbnails.count()) >= 6, { timeoutMs: 10_000, message: 'six screenshots listed' });
    for (const thumbnail of await thumbnails.all()) {
      await thumbnail.scrollIntoViewIfNeeded();
      await waitFor(() => thumbnail.evaluate(rendered), {
        timeoutMs: 10_000,
        message: 'a screenshot rendered',
      });
    }
    await page.evaluate('window.scrollTo(0, 0)');
    await shoot(page, 'run');

    await thumbnails.first().click();
    const full = page.getByTestId('lightbox-image');
    await waitFor(() => full.evaluate(rendered), { timeoutMs: 10_000 });
    const first = await full.getAttribute('alt');
    await page.keyboard.press('ArrowRight');
    await waitFor(async () => (await full.getAttribute('alt')) !== first, { message: 'the next screenshot shows' });
    await shoot(page, 'lightbox');
    await page.keyboard.press('Escape');
    await waitFor(async () => (await full.count()) === 0, { message: 'Escape closes the viewer' });

    const slider = page.getByTestId('diff-slider');
    await slider.scrollIntoViewIfNeeded();
    const before = await slider.inputValue();
    await slider.focus();
    for (let i = 0; i < 10; i++) await page.keyboard.press('ArrowLeft');
    assert.notEqual(await slider.inputValue(), before, 'the slider moved');
    await shoot(page, 'visual-diff');
  });

  test('the main pages open by their addresses: projects, a project, a job, a test, devices', async () => {
    const run = await server.admin.client.call(v1.runs.getRun, { params: { testRunId: runId } });
    const job = await server.admin.client.call(v1.jobs.createJob, {
      body: { projectId: project.id, name: 'Nightly', testIds: [] },
    });
    await server.admin.client.call(v1.runs.createRun, {
      body: { projectId: project.id, name: 'Login', testName: 'login.spec.ts › Login', jobId: job.id, verdict: 'passed' },
    });
    const login = await server.admin.client.call(v1.runs.createRun, {
      body: { projectId: project.id, name: 'Login', testName: 'login.spec.ts › Login', jobId: job.id, verdict: 'failed' },
    });
    await server.admin.client.call(v1.devices.registerDevice, {
      body: { id: 'R58M123ABC', name: 'Pixel 8', platform: 'android', labels: ['phone', 'eu'] },
    });
    const pages: [string, string, RegExp][] = [
      ['/projects', 'projects', /Web shop/],
      [`/projects/${project.key}`, 'project', new RegExp(run.name)],
      [`/jobs/${job.id}`, 'job', /Nightly/],
      [`/tests/${login.testId}`, 'test', /login\.spec\.ts › Login/],
      ['/devices', 'devices', /Pixel 8/],
    ];
    for (const [address, name, shows] of pages) {
      await page.goto(`${server.url}${address}`);
      await page.getByRole('main').getByText(shows).first().waitFor();
      await shoot(page, name);
    }
    await page.setViewportSize({ width: 768, height: 1000 });
    await page.goto(`${server.url}/runs/${runId}`);
    await page.getByRole('heading', { name: 'Checkout: pay by card' }).waitFor();
    await shoot(page, 'run-tablet');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  test('a run of 1,000 steps and 200 screenshots loads its thumbnails lazily', async () => {
    const client = server.admin.client;
    const big = await client.call(v1.runs.createRun, { body: { projectId: project.id, name: 'Long run' } });
    await client.call(v1.results.appendResults, {
      params: { testRunId: big.id },
      body: {
        steps: Array.from({ length: 1000 }, (_, i) => ({ key: `s${i}`, title: `Step ${i}`, status: 'passed' as const, durationMs: 5 })),
      },
    });
    // Distinct bytes each: identical images are stored once, and would load once.
    const pngs = await Promise.all(Array.from({ length: 200 }, () => randomPng(64, 40)));
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < 200) {
          const i = next++;
          await client.upload(project.id, { testRunId: big.id, stepKey: `s${i * 5}`, kind: 'screenshot', name: `shot-${i}.png` }, [
            { name: `shot-${i}.png`, bytes: pngs[i] as Buffer, type: 'image/png' },
          ]);
        }
      }),
    );
    await client.call(v1.runs.updateRun, { params: { testRunId: big.id }, body: { status: 'completed', verdict: 'passed' } });

    const imageCalls: string[] = [];
    const listen = (request: { url(): string }) => {
      if (request.url().includes('/api/v1/images/')) imageCalls.push(request.url());
    };
    page.on('request', listen);
    await page.goto(`${server.url}/runs/${big.id}`);
    await page.getByRole('heading', { name: 'Long run' }).waitFor();
    // The page draws the long step list in pages of rows; whatever it draws, only what is in view loads.
    const listed = page.getByTestId('screenshot');
    await waitFor(async () => (await listed.count()) > 20, { timeoutMs: 15_000, message: 'screenshots listed' });
    await page.waitForTimeout(1000);
    const atFirst = imageCalls.length;
    assert.ok(atFirst < (await listed.count()), `only the thumbnails in view load at first (${atFirst} of ${await listed.count()} listed)`);
    await listed.last().scrollIntoViewIfNeeded();
    await waitFor(() => imageCalls.length > atFirst, { timeoutMs: 10_000, message: 'scrolling loads the thumbnails that come into view' });
    assert.ok(
      imageCalls.every((url) => url.includes('thumbnail=true')),
      'thumbnails, not full images',
    );
    page.off('request', listen);
  });

  test('an admin changes a role in the page, and it takes effect in the API', async () => {
    const user = await createUser(server, ['viewer'], { projects: [project.id] });
    const write = () => user.client.call(v1.runs.createRun, { body: { projectId: project.id, name: 'by the promoted user' } });
    await assert.rejects(write(), (e: { status: number }) => e.status === 403, 'a viewer cannot write');
    await page.goto(`${server.url}/admin/users?user=${encodeURIComponent(user.email)}`);
    await page.getByTestId('role-tester').check();
    await page.getByTestId('save-roles').click();
    await page.getByTestId('roles-result').waitFor();
    await shoot(page, 'users');
    await waitFor(
      async () =>
        await write()
          .then(() => true)
          .catch(() => false),
      { message: 'the tester role lets the user write' },
    );
  });

  test('an API key created in the page is shown once and works with the API', async () => {
    await page.goto(`${server.url}/keys`);
    await page.getByLabel('Name').fill('made in the browser');
    // A web session confirms a new key with its password (SEC-2f).
    await page.getByLabel('Your password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.getByTestId('new-key-secret').textContent())?.trim() ?? '';
    assert.ok(secret.length > 20, secret);
    await shoot(page, 'keys');
    const me = await server.client(secret).call(v1.meta.getMe);
    assert.equal(me.email, server.admin.email);
    await page.reload();
    await page
      .getByRole('heading', { name: /API keys/ })
      .first()
      .waitFor();
    assert.equal(await page.getByTestId('new-key-secret').count(), 0, 'the secret is not shown again');
  });

  test('a session revoked meanwhile sends the next page to the login, with the place it was going (UI-2)', async () => {
    // The tab's session key, revoked behind its back (as an admin or another tab's logout would).
    const sessionKey = String(await page.evaluate("JSON.parse(sessionStorage.getItem('attest.session')).key"));
    const session = await server.client(sessionKey).call(v1.meta.getMe);
    assert.equal(session.key.format, 'session');
    await server.admin.client.call(v1.users.revokeApiKey, { params: { email: server.admin.email, keyId: session.key.id } });
    expecting401 = true;
    await page.goto(`${server.url}/projects/${project.key}`);
    await page.waitForURL(/\/login\?next=/);
    expecting401 = false;
    assert.equal(new URL(page.url()).searchParams.get('next'), `/projects/${project.key}`);
    await signIn(page);
    await page.waitForURL(`${server.url}/projects/${project.key}`);
  });

  test('the login and run pages load under 200 KB of JavaScript, gzip (UI-3)', () => {
    const total = [...scripts.values()].reduce((sum, size) => sum + size, 0);
    assert.ok(scripts.size > 0);
    assert.ok(total < SCRIPT_BUDGET, `${total} bytes of gzip JavaScript over ${scripts.size} files`);
  });

  test('no page logged a console error', () => {
    assert.deepEqual(consoleErrors, []);
  });
});
