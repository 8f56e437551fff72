import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { axeRecord, browserAvailable, openWatchedPage, rendered } from '../helpers/browser.ts';
import { HISTORY_RUNS, JOB_RUNS, RUN_STEPS, type ScalePages, seedScalePages } from '../helpers/scale-pages.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// The web pages at scale (docs/web.md, "Pages at scale"): the project page, a job of 2,000 runs, a
// run of 5,000 steps with 300 screenshots and a test with 10,000 runs of history load in Chromium
// and stay usable: their rows render, scrolling reaches the last row (loading more through the
// API's cursor where the page reads in pages), a screenshot near the end of the run shows, and
// axe-core finds nothing serious. How fast is the benchmark's W1 (bench/web-scale.ts), never a
// timed assertion here.

const PASSWORD = 'correct horse battery staple';

describe('the web pages at scale', { skip: !browserAvailable() }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let data: ScalePages;
  const consoleErrors: string[] = [];
  const axe = axeRecord();

  before(async () => {
    server = await startTestServer('sqlite');
    data = await seedScalePages(server.admin.client, server.app.attest.db);
    ({ browser, page } = await openWatchedPage({ consoleErrors }, { server, password: PASSWORD, signIn: true }));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const checkAccessibility = (view: string) => axe.check(page, view);
  /**
   * Scrolls the page to its bottom until `done`, as a person would, a screen at a time; with
   * `progress` (the rows loaded so far), only 30 s without any fails: loading 10,000 runs a page at
   * a time takes longer than that on a loaded machine.
   */
  const scrollUntil = async (done: () => Promise<boolean>, message: string, progress?: () => Promise<unknown>) => {
    await waitFor(
      async () => {
        await page.mouse.wheel(0, 4000);
        return done();
      },
      { timeoutMs: 30_000, intervalMs: 50, message, progress },
    );
  };

  test('the project page lists its newest runs and pages on through the cursor', async () => {
    await page.goto(`${server.url}/projects/${data.projectKey}`);
    const rows = page.locator('table.list tbody tr');
    await waitFor(async () => (await rows.count()) === 50, { message: 'the first page of 50 runs' });
    await checkAccessibility('project');
    await page.getByRole('link', { name: 'Older runs' }).click();
    await waitFor(async () => new URL(page.url()).searchParams.has('cursor'), { message: 'the next page' });
    await waitFor(async () => (await rows.count()) === 50, { message: 'the second page of 50 runs' });
  });

  test('a job of 2,000 runs: its tiles and its run list draw only what is in view, and scrolling reaches the last', async () => {
    await page.goto(`${server.url}/jobs/${data.jobId}`);
    const rows = page.locator('table.runs-table tbody tr[data-index]');
    await waitFor(async () => (await rows.count()) > 0, { message: 'the run list shows' });
    await waitFor(async () => (await page.getByText(`${JOB_RUNS} runs ·`).count()) === 1, {
      timeoutMs: 20_000,
      message: 'every page of runs loaded',
    });
    assert.equal(await page.locator('table.runs-table').getAttribute('aria-rowcount'), String(JOB_RUNS + 1));
    const tiles = await page.getByTestId('run-tile').count();
    assert.ok(tiles > 0 && tiles < JOB_RUNS / 2, `only the tiles near the viewport are drawn (${tiles})`);
    assert.ok((await rows.count()) < JOB_RUNS / 4, `only the rows near the viewport are drawn (${await rows.count()})`);
    await checkAccessibility('job');
    // The last row (the newest run) is reached by scrolling, and opens its run.
    const last = page.locator(`table.runs-table tbody tr[aria-rowindex="${JOB_RUNS + 1}"]`);
    await scrollUntil(async () => (await last.count()) === 1, 'scrolling reaches the last run');
    await checkAccessibility('job-scrolled');
    const name = (await last.locator('a').first().textContent()) ?? '';
    await last.locator('a').first().click();
    await page.waitForURL(/\/runs\//);
    await page.getByRole('heading', { name }).waitFor();
  });

  test('a run of 5,000 steps: the step list scrolls to its end, where a screenshot shows, and the timeline works by keyboard', async () => {
    await page.goto(`${server.url}/runs/${data.runId}`);
    await page.getByRole('heading', { name: 'Checkout, 5,000 steps' }).waitFor();
    const steps = page.locator('ol.steps > li.step');
    await waitFor(async () => (await steps.count()) > 0, { message: 'the steps show' });
    // 1,000 top-level steps, folded (the failure's way open): far fewer drawn.
    assert.ok((await steps.count()) < 200, `only the steps near the viewport are drawn (${await steps.count()})`);
    // The rows shown: the 1,000 top-level steps and, open on the way to the failure, its 4 inside.
    assert.equal(await steps.first().getAttribute('aria-setsize'), '1004');
    await page.getByText(`${RUN_STEPS} steps`).waitFor();
    await checkAccessibility('run');
    // The timeline is one tab stop that the arrow keys move through every step.
    const stop = page.locator('.timeline-bar[tabindex="0"]');
    assert.equal(await stop.count(), 1);
    await stop.focus();
    await page.keyboard.press('End');
    assert.match((await page.evaluate('document.activeElement?.getAttribute("aria-label")')) as string, /^Action 999\.4: passed/);
    // Scrolling reaches the last top-level step, and the screenshot on step 997 renders.
    const shotStep = page.locator('li.step', { has: page.locator('.step-title', { hasText: new RegExp(`^${data.lastShot.step}$`) }) });
    await scrollUntil(async () => (await shotStep.count()) === 1, `scrolling reaches ${data.lastShot.step}`);
    const shot = shotStep.getByRole('img', { name: `Screenshot ${data.lastShot.name}` });
    await shot.scrollIntoViewIfNeeded();
    await waitFor(() => shot.evaluate(rendered), { timeoutMs: 15_000, message: 'the screenshot near the end renders' });
    await checkAccessibility('run-scrolled');
  });

  test('a test with 10,000 runs: its history, and every run loaded page by page as the list end comes into view', async () => {
    await page.goto(`${server.url}/tests/${data.testId}`);
    const table = page.getByRole('table', { name: 'Runs of this test, newest first' });
    const rows = table.locator('tbody tr:not(.virtual-gap)');
    await waitFor(async () => (await rows.count()) === 200, { message: 'the first 200 runs' });
    await page.getByTestId('history-run').first().waitFor();
    await checkAccessibility('test');
    // The button loads the next page (it may already have pressed itself, near the viewport); scrolling on presses it.
    await page.getByRole('button', { name: /^Load older runs/ }).click();
    await waitFor(async () => Number(await table.getAttribute('aria-rowcount')) >= 401, { message: 'more pages of 200' });
    const total = HISTORY_RUNS + 1; // the imported run, and the history written in bulk
    const last = table.locator(`tr[aria-rowindex="${total + 1}"]`);
    await scrollUntil(
      async () => (await last.count()) === 1,
      'scrolling loads every run and reaches the oldest',
      () => table.getAttribute('aria-rowcount'),
    );
    assert.equal(await table.getAttribute('aria-rowcount'), String(total + 1));
    assert.ok((await rows.count()) < 200, `only the rows near the viewport are drawn (${await rows.count()})`);
    assert.equal(await page.getByRole('button', { name: /^Load older runs/ }).count(), 0, 'nothing more to load');
    await checkAccessibility('test-scrolled');
  });

  test('no console error and no serious accessibility violation on any of these pages', () => {
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(Object.fromEntries(axe.found), {});
  });
});
