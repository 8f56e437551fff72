import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { v1 } from '../../src/client/index.ts';
import { axeRecord, browserAvailable, descriptionOf, dropFile, openWatchedPage, pasteFile, submitLogin } from '../helpers/browser.ts';
import { createProject } from '../helpers/factories.ts';
import { randomPng } from '../helpers/png.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// UI-10..UI-12 in Chromium against a real server: a run of a test executed by hand (marks, actual
// results, a screenshot pasted from the clipboard into a failed step, keyboard shortcuts, a reload
// half-way that resumes without duplicates), completed and seen on the run page; a JUnit report
// imported by drag and drop; the run deleted and the project's usage falling; the device lab
// edited; the audit log filtered; your own password changed. axe-core on every new page; the
// execution page within the JavaScript budget at a phone's width too.

const PASSWORD = 'correct horse battery staple';
/** The budget of JavaScript a page loads, gzip (UI-3). */
const SCRIPT_BUDGET = 200 * 1024;
const JUNIT = readFileSync(new URL('../fixtures/junit/pytest.xml', import.meta.url));

describe('manual execution, imports and management in Chromium (UI-10..UI-12)', { skip: !browserAvailable() }, () => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let project: { id: string; key: string };
  let testId: string;
  let runId: string;
  const consoleErrors: string[] = [];
  const scripts = new Map<string, number>();
  const axe = axeRecord();

  before(async () => {
    server = await startTestServer('sqlite');
    project = await createProject(server, 'Manual shop');
    const created = await server.admin.client.call(v1.tests.createTest, {
      body: {
        projectId: project.id,
        name: 'Checkout by hand',
        steps: [
          { action: 'Open the basket', expected: 'Two items are listed' },
          { action: 'Apply a discount code', data: 'SPRING', expected: 'The total falls by 10 %' },
          { action: 'Pay by card', expected: 'The receipt shows' },
          { action: 'Print the receipt', expected: 'A PDF opens' },
        ],
      },
    });
    testId = created.id;
    ({ browser, context, page } = await openWatchedPage({ consoleErrors, scripts }, { server, password: PASSWORD, signIn: false }));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const checkAccessibility = (view: string) => axe.check(page, view);
  const storedSteps = async () =>
    (await server.admin.client.call(v1.results.getResults, { params: { testRunId: runId }, query: { partial: true } })).steps;
  const storedArtifacts = async () =>
    (await server.admin.client.call(v1.artifacts.listArtifacts, { params: { projectId: project.id }, query: { testRunId: runId } })).items;
  const panel = () => page.getByTestId('step-panel');

  test('"Execute" on a test starts a run and opens it step by step', async () => {
    await page.goto(`${server.url}/tests/${testId}`);
    await submitLogin(page, server.admin.email, PASSWORD);
    await page.getByRole('button', { name: 'Execute' }).click();
    await page.waitForURL(/\/runs\/[0-9a-f-]+\/execute$/);
    runId = page.url().split('/').at(-2) as string;
    await page.getByRole('heading', { name: 'Step 1 of 4' }).waitFor();
    assert.match((await panel().textContent()) ?? '', /Open the basket[\s\S]*Two items are listed/);
    const run = await server.admin.client.call(v1.runs.getRun, { params: { testRunId: runId } });
    assert.equal(run.status, 'running');
    assert.equal(run.testId, testId);
    assert.equal(run.testVersion, 1);
    await page.getByText('(version 1)').waitFor();
    await checkAccessibility('execute');
  });

  test('a pass with its actual result is stored at once, and a reload half-way resumes at the next step without duplicates', async () => {
    await page.getByLabel('Actual result').fill('Two items, as expected');
    await page.getByRole('button', { name: 'Pass' }).click();
    await page.getByRole('heading', { name: 'Step 2 of 4' }).waitFor();
    await waitFor(async () => (await storedSteps()).length === 1, { message: 'the first step stored' });

    await page.reload();
    await page.getByRole('heading', { name: 'Step 2 of 4' }).waitFor();
    await page.getByText('1 of 4 steps marked').waitFor();
    const steps = await storedSteps();
    assert.deepEqual(
      steps.map((s) => [s.key, s.status, s.cells.find((c) => c.name === 'actual')?.text]),
      [['step-1', 'passed', 'Two items, as expected']],
    );
  });

  test('a failed step takes a PNG pasted from the clipboard, uploaded at once and shown beside it; pasting it again stores nothing twice', async () => {
    assert.match((await panel().textContent()) ?? '', /Data\s*SPRING/);
    await page.getByLabel('Actual result').fill('The total did not change');
    await page.getByRole('button', { name: 'Fail' }).click();
    await panel().getByText('Failed', { exact: true }).waitFor();
    const png = { name: 'image.png', type: 'image/png', bytes: await randomPng(64, 48) };
    const paste = () => pasteFile(page, png);
    await paste();
    const shot = panel().getByTestId('step-screenshot');
    await waitFor(() => shot.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth > 0), {
      timeoutMs: 10_000,
      message: 'the pasted screenshot shown beside its step',
    });
    await paste();
    await waitFor(async () => (await page.getByLabel(/^Uploading /).count()) === 0, { message: 'the second upload answered' });
    const artifacts = await storedArtifacts();
    assert.equal(artifacts.length, 1, 'the same image pasted twice is one artifact');
    const failed = (await storedSteps()).find((s) => s.key === 'step-2');
    assert.equal(failed?.status, 'failed');
    assert.equal(failed?.error, 'The total did not change');
    assert.equal(artifacts[0]?.stepId, failed?.id);
    assert.equal(artifacts[0]?.kind, 'screenshot');
    await checkAccessibility('execute-failed-step');
  });

  test('the keyboard: N goes to the next step, B marks it blocked, S skips the last', async () => {
    await page.getByRole('heading', { name: 'Step 2 of 4' }).focus();
    await page.keyboard.press('n');
    await page.getByRole('heading', { name: 'Step 3 of 4' }).waitFor();
    await page.keyboard.press('b');
    await page.locator('#step-heading').getByText('Blocked', { exact: true }).waitFor();
    await page.keyboard.press('n');
    await page.getByRole('heading', { name: 'Step 4 of 4' }).waitFor();
    await page.keyboard.press('s');
    await page.locator('#step-heading').getByText('Skipped', { exact: true }).waitFor();
    await waitFor(async () => (await storedSteps()).length === 4, { message: 'four steps stored' });
    // Blocked is stored as the contract says: broken, with a `blocked` cell, and no error to group.
    const blocked = (await storedSteps()).find((s) => s.key === 'step-3');
    assert.equal(blocked?.status, 'broken');
    assert.equal(blocked?.error, null);
    assert.deepEqual(
      blocked?.cells.map((c) => [c.name, c.text]),
      [
        ['expected', 'The receipt shows'],
        ['blocked', 'blocked'],
      ],
    );
  });

  test('at a phone’s width the page fits, and it loads within the JavaScript budget', async () => {
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    // The session lives in the tab: the new tab signs in through the deep link.
    scripts.clear();
    await phone.goto(`${server.url}/runs/${runId}/execute`);
    await submitLogin(phone, server.admin.email, PASSWORD);
    await phone.getByRole('heading', { name: 'Step 4 of 4' }).waitFor();
    await phone.waitForLoadState('networkidle');
    const overflow = await phone.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    assert.ok(Number(overflow) <= 0, `no sideways scrolling at 390 px (${overflow} px too wide)`);
    const total = [...scripts.values()].reduce((a, b) => a + b, 0);
    assert.ok(total > 0 && total < SCRIPT_BUDGET, `login and execution pages load ${total} bytes of JavaScript, gzip`);
    await phone.close();
  });

  test('"Complete run" with the verdict the steps suggest; the run page shows it with the screenshot', async () => {
    assert.equal(await page.getByLabel('Verdict').inputValue(), 'failed');
    await page.getByRole('button', { name: 'Complete run' }).click();
    await page.waitForURL(`${server.url}/runs/${runId}`);
    const run = await server.admin.client.call(v1.runs.getRun, { params: { testRunId: runId } });
    assert.equal(run.status, 'completed');
    assert.equal(run.verdict, 'failed');
    const shot = page.getByTestId('screenshot').first();
    await shot.scrollIntoViewIfNeeded();
    await waitFor(() => shot.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth > 0), {
      timeoutMs: 10_000,
      message: 'the screenshot on the run page',
    });
    assert.deepEqual(
      (await storedSteps()).map((s) => [s.key, s.status]),
      [
        ['step-1', 'passed'],
        ['step-2', 'failed'],
        ['step-3', 'broken'],
        ['step-4', 'skipped'],
      ],
    );
    // The run page reads the blocked step as blocked, and shows the version the run executed.
    await page.getByText('blocked', { exact: true }).first().waitFor();
  });

  test('a JUnit file dropped on the import page is uploaded, then its import shows its progress to the end', async () => {
    await page.goto(`${server.url}/projects/${project.key}/import`);
    await page.getByRole('heading', { name: /Import results/ }).waitFor();
    await checkAccessibility('import');
    await dropFile(page, '[data-testid="drop-zone"]', { name: 'pytest.xml', type: 'application/xml', bytes: JUNIT });
    await page.getByTestId('chosen-file').getByText('pytest.xml').waitFor();
    await page.getByLabel('Branch').fill('main');
    await page.getByRole('button', { name: 'Import results' }).click();
    const progress = page.getByTestId('import-progress');
    await progress.getByText(/^Imported \d+ runs of \d+ tests\.$/).waitFor({ timeout: 20_000 });
    await progress.getByRole('link', { name: 'Open the imported job' }).waitFor();
    await page.getByRole('table', { name: 'Latest imports' }).getByText('pytest.xml').waitFor();
    await checkAccessibility('import-done');
    const imports = await server.admin.client.call(v1.imports.listImports, { params: { projectId: project.id } });
    assert.equal(imports.items.length, 1);
    assert.equal(imports.items[0]?.options.branch, 'main');
  });

  test('an import refused shows the API’s problem next to its field', async () => {
    await dropFile(page, '[data-testid="drop-zone"]', { name: 'again.xml', type: 'application/xml', bytes: JUNIT });
    // A CI link is an http(s) address: the API refuses another, and the page says so at the field.
    await page.getByLabel('CI build link').fill('ftp://ci.example.com/build/7');
    await page.getByRole('button', { name: 'Import results' }).click();
    const ciLink = page.getByLabel('CI build link');
    const said = await waitFor(() => descriptionOf(ciLink), { message: 'the API’s problem as the field’s description' });
    assert.match(said, /pattern|http/i);
    assert.equal(await ciLink.getAttribute('aria-invalid'), 'true');
  });

  test('"Delete run" asks first, then shows the project’s usage falling', async () => {
    const before = await server.admin.client.call(v1.projects.getProjectUsage, { params: { projectId: project.id } });
    await page.goto(`${server.url}/runs/${runId}`);
    await page.getByRole('button', { name: 'Delete run' }).click();
    await page.getByText(/The project holds/).waitFor();
    await checkAccessibility('run-delete-confirm');
    await page.getByRole('button', { name: 'Delete Checkout by hand' }).click();
    const change = page.getByTestId('usage-change');
    await change.waitFor();
    const after = await server.admin.client.call(v1.projects.getProjectUsage, { params: { projectId: project.id } });
    assert.equal(after.runs, before.runs - 1);
    assert.ok(after.storedBytes < before.storedBytes, 'the screenshot’s bytes are no longer counted');
    assert.match((await change.textContent()) ?? '', new RegExp(`${before.runs} runs.*before, ${after.runs} runs.*now`));
    await assert.rejects(server.admin.client.call(v1.runs.getRun, { params: { testRunId: runId } }), /404/);
  });

  test('the audit log, filtered by action, shows the deletion', async () => {
    await page.goto(`${server.url}/admin/audit`);
    await page.getByRole('table', { name: 'Audit log' }).waitFor();
    await page.getByLabel('Action').fill('run.delete');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/action=run\.delete/);
    const table = page.getByRole('table', { name: 'Audit log' });
    await table.getByText(runId).waitFor();
    await waitFor(async () => (await table.locator('tbody tr').count()) === 1, { message: 'only the deletion listed' });
    await checkAccessibility('audit');
  });

  test('the device lab: a manager registers a device (the API’s problem beside its field), edits it and retires it', async () => {
    await page.goto(`${server.url}/devices`);
    await page.getByRole('button', { name: 'New device' }).click();
    await page.getByLabel('Device id (serial, UDID)').fill('pixel 8');
    await page.getByLabel('Name', { exact: true }).fill('Pixel 8');
    await page.getByLabel('Labels (comma-separated)').fill('android, phone');
    await page.getByRole('button', { name: 'Register device' }).click();
    // An id is one path segment: no space. The API says so, at the field.
    await waitFor(() => descriptionOf(page.getByLabel('Device id (serial, UDID)')), { message: 'the API’s problem beside the id' });
    await checkAccessibility('devices-form');
    await page.getByLabel('Device id (serial, UDID)').fill('pixel-8-a1');
    await page.getByRole('button', { name: 'Register device' }).click();
    const table = page.getByRole('table', { name: 'Devices' });
    await table.getByText('pixel-8-a1').waitFor();
    const registered = await server.admin.client.call(v1.devices.getDevice, { params: { deviceId: 'pixel-8-a1' } });
    assert.deepEqual([registered.name, registered.platform, registered.labels], ['Pixel 8', 'android', ['android', 'phone']]);

    await page.getByRole('button', { name: 'Edit Pixel 8' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Pixel 8 (lab 2)');
    await page.getByRole('form', { name: 'Edit Pixel 8' }).getByLabel('Status').selectOption('maintenance');
    await page.getByRole('button', { name: 'Save device' }).click();
    await table.getByText('Pixel 8 (lab 2)').waitFor();
    const edited = await server.admin.client.call(v1.devices.getDevice, { params: { deviceId: 'pixel-8-a1' } });
    assert.deepEqual([edited.name, edited.status], ['Pixel 8 (lab 2)', 'maintenance']);

    await page.getByRole('button', { name: 'Retire Pixel 8 (lab 2)' }).click();
    await page.getByRole('button', { name: 'Retire Pixel 8 (lab 2)' }).click();
    await waitFor(async () => (await table.getByText('pixel-8-a1').count()) === 0, { message: 'the device gone from the list' });
    await assert.rejects(server.admin.client.call(v1.devices.getDevice, { params: { deviceId: 'pixel-8-a1' } }), /404/);
  });

  test('your own password: too short is refused at its field; a good one works for the next login', async () => {
    await page.goto(`${server.url}/account`);
    await page.getByRole('heading', { name: 'Change your password' }).waitFor();
    await checkAccessibility('account');
    await page.getByLabel('New password', { exact: true }).fill('short');
    await page.getByLabel('Repeat the new password').fill('short');
    await page.getByRole('button', { name: 'Change password' }).click();
    assert.match(
      await waitFor(() => descriptionOf(page.getByLabel('New password', { exact: true })), { message: 'the problem beside the password' }),
      /at least 12 characters/,
    );
    const fresh = 'a much longer passphrase 2026';
    await page.getByLabel('New password', { exact: true }).fill(fresh);
    await page.getByLabel('Repeat the new password').fill(fresh);
    // A session changes its password only with the current one (SEC-2g; its refusals are in test/api/users.test.ts).
    await page.getByLabel('Current password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText(/Password changed/).waitFor();
    const login = await fetch(`${server.url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: server.admin.email, password: fresh }),
    });
    assert.equal(login.status, 200);
  });

  test('no serious or critical accessibility violation on any of these pages, and no console error', () => {
    assert.deepEqual([...axe.checked].sort(), [
      'account',
      'audit',
      'devices-form',
      'execute',
      'execute-failed-step',
      'import',
      'import-done',
      'run-delete-confirm',
    ]);
    assert.deepEqual(Object.fromEntries(axe.found), {});
    // The refused import and device answer 400 on purpose; Chromium logs them.
    assert.deepEqual(
      consoleErrors.filter((e) => !e.includes('status of 400')),
      [],
    );
  });
});
