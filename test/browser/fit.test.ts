import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { type AttestClient, v1 } from '../../src/client/index.ts';
import { endIdleManualRuns } from '../../src/server/services/tests/manual-runs.ts';
import { axeRecord, browserAvailable, openWatchedPage } from '../helpers/browser.ts';
import { createProject, unique } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

// UI-14 in Debian's Chromium at 1280 px: the dashboard of a project with 30 jobs (long names) and a
// webhook with 10 deliveries show every control inside the viewport, nothing wider than the page;
// the latest-jobs charts write as many job names as fit, none running into the next; a delivery
// opens to what each attempt sent and got back. A run's page shows a step's error once, and a
// manual run left idle says it was ended (TCM-9). axe-core on each view, no console error.
// ATTEST_UPDATE_SCREENSHOTS=1 writes the pictures to docs/screenshots/ (dashboard.png, webhook.png).

const PASSWORD = 'correct horse battery staple';
const WIDTH = 1280;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SHOTS =
  process.env.ATTEST_UPDATE_SCREENSHOTS === '1' ? path.join(ROOT, 'docs/screenshots') : mkdtempSync(path.join(tmpdir(), 'attest-fit-'));

/** The controls of the page that a person can see, and whose box leaves the viewport's width. */
async function controlsOutside(page: Page): Promise<string[]> {
  return page.$$eval(
    'a[href], button, input, select, textarea, summary',
    (nodes, width) => {
      const outside: string[] = [];
      for (const node of nodes) {
        const box = node.getBoundingClientRect();
        if (box.width === 0 && box.height === 0) continue; // not drawn (folded, hidden)
        if (node.classList.contains('skip') && node !== node.ownerDocument.activeElement) continue; // "Skip to content" shows when focused
        if (box.left < 0 || box.right > width + 0.5) {
          outside.push(
            `${node.tagName.toLowerCase()} "${(node.textContent ?? '').trim().slice(0, 40)}" at ${Math.round(box.left)}–${Math.round(box.right)}`,
          );
        }
      }
      return outside;
    },
    WIDTH,
  );
}

/** The text an element prints: its text less the timeline's tooltips (SVG titles), which show only on hover. */
const shownText = (page: Page, selector: string) =>
  page.$eval(selector, (element) => {
    const copy = element.cloneNode(true) as typeof element;
    for (const tooltip of copy.querySelectorAll('title')) tooltip.remove();
    return copy.textContent ?? '';
  });

/** How much wider than the viewport the page is (0: nothing scrolls sideways). */
const overflow = (page: Page) => page.$eval('html', (html) => html.scrollWidth - html.clientWidth);

