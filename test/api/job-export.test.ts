import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { unzipSync } from 'fflate';
import { parse as parseJunit, type TestCase, type TestSuites } from 'junit2json';
import { XrayExecution } from '../../src/api/v1/results.ts';
import { v1 } from '../../src/client/index.ts';
import { createAjv } from '../../src/server/validation.ts';
import { browserAvailable, openReport } from '../helpers/browser.ts';
import { attest } from '../helpers/cli.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser } from '../helpers/factories.ts';
import { type PlaywrightRun, runPlaywrightFixture, zipFolder } from '../helpers/playwright-fixture.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

// EXP-5: `GET /testmgmt/jobs/{jobId}/export` and `attest export --job` write one report per format for a
// whole job, a Playwright run imported with its retries: 8 tests, one skipped, one flaky (failed, then
// passed on its retry), two failing on every attempt (one outside any step). Checked by consumers that
// are not ours: junit2json, Allure's command line, Chromium, and Xray's schema.

const execFileAsync = promisify(execFile);
const ALLURE = path.resolve('node_modules/allure-commandline/dist/bin/allure');
const JOB_CONFIG = fileURLToPath(new URL('../fixtures/playwright-job/playwright.config.ts', import.meta.url));
const TITLES = [
  'shows the shop title',
  'loyalty points',
  'flaky login',
  'adds two mugs to the cart',
  'pays by card',
  'shows the cart',
  'adds up the total',
  'opens the order page',
];

let fixture: Promise<PlaywrightRun> | undefined;
/** One real Playwright run for every dialect. */
const playwrightRun = () => {
  fixture ??= runPlaywrightFixture({}, { config: JOB_CONFIG });
  return fixture;
};

async function javaAvailable(): Promise<boolean> {
  const found = await execFileAsync('java', ['-version']).then(
    () => true,
    () => false,
  );
  if (!found && process.env.CI === 'true') throw new Error("CI=true but there is no java for Allure's command line");
  return found;
}

/** A Surefire element junit2json keeps under its own name. */
type Rerun = { message?: string; type?: string; stackTrace?: (string | { inner?: string })[] };
const text = (value: string | { inner?: string } | undefined) => (typeof value === 'string' ? value : (value?.inner ?? ''));
const rerunsOf = (testcase: TestCase, element: string) => ((testcase as Record<string, unknown>)[element] ?? []) as Rerun[];

function checkJunit(parsed: TestSuites, projectId: string) {
  assert.equal(parsed.tests, 8);
  assert.equal(parsed.failures, 2);
  assert.equal(parsed.errors, 0);
  assert.equal((parsed as { skipped?: number }).skipped, 1);
  const cases = (parsed.testsuite ?? []).flatMap((suite) => suite.testcase ?? []);
  assert.deepEqual(cases.map((c) => c.name).sort(), [...TITLES].sort(), 'one testcase per test, no "(retry N)"');
  for (const testcase of cases) {
    assert.ok(!testcase.classname?.includes(projectId), `${testcase.name}: classname ${testcase.classname}`);
    assert.match(testcase.classname ?? '', / › (Account|Checkout|Orders)$/, 'the suite path');
  }
  for (const suite of parsed.testsuite ?? []) {
    assert.ok(
      suite.testcase?.every((c) => c.classname === suite.name),
      'one testsuite per suite path',
    );
  }
  const byName = new Map(cases.map((c) => [c.name, c]));
  const flaky = byName.get('flaky login')!;
  assert.equal(flaky.classname, 'playwright/tests/account.spec.ts › Account');
  assert.equal(flaky.failure, undefined, 'the final attempt passed');
  const [flakyFailure] = rerunsOf(flaky, 'flakyFailure');
  assert.ok(flakyFailure, 'the failed first attempt is a flakyFailure');
  assert.match(flakyFailure.message ?? '', /the session is ready on the retry/);
  assert.match(text(flakyFailure.stackTrace?.[0]), /Step 2: Check the session/, 'the innermost failed step');
  const pay = byName.get('pays by card')!;
  assert.equal(pay.failure?.length, 1);
  assert.match(pay.failure?.[0]?.message ?? '', /toHaveText/);
  assert.equal(rerunsOf(pay, 'rerunFailure').length, 1, 'the earlier failed attempt is a rerunFailure');
  // A failure outside any step keeps its own message and text.
  const order = byName.get('opens the order page')!;
  assert.match(order.failure?.[0]?.message ?? '', /the order page has its own title/);
  assert.match(order.failure?.[0]?.inner ?? '', /Expected: "Orders"/);
  assert.equal(rerunsOf(order, 'rerunFailure').length, 1);
  assert.ok(byName.get('loyalty points')!.skipped, 'skipped');
  return cases;
}

