import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { unzipSync } from 'fflate';
import { parse as parseJunit, type TestSuites } from 'junit2json';
import { XrayExecution } from '../../src/api/v1/results.ts';
import { v1 } from '../../src/client/index.ts';
import { FILTER_SCRIPT } from '../../src/export/formats/html.ts';
import { createAjv } from '../../src/server/validation.ts';
import { sha256 } from '../helpers/blob-files.ts';
import { browserAvailable, openReport } from '../helpers/browser.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type EvidenceRun, runWithEvidence } from '../helpers/export-fixture.ts';
import { createUser, type TestUser } from '../helpers/factories.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// SPEC-2.4, EXP-1, EXP-3: `GET /testmgmt/testruns/{id}/export?format=…` and the writers it shares with
// `attest export`, each checked by a consumer that is not ours: junit2json for JUnit XML, Allure's
// own command line for the Allure folder, Debian's Chromium for the HTML report.

const execFileAsync = promisify(execFile);
const ALLURE = path.resolve('node_modules/allure-commandline/dist/bin/allure');

async function javaAvailable(): Promise<boolean> {
  const found = await execFileAsync('java', ['-version']).then(
    () => true,
    () => false,
  );
  if (found) return true;
  if (process.env.CI === 'true')
    throw new Error("CI=true but there is no java for Allure's command line (apt-get install -y default-jre-headless)");
  process.stdout.write('\n# SKIPPED: Allure rendering check (no java; apt-get install -y default-jre-headless)\n');
  return false;
}

interface Manifest {
  images: { path: string; imageId: string; sha256: string; size: number; step: { title: string } | null }[];
}

