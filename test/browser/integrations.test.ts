import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { v1 } from '../../src/client/index.ts';
import { axeRecord, browserAvailable, openWatchedPage } from '../helpers/browser.ts';
import { createProject, unique } from '../helpers/factories.ts';
import { type StandIn, startStandIn } from '../helpers/forge-stand-in.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// FORGE-1, FORGE-5 and FORGE-6 in Chromium: a manager sets the code host and the issue tracker on
// the project's settings (the token typed once, never shown again), and "Create issue" on an error
// group files it on the tracker (a local stand-in for GitHub's API) and shows the link.

const PASSWORD = 'correct horse battery staple';
const TOKEN = 'ghp_browser_secret_token_4321';

describe('integrations in Chromium (FORGE-1, FORGE-5, FORGE-6)', { skip: !browserAvailable() }, () => {
  let server: TestServer;
  let standIn: StandIn;
  let browser: Browser;
  let page: Page;
  let project: { id: string; key: string };
  const consoleErrors: string[] = [];
  const scripts = new Map<string, number>();
  const axe = axeRecord();

  before(async () => {
    standIn = await startStandIn();
    server = await startTestServer('sqlite', { ATTEST_INTEGRATIONS_ALLOW_PRIVATE: 'true' });
    project = await createProject(server, 'Integrated shop');
    ({ browser, page } = await openWatchedPage({ consoleErrors, scripts }, { server, password: PASSWORD, signIn: true }));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await standIn?.close();
  });

  const checkAccessibility = (view: string) => axe.check(page, view);

  test('the settings save a GitHub code host and a GitHub Issues tracker; the token is stored, never shown again', async () => {
    await page.goto(`${server.url}/projects/${project.key}/settings`);
    const host = page.getByRole('form', { name: 'Code host' });
    await host.getByLabel('API URL').fill(standIn.url);
    await host.getByLabel('Access token').fill(TOKEN);
    await host.getByLabel('Keep one comment on the pull (merge) request up to date').check();
    await host.getByRole('button', { name: 'Save code host' }).click();
    await host.getByText('Saved the code host.').waitFor();
    assert.equal(await host.getByLabel('Access token').inputValue(), '', 'the field is emptied');
    await host.getByText('One is stored; leave empty to keep it.').waitFor();

    const tracker = page.getByRole('form', { name: 'Issue tracker' });
    await tracker.getByLabel('Tracker').selectOption('github');
    await tracker.getByLabel('API URL').fill(standIn.url);
    await tracker.getByLabel('Repository (owner/name)').fill('acme/shop');
    await tracker.getByLabel('Token').fill(TOKEN);
    await tracker.getByRole('button', { name: 'Save issue tracker' }).click();
    await tracker.getByText('Saved the issue tracker.').waitFor();
    await checkAccessibility('settings');

    const forge = await server.admin.client.call(v1.integrations.getForgeSettings, { params: { projectId: project.id } });
    assert.equal(forge.forge?.tokenSet, true);
    assert.equal(forge.forge?.pullRequestComment, true);
    const saved = await server.admin.client.call(v1.integrations.getIssueTracker, { params: { projectId: project.id } });
    assert.equal(saved.tracker?.repository, 'acme/shop');
    await page.reload();
    await page.getByRole('form', { name: 'Issue tracker' }).getByText('One is stored; leave empty to keep it.').waitFor();
    assert.ok(!(await page.content()).includes(TOKEN), 'the page never holds the token');
  });

  test('"Create issue" on an error group files it on the tracker and shows its link and status', async () => {
    const run = await server.admin.client.call(v1.runs.createRun, {
      body: {
        projectId: project.id,
        name: 'checkout',
        verdict: 'failed',
        results: { steps: [{ title: 'pay', status: 'failed', error: `card declined ${unique()}` }] },
      },
    });
    const groupId = (await server.admin.client.call(v1.runs.getRun, { params: { testRunId: run.id } })).failureGroupId as string;
    await page.goto(`${server.url}/projects/${project.key}/failures/${groupId}`);
    await page.getByText('No issue filed from Attest.').waitFor();
    await page.getByRole('button', { name: 'Create issue' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Filed #\d+\./ })
      .waitFor();
    const list = page.getByTestId('issue-links');
    await list.getByText('open', { exact: false }).waitFor();
    const filed = await waitFor(() => standIn.requests.find((r) => r.method === 'POST' && r.path === '/repos/acme/shop/issues'));
    assert.equal(filed.headers.authorization, `token ${TOKEN}`);
    const group = await server.admin.client.call(v1.failures.getFailureGroup, { params: { projectId: project.id, groupId } });
    assert.match(group.issueUrl ?? '', /^https:\/\/github\.example\.test\/acme\/shop\/issues\/\d+$/);
    assert.equal(await list.getByRole('link').getAttribute('href'), group.issueUrl);
    await checkAccessibility('failure group');
  });

  test('no page had a serious accessibility problem or a console error', () => {
    assert.deepEqual(Object.fromEntries(axe.found), {});
    assert.deepEqual(consoleErrors, []);
  });
});
