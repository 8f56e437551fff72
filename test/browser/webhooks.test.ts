import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { v1 } from '../../src/client/index.ts';
import { axeRecord, browserAvailable, openWatchedPage } from '../helpers/browser.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

// HOOK-9 in Debian's Chromium against a real server: a manager adds a webhook from the project's
// settings (its secret shown once), sends a test event, sees the delivery in the log, redelivers
// it, and switches the webhook off. axe-core checks each view; no console error on the way.

const PASSWORD = 'correct horse battery staple';

describe('webhooks in the web interface, in Chromium (HOOK-9)', { skip: !browserAvailable() }, () => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  let browser: Browser;
  let page: Page;
  let projectId: string;
  const consoleErrors: string[] = [];
  const axe = axeRecord();
  const check = (view: string) => axe.check(page, view);

  before(async () => {
    server = await startTestServer('sqlite', { ATTEST_WEBHOOK_ALLOW_PRIVATE: 'true' });
    receiver = await startWebhookReceiver();
    projectId = (await server.admin.client.call(v1.projects.createProject, { body: { key: 'HOOK', name: 'Hooks' } })).id;
    ({ browser, page } = await openWatchedPage({ consoleErrors }, { server, password: PASSWORD, signIn: true }));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await receiver?.close();
  });

  test('add a webhook from the settings: the secret is shown once, and the receiver verifies the test event with it', async () => {
    await page.goto(`${server.url}/projects/HOOK/settings`);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.waitForURL(`${server.url}/projects/HOOK/webhooks`);
    await page.getByText('No webhook yet.').waitFor();
    await check('webhooks-empty');
    await page.getByLabel('Name').fill('CI bot');
    await page.getByLabel('URL').fill(receiver.url);
    await page.getByRole('checkbox', { name: 'run.completed' }).check();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    const secret = (await page.getByTestId('new-webhook-secret').textContent()) ?? '';
    assert.match(secret, /^whsec_/);
    receiver.secret = secret;
    await check('webhooks-created');
    await page.getByRole('link', { name: 'CI bot' }).click();
    await page.getByRole('heading', { name: /Webhook CI bot/ }).waitFor();
    await page.getByRole('button', { name: 'Send test event' }).click();
    await waitFor(() => receiver.received.length === 1, { message: 'the test event at the receiver' });
    assert.equal(receiver.received[0]?.verifyError, undefined);
    await page.getByText('webhook.test').waitFor();
    await page.getByText(/204 in \d+ ms/).waitFor({ timeout: 10_000 });
    await check('webhook-log');
    const [hook] = (await server.admin.client.call(v1.webhooks.listWebhooks, { params: { projectId } })).items;
    const [delivery] = (
      await server.admin.client.call(v1.webhooks.listWebhookDeliveries, { params: { projectId, webhookId: String(hook?.id) } })
    ).items;
    await page.getByRole('button', { name: `Redeliver ${delivery?.messageId}` }).click();
    await waitFor(() => receiver.received.length === 2, { message: 'the redelivery at the receiver' });
    assert.equal(receiver.received[1]?.headers['webhook-id'], delivery?.messageId);
  });

  test('switch a webhook off from the list', async () => {
    await page.goto(`${server.url}/projects/HOOK/webhooks`);
    await page.getByRole('button', { name: 'Disable CI bot' }).click();
    await page.getByRole('button', { name: 'Enable CI bot' }).waitFor();
    const [hook] = (await server.admin.client.call(v1.webhooks.listWebhooks, { params: { projectId } })).items;
    assert.equal(hook?.enabled, false);
  });

  test('no serious or critical axe-core violation, and no console error', () => {
    assert.deepEqual(Object.fromEntries(axe.found), {});
    assert.deepEqual(consoleErrors, []);
  });
});
