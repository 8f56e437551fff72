import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { v1 } from '../../src/client/index.ts';
import { axeRecord, browserAvailable, openWatchedPage, rendered, submitLogin } from '../helpers/browser.ts';
import { tempDir } from '../helpers/data-folders.ts';
import { runWithEvidence } from '../helpers/export-fixture.ts';
import { createProject, createUser } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { shopScreen } from '../helpers/screens.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// UI-1..UI-4, end to end in Debian's Chromium against a real server: sign in, deep links, a run's
// screenshots and visual diff, an admin changing a role and a key made in the page used with the
// API; no console error on any page; axe-core finds no serious or critical accessibility
// violation on any page, and the run's timeline and error blocks work from the keyboard (UI-5). Each main page is photographed: into docs/screenshots/ with
// ATTEST_UPDATE_SCREENSHOTS=1 (how the committed pictures were made), else into a temp folder.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SHOTS = process.env.ATTEST_UPDATE_SCREENSHOTS === '1' ? path.join(ROOT, 'docs/screenshots') : tempDir('attest-web-shots-');
const PASSWORD = 'correct horse battery staple';
/** The budget of JavaScript the login and run pages load, gzip (UI-3). */
const SCRIPT_BUDGET = 200 * 1024;
/** Every view axe-core checks (UI-5): each page, and the run's visual diff and lightbox. */
const AXE_VIEWS = [
  'login',
  'run',
  'lightbox',
  'visual-diff',
  'projects',
  'project',
  'job',
  'test',
  'devices',
  'users',
  'keys',
  'keys-secret',
  'not-found',
  'run-keyboard',
];

/** The part of a computed style the tests read (the test code is typed without the DOM). */
type CSSStyle = { strokeWidth: string };