for (const dialect of DIALECTS) {
  describe(`run export over the API (${dialect})`, () => {
    let server: TestServer;
    let evidence: EvidenceRun;
    let viewer: TestUser;
    let outsider: TestUser;
    const exportOf = async (format: string, key = server.admin.key, runId = evidence.runId) =>
      fetch(`${server.url}/api/v1/testmgmt/testruns/${runId}/export?format=${format}`, { headers: { 'service.api-token': key } });
    const bytesOf = async (response: Response) => new Uint8Array(await response.arrayBuffer());

    before(async () => {
      server = await startTestServer(dialect);
      evidence = await runWithEvidence(server, 12);
      viewer = await createUser(server, ['viewer'], { projects: [evidence.projectId] });
      outsider = await createUser(server, ['manager']);
    });
    after(() => server.close());

    test('zip is the bundle: the documented answers byte for byte, the manifest and every image', async () => {
      const response = await exportOf('zip', viewer.key);
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), 'application/zip');
      assert.match(response.headers.get('content-disposition') ?? '', /^attachment; filename="attest-run-[0-9a-f]{8}-zip\.zip"$/);
      const files = unzipSync(await bytesOf(response));
      const get = async (route: string) =>
        bytesOf(await fetch(`${server.url}/api/v1${route}`, { headers: { 'service.api-token': viewer.key } }));
      assert.deepEqual(files['results.json'], await get(`/testmgmt/testruns/${evidence.runId}/results`));
      const listing = await get(`/projects/${evidence.projectId}/artifact?testRunId=${evidence.runId}`);
      assert.deepEqual(files['artifacts.json'], listing);
      const ids = (JSON.parse(Buffer.from(listing).toString()) as { items: { id: string }[] }).items.map((item) => item.id).join(',');
      assert.deepEqual(files['artifact-details.json'], await get(`/artifact/artifacts?ids=${ids}`));
      const manifest = JSON.parse(Buffer.from(files['manifest.json']!).toString()) as Manifest;
      assert.equal(manifest.images.length, 12 + 3);
      for (const image of manifest.images) {
        const bytes = files[image.path];
        assert.ok(bytes, image.path);
        assert.equal(sha256(bytes), image.sha256);
        assert.ok(evidence.uploaded.has(image.sha256));
      }
    });

    test('junit: an independent parser reads one testcase with the failure, the steps and attachment lines that resolve', async () => {
      const response = await exportOf('junit');
      assert.equal(response.status, 200);
      const files = unzipSync(await bytesOf(response));
      const xml = Buffer.from(files['junit.xml']!).toString();
      const parsed = (await parseJunit(xml)) as TestSuites;
      const suite = parsed.testsuite?.[0];
      assert.equal(parsed.tests, 1);
      assert.equal(parsed.failures, 1);
      assert.equal(suite?.testcase?.length, 1);
      const testcase = suite?.testcase?.[0];
      assert.equal(testcase?.name, 'Checkout: pay by card');
      assert.equal(testcase?.failure?.[0]?.message, 'Expected "Thank you" but saw "Card declined"');
      assert.match(testcase?.failure?.[0]?.inner ?? '', /Step 5: Pay by card & confirm <order>/);
      const out = testcase?.['system-out']?.[0] ?? '';
      assert.match(out, /\[failed\] 5\. Pay by card & confirm <order> \(3100 ms\)/);
      assert.match(out, /^ {2}\[passed\] 3\. Add the blue mug/m, 'nested steps are indented');
      assert.match(out, /expected:\n\s+The home page shows/);
      const attachments = [...out.matchAll(/^\[\[ATTACHMENT\|(.+)\]\]$/gm)].map((match) => match[1]!);
      assert.equal(attachments.length, 16, '12 screenshots, the three images of the visual diff, and the log');
      for (const file of attachments) assert.ok(files[file], `${file} is in the archive`);
      assert.ok(suite?.properties?.some((p) => p.name === 'branch' && p.value === 'main'));
    });

    test('xray: Xray JSON with every step, its status and its screenshots as base64 evidence', async () => {
      const response = await exportOf('xray');
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      const body = await response.json();
      const validate = createAjv(false).compile(XrayExecution);
      assert.ok(validate(body), JSON.stringify(validate.errors));
      const xray = body as {
        info: { summary: string; testEnvironments: string[] };
        tests: {
          status: string;
          testInfo: { steps: { action: string }[] };
          evidence: { data: string; filename: string }[];
          steps: { status: string; evidence: { data: string; filename: string; contentType: string }[] }[];
        }[];
      };
      const [only] = xray.tests;
      assert.equal(xray.tests.length, 1);
      assert.equal(only?.status, 'FAILED');
      assert.deepEqual(xray.info.testEnvironments, ['staging']);
      assert.equal(only?.testInfo.steps.length, 5);
      assert.equal(only?.steps.length, 5);
      assert.equal(only?.steps[4]?.status, 'FAILED');
      const items = [...(only?.evidence ?? []), ...(only?.steps.flatMap((step) => step.evidence) ?? [])];
      assert.equal(items.length, 15);
      for (const item of items) assert.ok(evidence.uploaded.has(sha256(Buffer.from(item.data, 'base64'))), item.filename);
    });

    test("allure: Allure's own command line renders the folder with the steps, statuses and attachments", async (t) => {
      if (!(await javaAvailable())) return t.skip('no java');
      const response = await exportOf('allure');
      const files = unzipSync(await bytesOf(response));
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-allure-'));
      for (const [name, bytes] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
        fs.writeFileSync(path.join(dir, name), bytes);
      }
      const report = path.join(dir, 'report');
      await execFileAsync(ALLURE, ['generate', path.join(dir, 'allure-results'), '-o', report, '--clean'], { timeout: 120_000 });
      const cases = fs.readdirSync(path.join(report, 'data', 'test-cases'));
      assert.equal(cases.length, 1);
      const testCase = JSON.parse(fs.readFileSync(path.join(report, 'data', 'test-cases', cases[0]!), 'utf8')) as {
        name: string;
        status: string;
        statusMessage: string;
        testStage: {
          steps: { name: string; status: string; steps: unknown[]; attachments: { type: string; source: string }[] }[];
          attachments: unknown[];
        };
      };
      assert.equal(testCase.name, 'Checkout: pay by card');
      assert.equal(testCase.status, 'failed');
      assert.equal(testCase.statusMessage, 'Expected "Thank you" but saw "Card declined"');
      const steps = testCase.testStage.steps;
      assert.deepEqual(
        steps.map((step) => [step.name, step.status]),
        [
          ['Open the shop', 'passed'],
          ['Add two items to the cart', 'passed'],
          ['Pay by card & confirm <order>', 'failed'],
        ],
      );
      assert.equal(steps[1]?.steps.length, 2);
      const images = (node: {
        steps?: unknown[];
        attachments?: { type: string; source: string }[];
      }): { type: string; source: string }[] => [
        ...(node.attachments ?? []).filter((a) => a.type.startsWith('image/')),
        ...((node.steps ?? []) as never[]).flatMap(images),
      ];
      const all = [...images(testCase.testStage as never)];
      assert.equal(all.length, 15);
      for (const attachment of all)
        assert.ok(fs.existsSync(path.join(report, 'data', 'attachments', attachment.source)), attachment.source);
    });

    test('html: one offline file Chromium renders with every image loaded, no console error and no script but its own filter', async (t) => {
      if (!browserAvailable()) return t.skip('no Chromium');
      const response = await exportOf('html');
      assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(response.headers.get('content-security-policy') ?? '', /sandbox/);
      await openReport(
        await bytesOf(response),
        'attest-html-',
        async (page, problems) => {
          const images = await page.$$eval('img', (nodes) =>
            nodes.map((img) => ({ width: (img as unknown as { naturalWidth: number }).naturalWidth, alt: img.getAttribute('alt') })),
          );
          assert.equal(images.length, 15);
          for (const image of images) assert.ok(image.width > 0, `${image.alt} did not load`);
          assert.deepEqual(problems, []);
          // One script, the report's filter, allowed by its hash alone: Markdown cannot smuggle one in.
          const scripts = await page.$$eval('script', (nodes) => nodes.map((node) => node.textContent ?? ''));
          assert.deepEqual(scripts, [FILTER_SCRIPT]);
          const policy = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
          const hash = createHash('sha256').update(FILTER_SCRIPT).digest('base64');
          assert.ok(policy?.includes(`script-src 'sha256-${hash}'`), policy ?? '');
          assert.doesNotMatch(policy ?? '', /script-src[^;]*'unsafe|default-src (?!'none')/);
          assert.equal(await page.$$eval('a[href^="javascript:"]', (nodes) => nodes.length), 0);
          assert.match((await page.textContent('body')) ?? '', /<script>alert\(1\)<\/script>/, 'raw HTML in Markdown is shown as text');
          assert.equal(await page.$$eval('.diff figure', (nodes) => nodes.length), 3, 'the visual diff is side by side');
          assert.equal(await page.$$eval('svg.timeline rect', (nodes) => nodes.length), 3, 'one bar per top-level step');
          assert.equal(await page.$$eval('li.step.failed pre.error', (nodes) => nodes.length), 1);
          // The error once, and the text file folded until asked for.
          const body = (await page.textContent('body')) ?? '';
          assert.equal(body.split('but saw "Card declined"').length - 1, 1, 'the error is printed once');
          assert.equal(await page.isVisible('text=GET /pay 402'), false, 'the log is folded');
          await page.getByText('Show console.log (2 lines)').click();
          assert.equal(await page.isVisible('text=GET /pay 402'), true);
          // The filter: by status, then by name, over the top-level steps (a step holding a failure is failed).
          const shownSteps = () =>
            page.$$eval('ol.steps > li.step[data-status]', (nodes) =>
              nodes.filter((node) => !node.hasAttribute('hidden')).map((node) => node.querySelector('summary')?.textContent ?? ''),
            );
          assert.equal((await shownSteps()).length, 3);
          await page.getByLabel('Status').selectOption('failed');
          assert.deepEqual(
            (await shownSteps()).map((title) => title.replace(/\s+/g, ' ').trim()),
            ['✘ 5. Pay by card & confirm <order> 3.10 s'],
          );
          assert.equal(await page.textContent('#filter-count'), '1 of 3 steps shown');
          await page.getByLabel('Status').selectOption('');
          await page.getByLabel('Name').fill('RED MUG');
          assert.equal((await shownSteps()).length, 1, 'a step is found by a step inside it');
          assert.match((await shownSteps())[0] ?? '', /Add two items to the cart/);
        },
        { requests: 'local only' },
      );
    });

    test('junit: plain XML for a run without images or files, the ZIP when asked for (junit-zip or Accept)', async () => {
      const admin = server.admin.client;
      const bare = await admin.call(v1.runs.createRun, {
        body: {
          projectId: evidence.projectId,
          name: 'Checkout › cart › adds an item',
          verdict: 'failed',
          results: { cells: [{ name: 'error', text: 'Error: expected 2 items\n  at cart.spec.ts:9' }] },
        },
      });
      const response = await exportOf('junit', server.admin.key, bare.id);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^application\/xml/);
      assert.match(response.headers.get('content-disposition') ?? '', /-junit\.xml"$/);
      const parsed = (await parseJunit(await response.text())) as TestSuites;
      const testcase = parsed.testsuite?.[0]?.testcase?.[0];
      assert.equal(testcase?.classname, 'Checkout › cart', 'the suite path of its name');
      assert.ok(!testcase?.classname?.includes(evidence.projectId), 'never the project id');
      // A failure outside any step keeps its own message.
      assert.equal(testcase?.failure?.[0]?.message, 'Error: expected 2 items');
      const zipped = await exportOf('junit-zip', server.admin.key, bare.id);
      assert.equal(zipped.headers.get('content-type'), 'application/zip');
      assert.ok(unzipSync(await bytesOf(zipped))['junit.xml']);
      const asked = await fetch(`${server.url}/api/v1/testmgmt/testruns/${bare.id}/export?format=junit`, {
        headers: { 'service.api-token': server.admin.key, accept: 'application/zip' },
      });
      assert.equal(asked.headers.get('content-type'), 'application/zip');
    });

    test('refusals: a running run is 409 (unless partial=true), another project 404, an unknown format 400', async () => {
      const running = await server.admin.client.call(v1.runs.createRun, { body: { projectId: evidence.projectId, name: 'running' } });
      const notDone = await exportOf('zip', server.admin.key, running.id);
      assert.equal(notDone.status, 409);
      assert.equal(((await notDone.json()) as { code: string }).code, 'RUN_NOT_COMPLETED');
      const partial = await exportOf('zip&partial=true', server.admin.key, running.id);
      assert.equal(partial.status, 200);
      assert.ok(unzipSync(await bytesOf(partial))['manifest.json'], 'partial=true exports the run as far as it got');
      assert.equal((await exportOf('zip', outsider.key)).status, 404);
      assert.equal((await exportOf('pdf')).status, 400);
    });
  });
}
