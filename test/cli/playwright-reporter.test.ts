import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { zipSync } from 'fflate';
import { v1 } from '../../src/client/index.ts';
import { parsePlaywright } from '../../src/import/playwright.ts';
import { sha256 } from '../helpers/blob-files.ts';
import { browserAvailable } from '../helpers/browser.ts';
import { type ServerWithTester, serverWithTester } from '../helpers/factories.ts';
import { closedPort } from '../helpers/http.ts';
import {
  importedCaseShape,
  importSettled,
  type PlaywrightRun,
  runPlaywrightFixture,
  serverRunShape,
} from '../helpers/playwright-fixture.ts';

// The live reporter (packages/playwright-reporter) on a real run of test/fixtures/playwright
// against a real server: what it streamed must be what the JSON report of the same run says.
// Then a dead server and one that never answers: the run ends as it would without the reporter.

const SUMMARY = /^attest: sent (\d+) runs, (\d+) steps, (\d+) attachments to (\S+) \(job ([^)]+)\)(.*)$/m;

describe('Playwright live reporter [sqlite]', { skip: !browserAvailable() }, () => {
  let { server, project, tester } = {} as ServerWithTester;
  let run: PlaywrightRun;
  let liveJobId: string;

  before(async () => {
    ({ server, project, tester } = await serverWithTester('sqlite', 'Web shop'));
    run = await runPlaywrightFixture({
      ATTEST_URL: server.url,
      ATTEST_API_KEY: tester.key,
      // A project key, looked up through the project list.
      ATTEST_PROJECT: project.key.toLowerCase(),
      ATTEST_BRANCH: 'main',
    });
  });
  after(() => server?.close());

  test('one job, one run per attempt, each the JSON report of the same run step for step and byte for byte', async () => {
    assert.equal(run.code, 1, run.output);
    const summary = SUMMARY.exec(run.stderr);
    assert.ok(summary, run.output);
    assert.deepEqual(summary.slice(1, 5), ['7', '21', '8', server.url]);
    assert.equal(summary[6], '', `no failures: ${run.output}`);
    assert.equal(run.stderr.match(/^attest:/gm)?.length, 1, 'one line, and no error lines');

    const jobId = summary[5]!;
    liveJobId = jobId;
    const job = await tester.client.call(v1.jobs.getJob, { params: { jobId } });
    assert.equal(job.projectId, project.id);
    assert.equal(job.branch, 'main');
    assert.equal(job.name, 'Playwright fixture');
    assert.deepEqual(
      { total: job.progress.total, passed: job.progress.passed, failed: job.progress.failed, skipped: job.progress.skipped },
      { total: 7, passed: 3, failed: 3, skipped: 1 },
    );

    const runs = await tester.client.call(v1.runs.listRuns, { query: { projectId: project.id, jobId } });
    const report = parsePlaywright('report.json', fs.readFileSync(run.reportPath));
    assert.deepEqual(runs.items.map((r) => r.name).sort(), report.cases.map((c) => c.name).sort());
    for (const item of runs.items) {
      assert.equal(item.status, 'completed');
      assert.equal(item.branch, 'main');
      // A retry bears its test's name (TRIAGE-14): the case of the same name and attempt.
      const imported = report.cases.find((c) => c.name === item.name && (c.attempt ?? 0) === item.attempt)!;
      assert.deepEqual(await serverRunShape(tester.client, project.id, item.id), importedCaseShape(imported), item.name);
    }

    // Both attempts of a test are runs of one test, named by its full name.
    const attempts = runs.items.filter((r) => r.name.startsWith('flaky login'));
    assert.equal(attempts.length, 2);
    assert.equal(attempts[0]!.testId, attempts[1]!.testId);
    const flaky = await tester.client.call(v1.tests.getTest, { params: { testId: attempts[0]!.testId! } });
    assert.equal(flaky.name, 'account.spec.ts › Account › flaky login');
  });

  test('the failure screenshot is stored on the innermost failed step with the bytes Playwright wrote', async () => {
    const runs = await tester.client.call(v1.runs.listRuns, { query: { projectId: project.id } });
    const pay = runs.items.find((r) => r.name === 'pays by card')!;
    const results = await tester.client.call(v1.results.getResults, { params: { testRunId: pay.id } });
    const receipt = results.steps.find((s) => s.title === 'See the receipt')!;
    assert.equal(results.steps.find((s) => s.id === receipt.parentId)?.title, 'Pay');
    const artifacts = await tester.client.call(v1.artifacts.listArtifacts, {
      params: { projectId: project.id },
      query: { testRunId: pay.id },
    });
    const shot = artifacts.items.find((a) => a.kind === 'screenshot')!;
    assert.equal(shot.stepId, receipt.id);
    const file = JSON.parse(fs.readFileSync(run.reportPath, 'utf8')).suites[1].suites[0].specs[1].tests[0].results[0].attachments[0];
    assert.equal(file.name, 'screenshot');
    const response = await tester.client.fetchRaw('GET', `/artifact/artifacts/${shot.id}/content`);
    const bytes = Buffer.from(await response.arrayBuffer());
    assert.equal(sha256(bytes), sha256(fs.readFileSync(file.path)));
  });
  test("importing the same run's JSON report with its attachments gives the live reporter's runs, steps and screenshot bytes (IMP-2)", async () => {
    // The output folder as a CI job would archive it: report.json and test-results/, whose files the
    // report names by absolute paths of this machine (resolved by their tails inside the ZIP).
    const entries: Record<string, Uint8Array> = {};
    const walk = (dir: string) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else entries[path.relative(run.outDir, full).split(path.sep).join('/')] = fs.readFileSync(full);
      }
    };
    walk(run.outDir);
    const record = await importSettled(
      tester.client,
      project.id,
      { name: 'playwright-report.zip', bytes: zipSync(entries) },
      { name: 'Imported' },
    );
    assert.equal(record.status, 'completed', record.error ?? '');
    assert.equal(record.counts?.attachmentsMissing, 0, JSON.stringify(record.files));
    assert.equal(record.counts?.testsCreated, 0, 'the live reporter made the tests; the import adds to their history');

    const live = (await tester.client.call(v1.runs.listRuns, { query: { projectId: project.id, jobId: liveJobId } })).items;
    const imported = (await tester.client.call(v1.runs.listRuns, { query: { projectId: project.id, jobId: record.jobId as string } }))
      .items;
    // A retry's run bears its test's name (TRIAGE-14): the twin is the run of the same name and attempt.
    const named = (r: (typeof live)[number]) => `${r.name} #${r.attempt}`;
    assert.deepEqual(imported.map(named).sort(), live.map(named).sort());
    for (const item of imported) {
      const twin = live.find((r) => named(r) === named(item))!;
      assert.equal(item.verdict, twin.verdict, item.name);
      assert.equal(item.testId, twin.testId, item.name);
      assert.deepEqual(
        await serverRunShape(tester.client, project.id, item.id),
        await serverRunShape(tester.client, project.id, twin.id),
        item.name,
      );
    }
  });
});