describe('the web interface in Chromium (UI-1..UI-4)', { skip: !browserAvailable() }, () => {
  let server: TestServer;
  let browser: Browser;
  let project: { id: string; key: string };
  let runId: string;
  /** One tab for the whole walk: the session lives in the tab's sessionStorage, as it does for a person. */
  let page: Page;
  const consoleErrors: string[] = [];
  /** The 401s a test makes the server answer on purpose, which Chromium logs as errors: not the page's. */
  let provoked401 = 0;
  /** Every script the pages loaded, by URL, with its gzip size. */
  const scripts = new Map<string, number>();
  /** axe-core's serious and critical violations, by view, and the views it checked. */
  const axe = axeRecord();

  before(async () => {
    server = await startTestServer('sqlite');
    project = await createProject(server, 'Web shop');
    runId = (await runWithEvidence(server, 6, { projectId: project.id, image: shopScreen })).runId;
    ({ browser, page } = await openWatchedPage({ consoleErrors, scripts }, { server, password: PASSWORD, signIn: false }));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const signIn = (page: Page) => submitLogin(page, server.admin.email, PASSWORD);
  const shoot = (page: Page, name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: false });

  test('a deep link without a session goes to the login page, and after signing in to the page asked for', async () => {
    await page.goto(`${server.url}/runs/${runId}`);
    await page.waitForURL(/\/login\?next=/);
    assert.equal(new URL(page.url()).searchParams.get('next'), `/runs/${runId}`);
    await shoot(page, 'login');
    await axe.check(page, 'login');
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
    await axe.check(page, 'run');

    await thumbnails.first().click();
    const full = page.getByTestId('lightbox-image');
    await waitFor(() => full.evaluate(rendered), { timeoutMs: 10_000 });
    const first = await full.getAttribute('alt');
    await page.keyboard.press('ArrowRight');
    await waitFor(async () => (await full.getAttribute('alt')) !== first, { message: 'the next screenshot shows' });
    await shoot(page, 'lightbox');
    await axe.check(page, 'lightbox');
    await page.keyboard.press('Escape');
    await waitFor(async () => (await full.count()) === 0, { message: 'Escape closes the viewer' });

    const slider = page.getByTestId('diff-slider');
    await slider.scrollIntoViewIfNeeded();
    const before = await slider.inputValue();
    await slider.focus();
    for (let i = 0; i < 10; i++) await page.keyboard.press('ArrowLeft');
    assert.notEqual(await slider.inputValue(), before, 'the slider moved');
    await shoot(page, 'visual-diff');
    await axe.check(page, 'visual-diff');
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
      await axe.check(page, name);
    }
    // An address the server answers with the application (under /admin/), that no page has.
    await page.goto(`${server.url}/admin/no-such-page`);
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    await axe.check(page, 'not-found');
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
    let inFlight = 0;
    const isImage = (request: { url(): string }) => request.url().includes('/api/v1/images/');
    const listen = (request: { url(): string }) => {
      if (!isImage(request)) return;
      imageCalls.push(request.url());
      inFlight++;
    };
    const ended = (request: { url(): string }) => {
      if (isImage(request)) inFlight--;
    };
    page.on('request', listen);
    page.on('requestfinished', ended);
    page.on('requestfailed', ended);
    await page.goto(`${server.url}/runs/${big.id}`);
    await page.getByRole('heading', { name: 'Long run' }).waitFor();
    // The page draws only the steps near the viewport (docs/web.md, "Pages at scale"); of those,
    // only what is in view loads.
    const listed = page.getByTestId('screenshot');
    await waitFor(async () => (await listed.count()) > 0, { timeoutMs: 15_000, message: 'screenshots listed' });
    // Wait until the page is at rest: the thumbnails in view have rendered and no image call is in
    // flight. A page that loaded every thumbnail would not come to rest before it had asked for all.
    const inViewRendered = () =>
      page.evaluate(`(() => {
        const inView = [...document.querySelectorAll('[data-testid="screenshot"]')].filter((img) => {
          const box = img.getBoundingClientRect();
          return box.bottom > 0 && box.top < innerHeight;
        });
        return inView.length > 0 && inView.every((img) => img.complete && img.naturalWidth > 0 && img.src.startsWith('blob:'));
      })()`);
    await waitFor(async () => inFlight === 0 && (await inViewRendered()), {
      timeoutMs: 15_000,
      message: () => `the thumbnails in view rendered and no image call in flight (${inFlight} in flight, ${imageCalls.length} made)`,
    });
    const atFirst = imageCalls.length;
    assert.ok(atFirst < 200, `only the thumbnails in view load at first (${atFirst} of the run's 200)`);
    await listed.last().scrollIntoViewIfNeeded();
    await waitFor(() => imageCalls.length > atFirst, { timeoutMs: 10_000, message: 'scrolling loads the thumbnails that come into view' });
    assert.ok(
      imageCalls.every((url) => url.includes('thumbnail=true')),
      'thumbnails, not full images',
    );
    page.off('request', listen);
    page.off('requestfinished', ended);
    page.off('requestfailed', ended);
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
    await axe.check(page, 'users');
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
    await page.getByLabel('Name').waitFor();
    await axe.check(page, 'keys');
    await page.getByLabel('Name').fill('made in the browser');
    // A web session confirms a new key with its password (SEC-2f).
    await page.getByLabel('Your password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.getByTestId('new-key-secret').textContent())?.trim() ?? '';
    assert.ok(secret.length > 20, secret);
    await shoot(page, 'keys');
    await axe.check(page, 'keys-secret');
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
    const logged = consoleErrors.length;
    await page.goto(`${server.url}/projects/${project.key}`);
    await page.waitForURL(/\/login\?next=/);
    provoked401 += consoleErrors.slice(logged).filter((line) => line.includes('status of 401')).length;
    assert.ok(provoked401 > 0, 'the revoked session was refused');
    assert.equal(new URL(page.url()).searchParams.get('next'), `/projects/${project.key}`);
    await signIn(page);
    await page.waitForURL(`${server.url}/projects/${project.key}`);
  });

  test("a run's timeline bars and its long error work from the keyboard (UI-5)", async () => {
    const client = server.admin.client;
    const run = await client.call(v1.runs.createRun, { body: { projectId: project.id, name: 'Keyboard run' } });
    const trace = Array.from({ length: 120 }, (_, i) => `    at frame${i} (checkout.spec.ts:${i + 1}:7)`).join('\n');
    await client.call(v1.results.appendResults, {
      params: { testRunId: run.id },
      body: {
        steps: [
          { key: 'a', title: 'Open the shop', status: 'passed', durationMs: 400 },
          { key: 'b', title: 'Fill the card form', status: 'passed', durationMs: 900 },
          { key: 'c', title: 'Pay', status: 'failed', durationMs: 700, error: `Error: card declined\n${trace}` },
        ],
      },
    });
    await client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: 'failed' } });
    await page.goto(`${server.url}/runs/${run.id}`);
    await page.getByRole('heading', { name: 'Keyboard run' }).waitFor();
    const focused = () => page.evaluate('document.activeElement?.getAttribute("aria-label") ?? ""') as Promise<string>;

    // Tab reaches the timeline: one stop for all its bars, each a named button.
    const bars = page.locator('.timeline-bar');
    assert.equal(await bars.count(), 3);
    for (let i = 0; i < 3; i++) assert.equal(await bars.nth(i).getAttribute('role'), 'button');
    assert.equal(await page.locator('.timeline-bar[tabindex="0"]').count(), 1, 'one tab stop for the bars');
    for (let presses = 0; presses < 40 && !(await focused()).startsWith('Open the shop'); presses++) await page.keyboard.press('Tab');
    assert.match(await focused(), /^Open the shop: passed, /, 'Tab reaches the first bar');
    const first = page.getByRole('button', { name: /^Open the shop: passed/ });
    assert.equal(await first.evaluate((bar) => bar.matches(':focus-visible')), true);
    // The focus shows: the focused bar is drawn with a dark edge it does not have otherwise.
    const edge = (name: RegExp) =>
      page
        .getByRole('button', { name })
        .locator('rect')
        .evaluate((rect) => (globalThis as unknown as { getComputedStyle(e: unknown): CSSStyle }).getComputedStyle(rect).strokeWidth);
    assert.equal(await edge(/^Open the shop/), '2px');
    assert.equal(await edge(/^Pay/), '1px');

    // The arrow keys move between the bars; Enter (as a click) shows the step in the tree.
    await page.keyboard.press('ArrowRight');
    assert.match(await focused(), /^Fill the card form: passed, /);
    await page.keyboard.press('ArrowRight');
    assert.match(await focused(), /^Pay: failed, /);
    await page.keyboard.press('Enter');
    const payRow = page.locator('li.step', { has: page.locator('.step-title', { hasText: /^Pay$/ }) });
    await waitFor(async () => (await payRow.getAttribute('class'))?.includes('highlighted'), {
      message: 'Enter shows the step in the tree',
    });
    await waitFor(() => page.evaluate('document.activeElement?.textContent === "Pay"'), { message: 'the step title has the focus' });
    // Space does the same; the bar last moved to stays the timeline's tab stop.
    // The step tree re-renders after Enter (the highlight, the focus moved into it): Space goes to the bar once it holds the focus.
    const openBar = page.getByRole('button', { name: /^Open the shop/ });
    await waitFor(
      async () => {
        await openBar.focus();
        return openBar.evaluate((bar) => bar.ownerDocument.activeElement === bar);
      },
      { message: 'the bar has the focus' },
    );
    await page.keyboard.press('Space');
    const openRow = page.locator('li.step', { has: page.locator('.step-title', { hasText: /^Open the shop$/ }) });
    await waitFor(async () => (await openRow.getAttribute('class'))?.includes('highlighted'), {
      message: 'Space shows the step in the tree',
    });

    // The long error scrolls in its box, which the keyboard can reach and scroll.
    const error = page.getByRole('group', { name: 'Error of Pay' });
    assert.equal(await error.getAttribute('tabindex'), '0');
    assert.ok(await error.evaluate((box) => box.scrollHeight > box.clientHeight), 'the error is longer than its box');
    // The highlight above may still be re-rendering the tree: the key goes to the box once it holds the focus.
    await waitFor(
      async () => {
        await error.focus();
        return error.evaluate((box) => box.ownerDocument.activeElement === box);
      },
      { message: 'the error box has the focus' },
    );
    await page.keyboard.press('PageDown');
    await waitFor(() => error.evaluate((box) => box.scrollTop > 0), { message: 'PageDown scrolls the focused error' });
    await axe.check(page, 'run-keyboard');
  });

  test('axe-core finds no serious or critical accessibility violation on any page (UI-5)', () => {
    const unchecked = AXE_VIEWS.filter((view) => !axe.checked.has(view));
    assert.deepEqual({ unchecked, violations: Object.fromEntries(axe.found) }, { unchecked: [], violations: {} });
  });

  test('the login and run pages load under 200 KB of JavaScript, gzip (UI-3)', () => {
    const total = [...scripts.values()].reduce((sum, size) => sum + size, 0);
    assert.ok(scripts.size > 0);
    assert.ok(total < SCRIPT_BUDGET, `${total} bytes of gzip JavaScript over ${scripts.size} files`);
  });

  test('no page logged a console error', () => {
    const unprovoked = consoleErrors.filter((line) => !line.includes('status of 401'));
    assert.deepEqual(unprovoked, []);
    assert.equal(consoleErrors.length - unprovoked.length, provoked401, 'no 401 but the revoked session’s');
  });
});
