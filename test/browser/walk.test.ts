import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { v1 } from '../../src/client/index.ts';
import {
  type AxeViolation,
  browserAvailable,
  dropFile,
  FEATURE_FIXED,
  FEATURE_WITH_A_TYPO,
  launchChromium,
  pasteFile,
  seriousAxeViolations,
  signIn,
  watchedContext,
} from '../helpers/browser.ts';
import { randomPng } from '../helpers/png.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// UI-13, walked in one go in Debian's Chromium against a real server: a
// person creates a project, writes a Gherkin test with one syntax error, sees it at its line and
// fixes it, launches a job of it, executes its run by hand (a PNG pasted from the clipboard into the
// failed step), completes it and sees it on the run page with the screenshot, imports a JUnit file
// by drag and drop, deletes the manual run and reads the project's usage fall on the page. Every
// control is found by its role and accessible name; axe-core checks every page on the way.

const PASSWORD = 'correct horse battery staple';
const KEY = 'WALK';
const JUNIT = readFileSync(new URL('../fixtures/junit/pytest.xml', import.meta.url));
const BROKEN = FEATURE_WITH_A_TYPO;
const FIXED = FEATURE_FIXED;

describe('the walk in Chromium (UI-13)', { skip: !browserAvailable() }, () => {
  let server: TestServer;
  let browser: Browser;
  const consoleErrors: string[] = [];

  before(async () => {
    server = await startTestServer('sqlite');
    await server.admin.client.call(v1.users.setUserPassword, { params: { email: server.admin.email }, body: { password: PASSWORD } });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('project → Gherkin test with its error at its line, fixed → job → executed by hand with a pasted screenshot → run page → JUnit dropped → manual run deleted, usage falls', async () => {
    const page: Page = await (await watchedContext(browser, { consoleErrors })).newPage();
    const axeFound = new Map<string, AxeViolation[]>();
    const checked: string[] = [];
    const check = async (view: string) => {
      checked.push(view);
      const found = await seriousAxeViolations(page);
      if (found.length > 0) axeFound.set(view, found);
    };
    /** The project's run count as the project page shows it ("12 runs · 3 KB stored"). */
    const runsShown = async (): Promise<number> => {
      await page.goto(`${server.url}/projects/${KEY}`);
      const text = (await page.getByTestId('usage-summary').textContent()) ?? '';
      const runs = /^([\d,]+) runs?\b/.exec(text.trim());
      assert.ok(runs, `the project page shows its run count: "${text}"`);
      return Number((runs[1] as string).replace(/,/g, ''));
    };

    await signIn(page, server.url, server.admin.email, PASSWORD);
    await check('projects');

    // A project, from the projects page.
    await page.getByRole('button', { name: 'New project' }).click();
    const newProject = page.getByRole('form', { name: 'New project' });
    await newProject.getByLabel('Key').fill(KEY);
    await newProject.getByLabel('Name').fill('Walk shop');
    await check('projects-new');
    await newProject.getByRole('button', { name: 'Create project' }).click();
    await page.waitForURL(`${server.url}/projects/${KEY}`);
    await page.getByRole('heading', { name: `${KEY} · Walk shop` }).waitFor();
    await check('project');

    // A Gherkin test with one syntax error: the server's error at its line, then fixed.
    await page.getByRole('link', { name: 'Tests', exact: true }).click();
    await page.getByRole('link', { name: 'New test' }).click();
    await page.getByRole('radio', { name: 'Gherkin' }).check();
    await page.getByLabel('Gherkin feature').fill(BROKEN);
    await page.getByRole('button', { name: 'Create test' }).click();
    const error = page.getByTestId('gherkin-error');
    await error.first().waitFor();
    assert.equal(await error.count(), 1, 'one error');
    assert.match((await error.textContent()) ?? '', /line 5/i);
    await page.getByRole('button', { name: 'Line 5' }).waitFor();
    assert.equal(await page.locator('.gherkin-gutter li.gherkin-bad').getAttribute('data-line'), '5', 'line 5 marked beside the text');
    await check('test-editor-error');
    await page.getByLabel('Gherkin feature').fill(FIXED);
    await page.getByRole('button', { name: 'Create test' }).click();
    await page.waitForURL(/\/tests\/[0-9a-f-]{36}$/);
    const testId = page.url().split('/').pop() as string;
    await page.getByRole('heading', { name: 'Version 1' }).waitFor();
    await check('test');

    // A job of it, launched from the tests tree.
    await page.goto(`${server.url}/projects/${KEY}/tests`);
    await page.getByRole('checkbox', { name: 'Choose Pay by card' }).check();
    await check('tests');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    const newJob = page.getByRole('form', { name: 'New job' });
    await newJob.getByLabel('Job name').fill('Walk by hand');
    await check('job-new');
    await newJob.getByRole('button', { name: 'Launch job' }).click();
    await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/);
    await page.getByRole('heading', { name: 'Walk by hand' }).waitFor();
    await check('job');

    // Its queued run, executed by hand.
    await page.getByRole('link', { name: 'Pay by card: queued' }).first().click();
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    const runId = page.url().split('/').pop() as string;
    await page.getByRole('link', { name: 'Execute' }).click();
    await page.waitForURL(`${server.url}/runs/${runId}/execute`);
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.getByRole('button', { name: 'Pass' }).waitFor();
    await check('execute');
    await page.getByRole('heading', { name: 'Step 1 of 2' }).waitFor();
    await page.getByLabel('Actual result').fill('One book in the cart');
    await page.getByRole('button', { name: 'Pass' }).click();
    // "Then" is the expected result of the step before it: two steps.
    await page.getByRole('heading', { name: 'Step 2 of 2' }).waitFor();
    assert.match((await page.getByTestId('step-panel').textContent()) ?? '', /When I pay by card[\s\S]*the order is paid/);
    await page.getByLabel('Actual result').fill('The card was declined');
    await page.getByRole('button', { name: 'Fail' }).click();
    const panel = page.getByTestId('step-panel');
    await panel.getByText('Failed', { exact: true }).waitFor();
    await pasteFile(page, { name: 'image.png', type: 'image/png', bytes: await randomPng(64, 48) });
    const shown = panel.getByRole('img', { name: /, step 2$/ });
    await waitFor(() => shown.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth > 0), {
      timeoutMs: 10_000,
      message: 'the pasted screenshot shown beside its step',
    });
    await check('execute-failed-step');
    await page.getByText('2 of 2 steps marked').waitFor();

    // Completed: the run page shows the verdict and the screenshot.
    assert.equal(await page.getByLabel('Verdict').inputValue(), 'failed');
    await page.getByRole('button', { name: 'Complete run' }).click();
    await page.waitForURL(`${server.url}/runs/${runId}`);
    await page.getByRole('heading', { name: 'Pay by card' }).waitFor();
    const screenshot = page.getByRole('img', { name: /^Screenshot / }).first();
    await screenshot.scrollIntoViewIfNeeded();
    await waitFor(() => screenshot.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth > 0), {
      timeoutMs: 10_000,
      message: 'the screenshot on the run page',
    });
    await check('run');
    const run = await server.admin.client.call(v1.runs.getRun, { params: { testRunId: runId } });
    assert.deepEqual([run.status, run.verdict, run.testId], ['completed', 'failed', testId]);

    // A JUnit file dropped on the import page, reached from the project.
    await page.goto(`${server.url}/projects/${KEY}`);
    await page.getByRole('link', { name: 'Import results' }).click();
    await page.getByRole('heading', { name: /^Import results/ }).waitFor();
    await check('import');
    await dropFile(page, '[data-testid="drop-zone"]', { name: 'pytest.xml', type: 'application/xml', bytes: JUNIT });
    await page.getByTestId('chosen-file').getByText('pytest.xml').waitFor();
    await page.getByRole('button', { name: 'Import results' }).click();
    await page
      .getByTestId('import-progress')
      .getByText(/^Imported \d+ runs of \d+ tests\.$/)
      .waitFor({ timeout: 20_000 });
    await check('import-done');

    // The manual run deleted: the usage the project page shows falls by one run.
    const before = await runsShown();
    assert.ok(before >= 2, `the manual run and the imported ones: ${before}`);
    await page.getByRole('link', { name: 'Pay by card', exact: true }).first().click();
    await page.waitForURL(`${server.url}/runs/${runId}`);
    await page.getByRole('button', { name: 'Delete run' }).click();
    await page.getByText(/The project holds/).waitFor();
    await check('run-delete-confirm');
    await page.getByRole('button', { name: 'Delete Pay by card' }).click();
    await page.getByTestId('usage-change').waitFor();
    assert.match(
      (await page.getByTestId('usage-change').textContent()) ?? '',
      new RegExp(`${before} runs.* before, ${before - 1} runs.* now`),
    );
    await check('run-deleted');
    assert.equal(await runsShown(), before - 1, 'the project page shows one run fewer');

    assert.deepEqual(Object.fromEntries(axeFound), {}, `axe-core on ${checked.join(', ')}`);
    // The one refusal the walk provokes (the feature that does not parse) is logged by Chromium; nothing else.
    assert.deepEqual(
      consoleErrors.filter((e) => !/status of 400 .*\/api\/v1\/testmgmt\/tests\)$/.test(e)),
      [],
    );
  });
});
