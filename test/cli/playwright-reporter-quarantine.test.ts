import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { browserAvailable } from '../helpers/browser.ts';
import { type ServerWithTester, serverWithTester } from '../helpers/factories.ts';
import { type PlaywrightRun, runPlaywrightFixture } from '../helpers/playwright-fixture.ts';

// TRIAGE-5, TRIAGE-6: the live reporter sends each attempt's retry as `attempt`, reads the
// project's quarantine list, and a failure of a quarantined test does not fail the run. REP-1: run
// as in GitHub Actions, it leaves the job's id and a summary for the next step.

const SUMMARY = /^attest: sent (\d+) runs, .* \(job ([^)]+)\)/m;
/** The fixture's one test that fails on every attempt (test/fixtures/playwright). */
const FAILING = 'checkout.spec.ts › Checkout › pays by card';

describe('Playwright live reporter and quarantine [sqlite]', { skip: !browserAvailable() }, () => {
  let { server, project, tester } = {} as ServerWithTester;
  let run: PlaywrightRun;
  const github = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-github-'));
  const githubOutput = path.join(github, 'output');
  const githubSummary = path.join(github, 'summary.md');

  before(async () => {
    // What earlier steps wrote stays: the reporter appends.
    fs.writeFileSync(githubOutput, 'earlier=step\n');
    ({ server, project, tester } = await serverWithTester('sqlite', 'Quarantined shop'));
    // The test exists before its first run (as after an earlier one), and is quarantined.
    const seed = await tester.client.call(v1.runs.createRun, {
      body: { projectId: project.id, name: 'pays by card', testName: FAILING, verdict: 'failed' },
    });
    await tester.client.call(v1.tests.quarantineTest, {
      params: { testId: seed.testId as string },
      body: { owner: 'qa@example.com', reason: 'The card sandbox declines everything' },
    });
    run = await runPlaywrightFixture({
      ATTEST_URL: server.url,
      ATTEST_API_KEY: tester.key,
      ATTEST_PROJECT: project.id,
      GITHUB_OUTPUT: githubOutput,
      GITHUB_STEP_SUMMARY: githubSummary,
    });
  });
  after(async () => {
    await server?.close();
    fs.rmSync(github, { recursive: true, force: true });
  });

  test('a run whose only failure is a quarantined test passes, and says the failure was quarantined', async () => {
    assert.equal(run.code, 0, run.output);
    assert.match(run.stderr, new RegExp(`^attest: quarantined: ${FAILING} failed \\(owner qa@example\\.com, until \\S+\\)$`, 'm'));
    assert.match(run.stderr, /^attest: every failed test is quarantined \(1\): the run passes$/m);
    // Still reported: the failing runs are stored as failed.
    const jobId = SUMMARY.exec(run.stderr)?.[2] as string;
    assert.ok(jobId, run.output);
    const job = await tester.client.call(v1.jobs.getJob, { params: { jobId } });
    assert.equal(job.progress.failed, 3);
  });

  test("each attempt carries Playwright's retry, so the job counts its tests once: the flaky one as flaky", async () => {
    const jobId = SUMMARY.exec(run.stderr)?.[2] as string;
    const job = await tester.client.call(v1.jobs.getJob, { params: { jobId } });
    assert.deepEqual(job.progress.tests, { total: 5, passed: 2, failed: 1, broken: 0, skipped: 1, flaky: 1, unfinished: 0 });
    const runs = (await tester.client.call(v1.runs.listRuns, { query: { projectId: project.id, jobId } })).items;
    assert.deepEqual(
      runs
        .filter((r) => r.name.startsWith('flaky login'))
        .map((r) => r.attempt)
        .sort(),
      [0, 1],
    );
  });

  test('in GitHub Actions the job id is a step output and in a file, and the run leaves a job summary (REP-1)', async () => {
    const jobId = SUMMARY.exec(run.stderr)?.[2] as string;
    assert.match(jobId, /^[0-9a-f-]{36}$/);
    assert.equal(fs.readFileSync(path.join(run.outDir, '.attest-job'), 'utf8'), `${jobId}\n`);
    assert.equal(
      fs.readFileSync(githubOutput, 'utf8'),
      `earlier=step\nattest-job-id=${jobId}\nattest-job-url=${server.url}/jobs/${jobId}\n`,
    );
    const summary = fs.readFileSync(githubSummary, 'utf8');
    assert.match(summary, new RegExp(`^### Attest: \\[Playwright [^\\]]+\\]\\(${server.url}/jobs/${jobId}\\)$`, 'm'));
    // Playwright's own counts of the fixture: 2 passed, 1 failed (quarantined), 1 flaky, 1 skipped.
    assert.match(summary, /^\| 5 \| 2 \| 1 \| 1 \| 1 \|$/m);
    assert.ok(summary.includes(`Quarantined, not failing the run: \`${FAILING}\``), summary);
    assert.ok(summary.includes(`npx @attest-hq/cli gate --job ${jobId}`), summary);
    // The file and outputs name the job the server holds.
    const job = await tester.client.call(v1.jobs.getJob, { params: { jobId } });
    assert.equal(job.projectId, project.id);
  });
});