for (const dialect of DIALECTS) {
  describe(`job export (${dialect})`, { skip: !browserAvailable() && 'no Chromium for the Playwright fixture' }, () => {
    let server: TestServer;
    let viewer: TestUser;
    let outsider: TestUser;
    let project: { id: string; key: string };
    let jobId: string;
    const exportOf = (format: string, headers: Record<string, string> = {}, key = viewer.key) =>
      fetch(`${server.url}/api/v1/testmgmt/jobs/${jobId}/export?format=${format}`, { headers: { 'service.api-token': key, ...headers } });
    const bytesOf = async (response: Response) => new Uint8Array(await response.arrayBuffer());

    before(async () => {
      const run = await playwrightRun();
      assert.equal(run.code, 1, run.output);
      server = await startTestServer(dialect);
      project = await createProject(server, 'Shop');
      viewer = await createUser(server, ['viewer'], { projects: [project.id] });
      outsider = await createUser(server, ['manager']);
      const admin = server.admin.client;
      const accepted = await admin.importReport(
        project.id,
        { name: 'playwright-report.zip', bytes: zipFolder(run.outDir) },
        { name: 'Nightly' },
      );
      const record = await waitFor(
        async () => {
          const now = await admin.call(v1.imports.getImport, { params: { projectId: project.id, importId: String(accepted.id) } });
          return now.status === 'completed' || now.status === 'failed' ? now : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 50, message: 'the import to finish' },
      );
      assert.equal(record.status, 'completed', record.error ?? '');
      jobId = record.jobId as string;
    });
    after(() => server?.close());

    test('junit: ONE file for the job, 8 tests and 2 failures, retries folded (flakyFailure, rerunFailure), evidence in the ZIP', async () => {
      const response = await exportOf('junit');
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), 'application/zip', 'the job has screenshots and logs: the ZIP carries them');
      assert.match(response.headers.get('content-disposition') ?? '', /^attachment; filename="attest-job-[0-9a-f]{8}-junit\.zip"$/);
      const files = unzipSync(await bytesOf(response));
      const xml = Buffer.from(files['junit.xml']!).toString();
      assert.equal(Object.keys(files).filter((name) => name.endsWith('.xml')).length, 1, 'one JUnit file for the whole job');
      checkJunit((await parseJunit(xml)) as TestSuites, project.id);
      const lines = [...xml.matchAll(/^\[\[ATTACHMENT\|(.+)\]\]$/gm)].map((match) => match[1]!);
      assert.ok(lines.length > 0);
      for (const file of lines) assert.ok(files[file], `${file} is in the archive`);
      const contexts = Object.keys(files).filter((name) => /error-context/.test(name));
      // pays by card and opens the order page, twice each, and the flaky test's first attempt.
      assert.equal(contexts.length, 5, `non-image evidence: ${contexts.join(', ')}`);
      assert.match(Buffer.from(files[contexts[0]!]!).toString(), /\S/);
      assert.ok(
        lines.some((line) => line.endsWith('.log')),
        "the flaky test's session.log",
      );

      // Plain XML when asked for; the ZIP when asked for.
      const plain = await viewer.client.exportJob(jobId, 'junit', { accept: 'application/xml' });
      assert.match(plain.headers.get('content-type') ?? '', /^application\/xml/);
      checkJunit((await parseJunit(await plain.text())) as TestSuites, project.id);
      const zip = await exportOf('junit-zip');
      assert.equal(zip.headers.get('content-type'), 'application/zip');
      assert.ok(unzipSync(await bytesOf(zip))['junit.xml']);
    });

    test('xray: one document, automated tests as Generic keyed by their full name, the flaky one passed', async () => {
      const response = await exportOf('xray&xrayProject=SHOP');
      assert.equal(response.status, 200);
      const body = await response.json();
      const validate = createAjv(false).compile(XrayExecution);
      assert.ok(validate(body), JSON.stringify(validate.errors));
      const xray = body as {
        tests: { status: string; comment: string; testInfo: { type: string; summary: string; definition?: string; projectKey?: string } }[];
      };
      assert.equal(xray.tests.length, 8);
      const tests = await server.admin.client.call(v1.tests.listTests, { query: { projectId: project.id } });
      assert.deepEqual(xray.tests.map((t) => t.testInfo.definition).sort(), tests.items.map((t) => t.name).sort());
      for (const t of xray.tests) {
        assert.equal(t.testInfo.type, 'Generic');
        assert.equal(t.testInfo.projectKey, 'SHOP');
        assert.ok(t.testInfo.definition?.endsWith(` › ${t.testInfo.summary}`), t.testInfo.definition);
      }
      const flaky = xray.tests.find((t) => t.testInfo.summary === 'flaky login')!;
      assert.equal(flaky.status, 'PASSED');
      assert.match(flaky.comment, /2 attempts/);
      assert.deepEqual(
        xray.tests
          .filter((t) => t.status === 'FAILED')
          .map((t) => t.testInfo.summary)
          .sort(),
        ['opens the order page', 'pays by card'],
      );
    });

    test("allure: one results folder; Allure's command line counts 8 tests, 2 failed, the flaky one passed with its retry", async (t) => {
      const response = await exportOf('allure');
      assert.equal(response.status, 200);
      const files = unzipSync(await bytesOf(response));
      const results = Object.keys(files).filter((name) => name.endsWith('-result.json'));
      assert.equal(results.length, 11, 'one result per attempt: 8 tests, 3 retries');
      const parsed = results.map((name) => JSON.parse(Buffer.from(files[name]!).toString()) as { historyId: string; name: string });
      assert.equal(new Set(parsed.map((r) => r.historyId)).size, 8, 'the attempts of a test share its history id');
      assert.ok(parsed.every((r) => !r.name.includes('(retry')));
      if (!(await javaAvailable())) return t.skip('no java');
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-allure-job-'));
      for (const [name, bytes] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
        fs.writeFileSync(path.join(dir, name), bytes);
      }
      const report = path.join(dir, 'report');
      await execFileAsync(ALLURE, ['generate', path.join(dir, 'allure-results'), '-o', report, '--clean'], { timeout: 180_000 });
      const summary = JSON.parse(fs.readFileSync(path.join(report, 'widgets', 'summary.json'), 'utf8')) as {
        statistic: Record<string, number>;
      };
      assert.deepEqual(summary.statistic, { failed: 2, broken: 0, skipped: 1, passed: 5, unknown: 0, total: 8 });
      const cases = fs
        .readdirSync(path.join(report, 'data', 'test-cases'))
        .map((name) => JSON.parse(fs.readFileSync(path.join(report, 'data', 'test-cases', name), 'utf8')) as Record<string, unknown>);
      const flaky = cases.find((c) => c.name === 'flaky login' && c.status === 'passed')!;
      assert.equal(flaky.flaky, true, 'Allure marks it flaky');
      assert.equal((flaky.extra as { retries: unknown[] }).retries.length, 1);
    });

    test('html: one offline report with every test, its attempts and every image loaded', async () => {
      const response = await exportOf('html');
      assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
      await openReport(await bytesOf(response), 'attest-html-job-', async (page, problems) => {
        assert.equal(await page.$$eval('table.tests tbody tr', (rows) => rows.length), 8);
        assert.equal(await page.$$eval('details.attempt', (nodes) => nodes.length), 3, 'three earlier attempts');
        const widths = await page.$$eval('img', (nodes) => nodes.map((img) => (img as unknown as { naturalWidth: number }).naturalWidth));
        assert.ok(widths.length > 0 && widths.every((width) => width > 0));
        assert.equal(await page.$$eval('script', (nodes) => nodes.length), 1, 'the filter alone');
        assert.match((await page.textContent('body')) ?? '', /the order page has its own title/);
        // Each error once in its attempt: not above the steps, not on the step around the failing one, not in the run's cells.
        const sections = await page.$$eval('section.test', (nodes) =>
          nodes.map((section) => {
            const copy = section.cloneNode(true) as typeof section;
            // Earlier attempts have their own errors; an error context file (folded) carries Playwright's copy of it.
            for (const other of copy.querySelectorAll('details.attempt, details.file-text')) other.remove();
            return { title: section.querySelector('h2')?.textContent ?? '', text: copy.textContent ?? '' };
          }),
        );
        const finalAttemptText = (name: string) => sections.find((section) => section.title.includes(name))?.text ?? '';
        const pay = finalAttemptText('pays by card');
        assert.equal(pay.split('Received: "Card declined"').length - 1, 1, 'the step error once');
        assert.match(pay, /Its error is shown under 4\. See the receipt/);
        const order = finalAttemptText('opens the order page');
        assert.equal(
          order.split('the order page has its own title').length - 1,
          2,
          "once in the run's error: the message and its code frame",
        );
        // Playwright's ARIA snapshots (error-context.md) are folded until asked for.
        assert.ok((await page.$$eval('details.file-text', (nodes) => nodes.length)) >= 2);
        assert.equal(await page.$$eval('details.file-text[open]', (nodes) => nodes.length), 0);
        const height = await page.$eval('html', (html) => html.scrollHeight);
        assert.ok(height < 8 * 500, `8 tests in ${height} px`);
        // The filter by status and the search by name narrow the table and the tests' sections.
        const shownRows = () =>
          page.$$eval('table.tests tbody tr', (rows) =>
            rows.filter((row) => !row.hasAttribute('hidden')).map((row) => row.querySelector('a')?.textContent),
          );
        await page.getByLabel('Status').selectOption('failed');
        assert.deepEqual((await shownRows()).sort(), ['opens the order page', 'pays by card']);
        assert.equal(await page.$$eval('section.test:not([hidden])', (nodes) => nodes.length), 2);
        assert.equal(await page.textContent('#filter-count'), '2 of 8 tests shown');
        await page.getByLabel('Status').selectOption('');
        await page.getByLabel('Name').fill('MUGS');
        assert.deepEqual(await shownRows(), ['adds two mugs to the cart']);
        assert.deepEqual(problems, []);
      });
    });

    test('refusals: another project answers 404, an unknown format 400', async () => {
      assert.equal((await exportOf('junit', {}, outsider.key)).status, 404);
      assert.equal((await exportOf('pdf')).status, 400);
    });

    test('attest export --job writes each run bundle and ONE junit.xml, report.html and allure-results/ for the job', async () => {
      const out = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-export-job-'));
      const env = { ATTEST_URL: server.url, ATTEST_API_KEY: viewer.key, ATTEST_CONFIG_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'cfg-')) };
      const result = await attest(['export', '--job', jobId, '--format', 'junit,html,allure,xray', '--out', out, '--json'], env);
      assert.equal(result.code, 0, result.output);
      const summary = JSON.parse(result.stdout) as { runs: { runId: string }[]; job: { files: string[] } };
      assert.equal(summary.runs.length, 11);
      for (const run of summary.runs) assert.ok(fs.existsSync(path.join(out, run.runId, 'manifest.json')));
      assert.ok(summary.job.files.includes('junit.xml') && summary.job.files.includes('report.html'));
      assert.ok(summary.job.files.some((name) => name.startsWith('allure-results/')));
      const xml = fs.readFileSync(path.join(out, 'junit.xml'), 'utf8');
      checkJunit((await parseJunit(xml)) as TestSuites, project.id);
      for (const [, file] of xml.matchAll(/^\[\[ATTACHMENT\|(.+)\]\]$/gm)) assert.ok(fs.existsSync(path.join(out, file!)), file);
      assert.ok(fs.existsSync(path.join(out, 'report.html')) && fs.existsSync(path.join(out, 'xray.json')));
      assert.equal(JSON.parse(fs.readFileSync(path.join(out, 'job.json'), 'utf8')).job.id, jobId);
    });
  });
}
