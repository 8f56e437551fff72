import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { v1 } from '../../src/client/index.ts';
import { browserAvailable, openWatchedPage, submitLogin } from '../helpers/browser.ts';
import { createProject, unique } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { delay, waitFor } from '../helpers/wait.ts';

// JOB-1 in the browser: the job page of a launch keeps refreshing between two tests (every run so
// far finished, the launch still open), shows the runs that join meanwhile, says `completed` once
// the reporter closes the launch, and then stops refreshing. The job's and run's CI links (JOB-3).

const PASSWORD = 'correct horse battery staple';
const CI_JOB = 'https://github.com/acme/shop/actions/runs/4512';
const CI_RUN = 'https://github.com/acme/shop/actions/runs/4512/job/99';
/** The job page's refresh period (web/src/pages/job.tsx), and a margin. */
const REFRESH_MS = 3000;

describe('the job page of a streamed launch (JOB-1, JOB-3)', { skip: !browserAvailable() }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let projectId: string;
  const consoleErrors: string[] = [];

  before(async () => {
    server = await startTestServer('sqlite');
    projectId = (await createProject(server, 'Live jobs')).id;
    ({ browser, page } = await openWatchedPage({ consoleErrors }, { server, password: PASSWORD, signIn: false }));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const admin = () => server.admin.client;
  const runOnce = async (jobId: string) => {
    const run = await admin().call(v1.runs.createRun, {
      body: { projectId, name: unique('checkout '), testName: unique('checkout.spec.ts › '), jobId, ciUrl: CI_RUN },
    });
    await admin().call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: 'passed' } });
    return run;
  };
  const tiles = () => page.getByTestId('run-tile').count();

  test('refreshes between tests, turns completed on the close call, then stops refreshing', async () => {
    const job = await admin().call(v1.jobs.createJob, { body: { projectId, name: 'Playwright on main', testIds: [], ciUrl: CI_JOB } });
    const first = await runOnce(job.id);

    await page.goto(`${server.url}/jobs/${job.id}`);
    await submitLogin(page, server.admin.email, PASSWORD);
    await page.getByRole('heading', { name: 'Playwright on main' }).waitFor();
    await waitFor(async () => (await tiles()) === 1, { timeoutMs: 10_000, message: 'the first run shown' });

    // Every run so far has finished: the launch is still running, and the page still live.
    assert.equal(await page.locator('.run-badges .badge').first().textContent(), 'running');
    assert.equal(await page.getByRole('status').count(), 1, 'the page says it is refreshing');
    const link = page.getByTestId('ci-link');
    assert.equal(await link.getAttribute('href'), CI_JOB);

    // The next test arrives between two refreshes: the page shows it without a reload.
    await runOnce(job.id);
    await waitFor(async () => (await tiles()) === 2, { timeoutMs: 4 * REFRESH_MS, message: 'the second run shown by a refresh' });
    assert.equal(await page.locator('.run-badges .badge').first().textContent(), 'running');

    await admin().call(v1.jobs.completeJob, { params: { jobId: job.id } });
    await waitFor(async () => (await page.locator('.run-badges .badge').first().textContent()) === 'completed', {
      timeoutMs: 4 * REFRESH_MS,
      message: 'the page says completed',
    });
    assert.equal(await page.getByRole('status').count(), 0, 'no longer live');

    // Stopped: over more than one refresh period, the page asks the server nothing more about the job.
    const asked: string[] = [];
    page.on('request', (request) => {
      if (request.url().includes(job.id)) asked.push(request.url());
    });
    await delay(REFRESH_MS + 1500);
    assert.deepEqual(asked, [], 'no refresh after the job completed');

    // The run's header links its own CI build.
    await page.goto(`${server.url}/runs/${first.id}`);
    await page.getByRole('heading', { name: first.name }).waitFor();
    assert.equal(await page.getByTestId('ci-link').getAttribute('href'), CI_RUN);
    assert.deepEqual(consoleErrors, []);
  });
});