describe('pages that fit at 1280 px, in Chromium (UI-14)', { skip: !browserAvailable() }, () => {
  let server: TestServer;
  let client: AttestClient;
  let receiver: WebhookReceiver;
  let browser: Browser;
  let page: Page;
  let project: { id: string; key: string };
  const consoleErrors: string[] = [];
  const axe = axeRecord();
  const check = (view: string) => axe.check(page, view);

  before(async () => {
    server = await startTestServer('sqlite', { ATTEST_WEBHOOK_ALLOW_PRIVATE: 'true', ATTEST_LAUNCH_IDLE_MINUTES: '30' });
    client = server.admin.client;
    receiver = await startWebhookReceiver();
    project = await createProject(server, 'Fit shop');
    ({ browser, page } = await openWatchedPage({ consoleErrors }, { server, password: PASSWORD, signIn: true }));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await receiver?.close();
  });

  test('the dashboard of 30 jobs with long names: every control inside 1280 px, the job charts write only the names that fit', async () => {
    const start = server.clock().getTime() - 40 * 3_600_000;
    for (let n = 1; n <= 30; n++) {
      const job = await client.call(v1.jobs.createJob, {
        body: { projectId: project.id, testIds: [], branch: 'main', name: `Nightly build ${n} of the checkout suite on chromium` },
      });
      const startedAt = new Date(start + n * 3_600_000);
      for (const [index, name] of ['pays by card', 'adds two mugs', 'shows the cart'].entries()) {
        const failed = (n + index) % 4 === 0;
        await client.call(v1.runs.createRun, {
          body: {
            projectId: project.id,
            jobId: job.id,
            name,
            testName: `checkout.spec.ts › ${name}`,
            branch: 'main',
            verdict: failed ? 'failed' : 'passed',
            startedAt: startedAt.toISOString(),
            finishedAt: new Date(startedAt.getTime() + 20_000 + n * 1000 + index * 5000).toISOString(),
            ...(failed ? { results: { steps: [{ title: 'Pay', status: 'failed', error: `Card declined (${n % 3})` }] } } : {}),
          },
        });
      }
      await client.call(v1.jobs.completeJob, { params: { jobId: job.id } });
      server.clock.advance(1000);
    }
    await page.goto(`${server.url}/projects/${project.key}/dashboard`);
    await page.getByTestId('dashboard').waitFor();
    for (const chart of ['chart-job-pass-rate', 'chart-job-duration', 'chart-daily-pass-rate']) {
      await page.locator(`[data-testid="${chart}"] canvas`).waitFor();
    }
    assert.equal(await page.locator('.jobs-table tbody tr').count(), 20, 'the latest 20 jobs, each named in the table');
    for (const chart of ['chart-job-pass-rate', 'chart-job-duration']) {
      const plot = page.getByTestId(chart);
      await waitFor(async () => (await plot.getAttribute('data-x-labels')) !== null, { message: `${chart} drew its axis` });
      const labels = JSON.parse((await plot.getAttribute('data-x-labels')) ?? '[]') as string[];
      assert.ok(labels.length >= 2, `${chart}: ${labels.length} of 20 names written (${labels.join(' | ')})`);
      // What tells the jobs apart ("27"), not the words they share ("Nightly build … of the checkout suite on chromium").
      assert.equal(new Set(labels).size, labels.length, labels.join(' | '));
      for (const label of labels) assert.match(label, /^(1[1-9]|2\d|30)$/);
      // Side by side, the names written take less room than the chart has: none runs into the next.
      const fits = await plot.evaluate((element, written) => {
        type Canvas = { getContext(kind: '2d'): { font: string; measureText(text: string): { width: number } } };
        const page = globalThis as unknown as { document: { createElement(tag: 'canvas'): Canvas } };
        const context = page.document.createElement('canvas').getContext('2d');
        // The charts' axis font (web/src/triage/charts.tsx); the page function cannot see this file's constants.
        context.font = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", sans-serif';
        const needed = written.reduce((sum, text) => sum + context.measureText(text).width + 8, 0);
        return { needed, width: element.getBoundingClientRect().width };
      }, labels);
      assert.ok(fits.needed <= fits.width, `${chart}: ${Math.round(fits.needed)} px of names in ${Math.round(fits.width)} px`);
    }
    assert.equal(await overflow(page), 0, 'nothing scrolls sideways');
    assert.deepEqual(await controlsOutside(page), []);
    await page.screenshot({ path: path.join(SHOTS, 'dashboard.png'), fullPage: true });
    await check('dashboard');
  });

  test('a webhook with 10 deliveries: a full-width row each, Redeliver inside 1280 px; a row opens to each attempt’s request and response', async () => {
    const hook = await client.call(v1.webhooks.createWebhook, {
      params: { projectId: project.id },
      body: { name: 'CI bot', url: receiver.url, events: ['run.completed', 'job.completed'] },
    });
    receiver.secret = hook.secret;
    // The first three fail once (500), then go through on their retry.
    const refusal = { status: 500, headers: { 'x-receiver-trace': 'trace-1' } };
    receiver.answers.push(refusal, refusal, refusal);
    const params = { projectId: project.id, webhookId: hook.id };
    const log = () => client.call(v1.webhooks.listWebhookDeliveries, { params });
    for (let n = 1; n <= 10; n++) {
      await client.call(v1.webhooks.testWebhook, { params });
      await waitFor(async () => (await log()).items.filter((d) => d.attempts.length > 0).length === n, { message: `delivery ${n} tried` });
    }
    server.clock.advance(6000);
    await server.app.attest.background.enqueue({ kind: 'webhook-dispatch', key: unique('fit-dispatch:') });
    await server.app.attest.background.idle();
    const deliveries = await waitFor(
      async () => {
        const items = (await log()).items;
        return items.every((d) => d.status === 'delivered') ? items : undefined;
      },
      { message: 'all ten delivered' },
    );
    const retried = deliveries.find((d) => d.attempts.length === 2 && d.attempts[0]?.status === 500 && d.attempts[0]?.attempt === 1);
    assert.ok(retried);

    await page.goto(`${server.url}/projects/${project.key}/webhooks/${hook.id}`);
    await page.getByRole('heading', { name: /Webhook CI bot/ }).waitFor();
    await page.getByTestId('delivery-row').nth(9).waitFor();
    assert.equal(await page.getByTestId('delivery-row').count(), 10);
    const table = await page.locator('table.deliveries-table').boundingBox();
    const main = await page.locator('main').boundingBox();
    assert.ok(table && main && table.width >= main.width * 0.9, `the log takes the page's width (${table?.width} of ${main?.width} px)`);
    // One line a delivery: no attempt list wrapping inside a cell.
    const heights = await page.getByTestId('delivery-row').evaluateAll((rows) => rows.map((row) => row.getBoundingClientRect().height));
    assert.ok(Math.max(...heights) < 60, `rows of ${Math.max(...heights)} px`);
    for (const delivery of deliveries) {
      const button = page.getByRole('button', { name: `Redeliver ${delivery.messageId}` });
      const box = await button.boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= WIDTH, `Redeliver ${delivery.messageId} at ${box?.x}`);
    }
    assert.equal(await overflow(page), 0);
    assert.deepEqual(await controlsOutside(page), []);
    await check('webhook-log');

    // Opened: the delivery's two attempts, the latest open, the first opened by hand.
    await page.getByRole('button', { name: `Show the attempts of webhook.test ${retried.messageId}` }).click();
    const attempts = page.getByTestId('webhook-attempt');
    await attempts.nth(1).waitFor();
    assert.equal(await attempts.count(), 2);
    await attempts.nth(0).locator('summary').click();
    const first = attempts.nth(0);
    await first.getByRole('group', { name: 'Body sent, attempt 1' }).waitFor();
    const sent = (await first.getByRole('group', { name: 'Body sent, attempt 1' }).textContent()) ?? '';
    assert.equal(JSON.parse(sent).type, 'webhook.test');
    const requestHeaders = (await first.getByLabel('Headers sent, attempt 1').textContent()) ?? '';
    assert.match(requestHeaders, /webhook-signature\s*v1,<masked>/);
    assert.ok(requestHeaders.includes(retried.messageId));
    assert.match((await first.getByLabel('Headers received, attempt 1').textContent()) ?? '', /x-receiver-trace\s*trace-1/);
    assert.equal(await first.getByRole('group', { name: 'Body received, attempt 1' }).textContent(), 'receiver says no');
    assert.match((await attempts.nth(1).locator('summary').textContent()) ?? '', /Attempt 2 · 204 in \d+ ms/);
    assert.equal(await overflow(page), 0);
    assert.deepEqual(await controlsOutside(page), []);
    await page.screenshot({ path: path.join(SHOTS, 'webhook.png'), fullPage: true });
    await check('webhook-delivery-open');
  });

  test("a run's page shows a step's error once: not on the steps around it, not again in the run's notes, not as a manual step's actual result", async () => {
    const error = 'Error: expect(locator).toHaveText(expected) failed\n\nExpected: "Thank you"\nReceived: "Card declined"';
    const automated = await client.call(v1.runs.createRun, {
      body: {
        projectId: project.id,
        name: 'pays by card',
        verdict: 'failed',
        results: {
          cells: [
            {
              name: 'error',
              text: `${error}\n\n  34 |   await expect(page.locator('#receipt')).toHaveText('Thank you');\n    at checkout.spec.ts:36:48`,
            },
          ],
          steps: [
            { key: 'pay', title: 'Pay', status: 'failed', error },
            { key: 'press', parentKey: 'pay', title: 'Press pay', status: 'passed' },
            { key: 'receipt', parentKey: 'pay', title: 'See the receipt', status: 'failed', error },
          ],
        },
      },
    });
    await page.goto(`${server.url}/runs/${automated.id}`);
    await page.getByRole('group', { name: 'Error of See the receipt' }).waitFor();
    const text = await shownText(page, 'main');
    assert.equal(text.split('Received: "Card declined"').length - 1, 1, `the error once: ${text}`);
    assert.match((await page.getByRole('group', { name: 'Error of See the receipt' }).textContent()) ?? '', /at checkout\.spec\.ts:36:48/);
    await page.getByText('Its error is shown under “See the receipt”.').waitFor();
    await check('run-error-once');

    const manual = await client.call(v1.tests.createTest, {
      body: { projectId: project.id, name: 'Pay by hand', steps: [{ action: 'Pay with the test card', expected: 'A receipt' }] },
    });
    const byHand = await client.call(v1.runs.createRun, {
      body: {
        projectId: project.id,
        testId: manual.id,
        name: 'Pay by hand',
        verdict: 'failed',
        results: {
          steps: [
            {
              key: 'step-1',
              title: 'Pay with the test card',
              status: 'failed',
              error: 'The shop said the card was declined',
              cells: [{ key: 'step-1-actual', name: 'actual', text: 'The shop said the card was declined' }],
            },
          ],
        },
      },
    });
    await page.goto(`${server.url}/runs/${byHand.id}`);
    await page.getByRole('group', { name: 'Error of Pay with the test card' }).waitFor();
    // Once among the steps; the error group above names its group by it (a title linking to the group, not the error again).
    const said = async (selector: string) => (await shownText(page, selector)).split('The shop said the card was declined').length - 1;
    assert.equal((await said('main')) - (await said('.failure-panel')), 1);
  });

  test('a manual run left open past the idle time: its execution page and its run page say it was ended, and why', async () => {
    const definition = await client.call(v1.tests.createTest, {
      body: { projectId: project.id, name: 'Refund by hand', steps: [{ action: 'Refund the order', expected: 'Refunded' }] },
    });
    const run = await client.call(v1.runs.createRun, { body: { projectId: project.id, testId: definition.id, name: definition.name } });
    await page.goto(`${server.url}/runs/${run.id}/execute`);
    await page.getByRole('button', { name: 'Pass' }).waitFor();
    server.clock.advance(31 * 60_000);
    await endIdleManualRuns(server.app.attest);
    await page.reload();
    const note = page.getByTestId('idle-note');
    await note.waitFor();
    assert.match((await note.textContent()) ?? '', /nothing was recorded on this run for 30 minutes \(ATTEST_LAUNCH_IDLE_MINUTES\)/);
    assert.equal(await page.getByRole('button', { name: 'Pass' }).count(), 0, 'no mark is offered on an ended run');
    await check('execute-ended-idle');
    await page.getByRole('link', { name: 'Open the run' }).click();
    await page.waitForURL(`${server.url}/runs/${run.id}`);
    await page.getByTestId('idle-note').waitFor();
    assert.equal((await page.getByText('aborted', { exact: true }).count()) >= 1, true);
    await check('run-ended-idle');
  });

  test('no serious or critical axe-core violation, and no console error', () => {
    assert.deepEqual(Object.fromEntries(axe.found), {});
    assert.deepEqual(consoleErrors, []);
  });
});