describe('Playwright live reporter: a server that is down or hangs', { skip: !browserAvailable() }, () => {
  test('never fails the run nor holds it past its deadline; the summary says what was lost', async () => {
    const hanging = http.createServer(() => {
      // Takes every request and never answers.
    });
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const hangingUrl = `http://127.0.0.1:${(hanging.address() as net.AddressInfo).port}`;
    const deadUrl = `http://127.0.0.1:${await closedPort()}`;
    const reporter = (url: string) => ({
      ATTEST_URL: url,
      ATTEST_API_KEY: 'atk_not-checked',
      ATTEST_PROJECT: 'WEB',
      ATTEST_FLUSH_TIMEOUT_MS: '2000',
    });
    try {
      const [plain, dead, hung] = await Promise.all([
        runPlaywrightFixture(),
        runPlaywrightFixture(reporter(deadUrl)),
        runPlaywrightFixture(reporter(hangingUrl)),
      ]);
      for (const result of [dead, hung]) {
        assert.equal(result.code, plain.code, result.output);
        assert.match(result.stdout, /1 failed[\s\S]*1 flaky[\s\S]*1 skipped[\s\S]*2 passed/, 'the test outcome is untouched');
        // One error line and the summary: nothing per result.
        assert.equal(result.stderr.match(/^attest:/gm)?.length, 2, result.stderr);
        const summary = SUMMARY.exec(result.stderr);
        assert.ok(summary, result.stderr);
        assert.deepEqual(summary.slice(1, 6), ['0', '0', '0', result === dead ? deadUrl : hangingUrl, 'not created']);
        assert.match(summary[6]!, /; 1 calls failed/);
        // Within the 2 s deadline plus start-up noise of three runs side by side.
        assert.ok(result.durationMs < plain.durationMs + 10_000, `${result.durationMs} ms against ${plain.durationMs} ms`);
      }
      assert.match(dead.stderr, /ECONNREFUSED/);
      assert.match(dead.stderr, /items not sent/);
      // The deadline cuts the call in flight, or, on a machine too busy to have started it by then, keeps it from starting.
      assert.match(hung.stderr, /(cut at|not sent before) the flush deadline/);
      assert.match(hung.stderr, /items left at the 2 s deadline/);
    } finally {
      hanging.closeAllConnections();
      await new Promise((resolve) => hanging.close(resolve));
    }
  });
});
