import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { v1 } from '../../src/client/index.ts';
import { browserAvailable, launchChromium, signIn } from '../helpers/browser.ts';
import { createProject } from '../helpers/factories.ts';
import { FLAKY, importFlakyJobs } from '../helpers/flaky-fixture.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// TRIAGE-14 in Chromium: the test that ended flaky in each of six jobs of 10 tests, imported through
// the real import path, reads the same on its page, in the tests list, on the dashboard and in the
// project's Jobs tab; no page names it by its last attempt.

const PASSWORD = 'correct horse battery staple';
const RETRY = /\(retry \d+\)/;

describe('one set of numbers in the web interface, in Chromium (TRIAGE-14)', { skip: !browserAvailable() }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let project: { id: string; key: string };
  let testId = '';
  let score = '';

  before(async () => {
    server = await startTestServer('sqlite');
    const client = server.admin.client;
    await client.call(v1.users.setUserPassword, { params: { email: server.admin.email }, body: { password: PASSWORD } });
    project = await createProject(server, 'Numbers shop');
    await importFlakyJobs({
      url: server.url,
      key: server.admin.key,
      client,
      projectId: project.id,
      file: 'badge.spec.ts',
      start: server.clock().getTime() - 6 * 3_600_000,
      advance: (ms) => server.clock.advance(ms),
    });
    const tests = (await client.call(v1.tests.listTests, { query: { projectId: project.id, limit: 200 } })).items;
    const flaky = tests.find((t) => t.name.endsWith(FLAKY));
    assert.ok(flaky);
    testId = flaky.id;
    score = flaky.health.flakyScore.toFixed(2);
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
    await signIn(page, server.url, server.admin.email, PASSWORD);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('the flaky test reads the same on its page, in the tests list, on the dashboard and in the Jobs tab', async () => {
    // Its page: one outcome per job, each flaky, its attempts inside.
    await page.goto(`${server.url}/tests/${testId}`);
    const summary = page.getByTestId('history-summary');
    await summary.waitFor();
    const pairs = await summary
      .locator('div')
      .evaluateAll((divs) => divs.map((div) => (div as unknown as { innerText: string }).innerText.replace(/\s*\n\s*/g, ' ')));
    assert.deepEqual(pairs, ['Jobs 6', 'Passed 6 (flaky 6)', 'Failed 0', 'Pass rate 100 %']);
    const outcomes = await page.getByTestId('outcomes').locator('li').allInnerTexts();
    assert.equal(outcomes.length, 6);
    assert.ok(
      outcomes.every((text) => /^flaky\b.*2 attempts: attempt 1 failed, attempt 2 passed$/.test(text.trim())),
      outcomes.join('\n'),
    );
    assert.doesNotMatch(await page.locator('main').innerText(), RETRY);

    // The tests list: its health, score and jobs.
    await page.goto(`${server.url}/projects/${project.key}/tests`);
    const row = page.locator('.test-row', { hasText: FLAKY });
    await row.waitFor();
    assert.equal((await row.getByTestId('test-health').innerText()).replace(/\s+/g, ' ').trim(), `flaky score ${score} over 6 jobs`);

    // The dashboard: the same score over the same jobs.
    await page.goto(`${server.url}/projects/${project.key}/dashboard`);
    const flakyRow = page.locator('tr', { has: page.getByRole('link', { name: new RegExp(FLAKY) }) }).first();
    await flakyRow.waitFor();
    const cells = await flakyRow.locator('td').allInnerTexts();
    assert.deepEqual(cells.slice(1), [score, '6']);
    // And what flakiness cost (TRIAGE-15): 7 attempts of 8.5 s; 5 jobs of 2.6 s each.
    assert.equal(
      (await page.getByTestId('flaky-cost').locator('p').innerText()).replace(/\s+/g, ' ').trim(),
      '7 failed attempts retried to a pass: 8.50 s of CI time. 5 jobs failed only on flaky tests: 13.0 s.',
    );
    // The rows behind those figures, on request: the two tests retried to a pass and the five jobs.
    await page.getByText('The tests and jobs behind it').click();
    const costTable = page.getByRole('table', { name: 'Tests by the CI time their retries cost' });
    await costTable.waitFor();
    const costRows = await costTable
      .locator('tbody tr')
      .evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim())));
    assert.equal(costRows.length, 2);
    assert.deepEqual(costRows[0]?.slice(0, 2), [costRows[0]?.[0], '6']);
    assert.ok(costRows[0]?.[0]?.endsWith(FLAKY), JSON.stringify(costRows));
    assert.equal(costRows[1]?.[1], '1');
    const jobRows = page.getByRole('table', { name: 'Jobs that failed only on flaky tests' }).locator('tbody tr');
    assert.equal(await jobRows.count(), 5);

    // The Jobs tab: the last job's tests, the flaky ones among the passed.
    await page.goto(`${server.url}/projects/${project.key}?tab=jobs`);
    await page.getByText('of 10 tests').first().waitFor();
    const jobs = await page.locator('tbody tr').allInnerTexts();
    assert.equal(jobs.length, 6);
    assert.match(jobs[0] as string, /9 passed \(2 flaky\), 1 failed of 10 tests/);
    assert.ok(
      jobs.slice(1).every((text) => text.includes('10 passed (1 flaky), 0 failed of 10 tests')),
      jobs.join('\n'),
    );

    // The runs tab names each attempt by its test, the attempt in a column of its own.
    await page.goto(`${server.url}/projects/${project.key}`);
    await page.locator('tbody tr').first().waitFor();
    assert.doesNotMatch(await page.locator('main').innerText(), RETRY);
  });

  test('the quarantine lifecycle is driven from the test page: quarantine, claim a fix, disable, enable (TRIAGE-13)', async () => {
    await page.goto(`${server.url}/tests/${testId}`);
    const state = page.getByTestId('lifecycle-state');
    await state.waitFor();
    assert.equal((await state.innerText()).trim(), 'Active.');
    const quarantine = page.getByRole('form', { name: 'Quarantine this test' });
    await quarantine.getByLabel('Owner').fill('qa@example.com');
    await quarantine.getByLabel('Reason').fill('fails on retry in CI');
    await quarantine.getByRole('button', { name: 'Quarantine' }).click();
    await page.getByText('Quarantined by qa@example.com').waitFor();
    assert.equal((await state.innerText()).trim(), 'Quarantined.');

    await page.getByRole('button', { name: 'Claim a fix' }).click();
    await page.getByText(/^Fix pending: 0 of 20 runs/).waitFor();

    const disable = page.getByRole('form', { name: 'Disable this test' });
    await disable.getByRole('button', { name: 'Disable' }).click();
    // An empty reason is refused by the form before the API is asked.
    assert.match((await state.innerText()).trim(), /^Fix pending/);
    await disable.getByLabel('Why disable it').fill('the badge is being redesigned');
    await disable.getByRole('button', { name: 'Disable' }).click();
    await page.getByText('Disabled: the badge is being redesigned').waitFor();

    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByText(/^Quarantined\./).waitFor();

    // What the page shows is what the API holds.
    const held = await server.admin.client.call(v1.tests.getTest, { params: { testId } });
    assert.equal(held.health.lifecycle.state, 'quarantined');
    assert.equal(held.health.lifecycle.fixAttempt?.outcome, 'cancelled');
    await page.reload();
    await state.waitFor();
    assert.equal((await state.innerText()).trim(), 'Quarantined.');
  });
});
