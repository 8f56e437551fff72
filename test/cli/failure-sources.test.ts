import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { browserAvailable } from '../helpers/browser.ts';
import { tempDir } from '../helpers/data-folders.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { type ServerWithTester, serverWithTester } from '../helpers/factories.ts';
import {
  importSettled,
  PLAYWRIGHT_VISUAL_CONFIG,
  type PlaywrightRun,
  REPORTER_SOURCE,
  runPlaywrightFixture,
  writeBadgeBaseline,
  zipFolder,
} from '../helpers/playwright-fixture.ts';

// One real failure, three ways in (TRIAGE-1, TRIAGE-2): a `toHaveScreenshot` failing inside nested
// `test.step`s (test/fixtures/playwright-visual, run by Playwright with Chromium) is streamed by the
// live reporter, and the same run's JSON report and JUnit XML (both written by that Playwright run)
// are imported into the same project. Each path must file the failing run, and each of its failed
// steps, under one group: the step errors (no frames) and the run's `error` cell (frames) are one
// cause, and JUnit's `message` attribute (the first line, without `Error: `) is the same failure.

const BADGE = 'the badge matches its baseline';

for (const dialect of DIALECTS) {
  describe(`one failure is one group wherever it arrives from [${dialect}]`, { skip: !browserAvailable() }, () => {
    let { server, project, tester } = {} as ServerWithTester;
    let run: PlaywrightRun;
    const jobs: Record<string, string> = {};

    before(async () => {
      ({ server, project, tester } = await serverWithTester(dialect, 'Sources'));
      const junitPath = path.join(tempDir('attest-junit-'), 'junit.xml');
      run = await runPlaywrightFixture(
        {
          ATTEST_URL: server.url,
          ATTEST_API_KEY: tester.key,
          ATTEST_PROJECT: project.key,
          ATTEST_PW_REPORTER: REPORTER_SOURCE,
          ATTEST_PW_JUNIT: junitPath,
        },
        { config: PLAYWRIGHT_VISUAL_CONFIG, prepare: writeBadgeBaseline },
      );
      const summary = /^attest: sent \d+ runs, \d+ steps, \d+ attachments to \S+ \(job ([^)]+)\)(.*)$/m.exec(run.stderr);
      assert.ok(summary, run.output);
      jobs.reporter = summary[1] as string;
      const json = await importSettled(
        tester.client,
        project.id,
        { name: 'playwright.zip', bytes: zipFolder(run.outDir) },
        { name: 'JSON' },
      );
      assert.equal(json.status, 'completed', json.error ?? '');
      jobs['Playwright JSON'] = json.jobId as string;
      const xml = fs.readFileSync(junitPath);
      const junit = await importSettled(tester.client, project.id, { name: 'junit.xml', bytes: xml }, { name: 'JUnit' });
      assert.equal(junit.status, 'completed', junit.error ?? '');
      jobs.JUnit = junit.jobId as string;
    });
    after(() => server?.close());

    /** The groups of the badge run of a job: the run's own and each failed step's. */
    async function groupsOf(jobId: string) {
      const runs = (await tester.client.call(v1.runs.listRuns, { query: { projectId: project.id, jobId } })).items;
      const badge = runs.find((r) => r.name === BADGE);
      assert.ok(badge, `the job ${jobId} has the badge run`);
      assert.equal(badge.verdict, 'failed');
      const results = await tester.client.call(v1.results.getResults, { params: { testRunId: badge.id } });
      const failed = results.steps.filter((s) => s.status === 'failed');
      assert.ok(failed.length > 0);
      return { run: badge.failureGroupId, steps: failed.map((s) => [s.title, s.failureGroupId] as const) };
    }

    for (const source of ['reporter', 'Playwright JSON', 'JUnit']) {
      test(`${source}: the failing run and each of its failed steps are in one group, the one with frames`, async () => {
        const { run: runGroup, steps } = await groupsOf(jobs[source] as string);
        assert.ok(runGroup);
        for (const [title, group] of steps) assert.equal(group, runGroup, `step "${title}"`);
        const group = await tester.client.call(v1.failures.getFailureGroup, { params: { projectId: project.id, groupId: runGroup } });
        assert.match(group.title, /toHaveScreenshot/);
        assert.equal(group.target, "locator('#badge')");
        assert.deepEqual(group.frames, ['test/fixtures/playwright-visual/tests/visual.spec.ts:']);
      });
    }

    test('the reporter, the Playwright JSON import and the JUnit import land in the same group', async () => {
      const bySource = await Promise.all(Object.values(jobs).map(async (jobId) => (await groupsOf(jobId)).run));
      assert.deepEqual(new Set(bySource).size, 1, JSON.stringify(Object.keys(jobs).map((source, i) => [source, bySource[i]])));
      const groups = (await tester.client.call(v1.failures.listFailureGroups, { params: { projectId: project.id }, query: { limit: 50 } }))
        .items;
      assert.deepEqual(
        groups.map((g) => [g.title.split('\n')[0], g.occurrences]),
        [['Error: expect(locator).toHaveScreenshot(expected) failed', 3]],
      );
    });
  });
}
