import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import type { AttestClient } from '../../src/client/index.ts';
import { ApiError, v1 } from '../../src/client/index.ts';
import { axeRecord, browserAvailable, openWatchedPage } from '../helpers/browser.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// UI-12 in Debian's Chromium against a real server: a manager deletes a
// test with its runs (cascade), deletes a job naming its runs, deletes an artifact from a run page
// (and sees a refused deletion come back with the API's problem), and opens a device's own page
// from the lab. axe-core checks each new view; no console error on the way.

const PASSWORD = 'correct horse battery staple';

/** Whether an API call answers 404 now. */
async function gone(call: () => Promise<unknown>): Promise<boolean> {
  try {
    await call();
    return false;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return true;
    throw error;
  }
}

describe('deleting tests, jobs and artifacts and a device page in the web interface, in Chromium (UI-12)', {
  skip: !browserAvailable(),
}, () => {
  let server: TestServer;
  let client: AttestClient;
  let browser: Browser;
  let page: Page;
  let projectId: string;
  const consoleErrors: string[] = [];
  const axe = axeRecord();
  /** Requests the page made that the API refused on purpose in a test: not console errors of the page's own. */
  const expectedRefusals: string[] = [];

  const check = (view: string) => axe.check(page, view);

  before(async () => {
    server = await startTestServer('sqlite');
    client = server.admin.client;
    projectId = (await client.call(v1.projects.createProject, { body: { key: 'LAB', name: 'Lab' } })).id;
    ({ browser, page } = await openWatchedPage({ consoleErrors }, { server, password: PASSWORD, signIn: true }));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('Delete test: the confirmation names its 2 runs and the project’s usage, deletes them with it (cascade) and shows what it freed, then the tests list', async () => {
    const first = await client.call(v1.runs.createRun, {
      body: { projectId, name: 'Doomed', testName: 'doomed.spec.ts › Doomed', verdict: 'passed' },
    });
    const testId = first.testId as string;
    const second = await client.call(v1.runs.createRun, { body: { projectId, name: 'Doomed', testId, verdict: 'failed' } });
    await page.goto(`${server.url}/tests/${testId}`);
    await page.getByRole('button', { name: 'Delete test', exact: true }).click();
    const confirmation = page.getByTestId('delete-test');
    await confirmation.getByText(/its 2 runs/).waitFor();
    await check('test-delete-confirm');
    await confirmation.getByText('The project holds 2 runs').waitFor();
    await confirmation.getByRole('button', { name: /^Delete .* and its runs$/ }).click();
    // What it freed: the project's usage before and after, read from the API around the deletion.
    const change = page.getByTestId('usage-change');
    await change.waitFor();
    assert.match((await change.textContent()) ?? '', /^Project usage: 2 runs, .* stored before, 0 runs, .* stored now \(.* freed\)\.$/);
    await page.getByRole('heading', { name: /^Deleted the test .*Doomed and its runs$/ }).waitFor();
    await check('test-deleted');
    await page.getByRole('link', { name: 'The project’s tests' }).click();
    await page.waitForURL(`${server.url}/projects/${projectId}/tests`);
    assert.ok(await gone(() => client.call(v1.tests.getTest, { params: { testId } })), 'the test is gone');
    for (const run of [first, second]) {
      assert.ok(await gone(() => client.call(v1.runs.getRun, { params: { testRunId: run.id } })), 'its runs went with it');
    }
  });

  test('Delete job: the confirmation names its runs and the project’s usage; once it is gone, what it freed, then the project', async () => {
    const job = await client.call(v1.jobs.createJob, { body: { projectId, name: 'Nightly', testIds: [] } });
    const runs = await Promise.all(
      ['One', 'Two', 'Three'].map((name) =>
        client.call(v1.runs.createRun, { body: { projectId, name, testName: `${name}.spec`, jobId: job.id, verdict: 'passed' } }),
      ),
    );
    await client.call(v1.jobs.completeJob, { params: { jobId: job.id } }).catch(() => undefined);
    await page.goto(`${server.url}/jobs/${job.id}`);
    await page.getByRole('button', { name: 'Delete job', exact: true }).click();
    const confirmation = page.getByTestId('delete-job');
    await confirmation
      .getByText(/its 3 runs/)
      .first()
      .waitFor();
    await check('job-delete-confirm');
    await confirmation.getByText('The project holds 3 runs').waitFor();
    await confirmation.getByRole('button', { name: 'Delete Nightly and its 3 runs' }).click();
    const change = page.getByTestId('usage-change');
    await change.waitFor();
    assert.match((await change.textContent()) ?? '', /^Project usage: 3 runs, .* stored before, 0 runs, .* stored now \(.* freed\)\.$/);
    await page.getByRole('heading', { name: 'Deleted the job Nightly and its 3 runs' }).waitFor();
    await check('job-deleted');
    await page.getByRole('link', { name: 'Back to the project' }).click();
    await page.waitForURL(`${server.url}/projects/${projectId}`);
    assert.ok(await gone(() => client.call(v1.jobs.getJob, { params: { jobId: job.id } })), 'the job is gone');
    for (const run of runs) assert.ok(await gone(() => client.call(v1.runs.getRun, { params: { testRunId: run.id } })));
  });

  test('Delete artifact: asked first, gone from the run page at once; a refused deletion comes back with the API’s problem', async () => {
    const run = await client.call(v1.runs.createRun, { body: { projectId, name: 'With files', testName: 'files.spec' } });
    const uploaded: Record<string, string> = {};
    for (const name of ['console.log', 'network.log']) {
      const answer = await client.upload(projectId, { testRunId: run.id, kind: 'log', name }, [
        { name, bytes: Buffer.from(`${name}: some lines\n`), type: 'text/plain' },
      ]);
      uploaded[name] = String(answer.id);
    }
    await client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: 'passed' } });
    await page.goto(`${server.url}/runs/${run.id}`);
    const list = page.getByRole('region', { name: 'Artifacts' });
    await list.getByRole('button', { name: 'Delete artifact console.log' }).click();
    await check('artifact-delete-confirm');
    await list.getByRole('button', { name: 'Yes, delete console.log' }).click();
    await list.getByText('Deleted console.log.').waitFor();
    assert.equal(await list.getByTestId('artifact-row').count(), 1, 'the row is gone');
    const left = await client.call(v1.artifacts.listArtifacts, { params: { projectId }, query: { testRunId: run.id } });
    assert.deepEqual(
      left.items.map((a) => a.name),
      ['network.log'],
      'deleted through the API',
    );

    // Deleted meanwhile by someone else: the API answers 404, and the row comes back with its problem.
    await client.call(v1.artifacts.deleteArtifact, { params: { artifactId: uploaded['network.log'] as string } });
    expectedRefusals.push('404');
    await list.getByRole('button', { name: 'Delete artifact network.log' }).click();
    await list.getByRole('button', { name: 'Yes, delete network.log' }).click();
    await list.getByRole('alert').waitFor();
    assert.match((await list.getByRole('alert').textContent()) ?? '', /\(404\)/);
    assert.equal(await list.getByTestId('artifact-row').count(), 1, 'the refused deletion is rolled back');
    await list.getByRole('button', { name: 'Delete artifact network.log' }).waitFor();
  });

  test('a device opens on its own page from the lab, by its name, with Edit and Retire', async () => {
    await client.call(v1.devices.registerDevice, {
      body: { id: 'R58M123ABC', name: 'Pixel 8', platform: 'android', model: 'Pixel 8', manufacturer: 'Google', labels: ['phone'] },
    });
    await page.goto(`${server.url}/devices`);
    await page.getByRole('link', { name: 'Pixel 8' }).click();
    await page.waitForURL(`${server.url}/devices/R58M123ABC`);
    await page.getByRole('heading', { name: 'Pixel 8' }).waitFor();
    await page.getByText('R58M123ABC').waitFor();
    await check('device');
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await page.getByLabel('Name').fill('Pixel 8 Pro');
    await page.getByRole('button', { name: 'Save device' }).click();
    await page.getByRole('heading', { name: 'Pixel 8 Pro', level: 1 }).waitFor();
    // The heading shows the change at once (before the API answers); the form closes once it is saved.
    await page.getByRole('button', { name: 'Save device' }).waitFor({ state: 'detached' });
    assert.equal((await client.call(v1.devices.getDevice, { params: { deviceId: 'R58M123ABC' } })).name, 'Pixel 8 Pro');
    // An address typed in: the server serves the application under /devices/.
    await page.goto(`${server.url}/devices/R58M123ABC`);
    await page.getByRole('button', { name: 'Retire Pixel 8 Pro' }).click();
    await page.getByRole('button', { name: 'Retire Pixel 8 Pro' }).click();
    await page.waitForURL(`${server.url}/devices`);
  });

  test('no serious or critical axe-core violation on the new views, and no console error but the refusal asked for', () => {
    assert.deepEqual(Object.fromEntries(axe.found), {});
    // The browser logs a failed request (the 404 of the artifact deleted meanwhile) as a console error.
    const unexpected = consoleErrors.filter((line) => !(expectedRefusals.length > 0 && /status of 404/.test(line)));
    assert.deepEqual(unexpected, []);
  });
});
