import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { zipSync } from 'fflate';
import { v1 } from '../../src/client/index.ts';
import { sha256 } from '../helpers/blob-files.ts';
import { browserAvailable } from '../helpers/browser.ts';
import { type ServerWithTester, serverWithTester } from '../helpers/factories.ts';
import {
  importSettled,
  PLAYWRIGHT_VISUAL_CONFIG,
  type PlaywrightRun,
  REPORTER_SOURCE,
  runPlaywrightFixture,
  serverRunShape,
  writeBadgeBaseline,
  zipFolder,
} from '../helpers/playwright-fixture.ts';

// A real failing `toHaveScreenshot` (Playwright with Chromium, test/fixtures/playwright-visual): the
// live reporter and the import of the same run's JSON report each store ONE visual-diff artifact
// (baseline, actual, diff: the bytes Playwright wrote) on the step that made the assertion, instead
// of three loose screenshots on the run. Also the small things of the same run: a skip keeps its
// reason as a `skipped` cell, and `error-context` is stored as `error-context.md`, text/markdown.

describe('Playwright visual comparisons become visual diffs, live and imported [sqlite]', { skip: !browserAvailable() }, () => {
  let { server, project, tester } = {} as ServerWithTester;
  let run: PlaywrightRun;
  let liveJobId: string;

  before(async () => {
    ({ server, project, tester } = await serverWithTester('sqlite', 'Visual'));
    run = await runPlaywrightFixture(
      { ATTEST_URL: server.url, ATTEST_API_KEY: tester.key, ATTEST_PROJECT: project.key, ATTEST_PW_REPORTER: REPORTER_SOURCE },
      { config: PLAYWRIGHT_VISUAL_CONFIG, prepare: writeBadgeBaseline },
    );
    const summary = /^attest: sent (\d+) runs, (\d+) steps, (\d+) attachments to \S+ \(job ([^)]+)\)(.*)$/m.exec(run.stderr);
    assert.ok(summary, run.output);
    assert.equal(summary[5], '', `no failures: ${run.output}`);
    liveJobId = summary[4]!;
  });
  after(() => server?.close());

  /** The visual-diff checks on one job's badge run; answers the run's shape for the live/import comparison. */
  async function assertVisualDiff(jobId: string) {
    const runs = (await tester.client.call(v1.runs.listRuns, { query: { projectId: project.id, jobId } })).items;
    assert.equal(runs.length, 3);
    const badge = runs.find((r) => r.name === 'the badge matches its baseline')!;
    assert.equal(badge.verdict, 'failed');
    const results = await tester.client.call(v1.results.getResults, { params: { testRunId: badge.id } });
    const compare = results.steps.find((s) => s.title === 'Compare with the baseline')!;
    assert.equal(compare.status, 'failed');
    assert.match(compare.error ?? '', /toHaveScreenshot/);
    const listed = await tester.client.call(v1.artifacts.listArtifacts, {
      params: { projectId: project.id },
      query: { testRunId: badge.id },
    });
    // One visual diff instead of the three images, and the error context; nothing else.
    assert.deepEqual(listed.items.map((a) => `${a.kind} ${a.name}`).sort(), ['log error-context.md', 'visual-diff badge.png']);
    const diff = listed.items.find((a) => a.kind === 'visual-diff')!;
    assert.equal(diff.stepId, compare.id, 'on the step that made the assertion, not its parent, not the run');
    const details = await tester.client.call(v1.artifacts.getArtifacts, { query: { ids: diff.id } });
    const images = details.items[0]!.images;
    assert.deepEqual(
      images.map((i) => i.role),
      ['baseline', 'actual', 'diff'],
    );
    // The bytes Playwright compared and wrote: the baseline, its actual screenshot and its diff image.
    const attachments = JSON.parse(fs.readFileSync(run.reportPath, 'utf8')).suites[0].specs[0].tests[0].results[0].attachments as {
      name: string;
      path: string;
    }[];
    const bytesOf = (name: string) => sha256(fs.readFileSync(attachments.find((a) => a.name === name)!.path));
    assert.deepEqual(
      images.map((i) => i.sha256),
      [bytesOf('badge-expected.png'), bytesOf('badge-actual.png'), bytesOf('badge-diff.png')],
    );
    assert.equal(diff.sha256, bytesOf('badge-diff.png'));
    assert.deepEqual([images[0]!.width, images[0]!.height], [40, 20]);

    const context = listed.items.find((a) => a.kind === 'log')!;
    assert.equal(context.contentType, 'text/markdown');
    assert.equal(context.stepId, null);

    const skipped = runs.find((r) => r.name === 'runs on the old layout only')!;
    assert.equal(skipped.verdict, 'skipped');
    const skipCells = (await tester.client.call(v1.results.getResults, { params: { testRunId: skipped.id } })).cells;
    assert.deepEqual(
      skipCells.map((c) => [c.name, c.text]),
      [['skipped', 'the old layout is gone']],
    );
    return Promise.all(runs.map(async (r) => [r.name, await serverRunShape(tester.client, project.id, r.id)] as const));
  }

  let liveShapes: (readonly [string, unknown])[];

  test('live: the reporter uploads one visual diff (baseline, actual, diff) on the failing step', async () => {
    liveShapes = await assertVisualDiff(liveJobId);
  });

  test('imported: the JSON report with its folder gives the same visual diff on the same step (IMP-2)', async () => {
    const record = await importSettled(
      tester.client,
      project.id,
      { name: 'visual.zip', bytes: zipFolder(run.outDir) },
      { name: 'Imported' },
    );
    assert.equal(record.status, 'completed', record.error ?? '');
    assert.equal(record.counts?.attachmentsMissing, 0, JSON.stringify(record.files));
    const imported = await assertVisualDiff(record.jobId as string);
    const byName = (shapes: (readonly [string, unknown])[]) => Object.fromEntries(shapes);
    assert.deepEqual(byName(imported), byName(liveShapes));
  });

  test('imported without the baseline in the upload: the two images it has stay screenshots, and the missing one is said', async () => {
    const entries = zipFolder(run.outDir);
    const { unzipSync } = await import('fflate');
    const files = unzipSync(entries);
    delete files['snapshots/badge.png'];
    const record = await importSettled(tester.client, project.id, { name: 'no-baseline.zip', bytes: zipSync(files) }, { name: 'Partial' });
    assert.equal(record.status, 'completed', record.error ?? '');
    assert.equal(record.counts?.attachmentsMissing, 1, JSON.stringify(record.files));
    assert.match(JSON.stringify(record.files), /visual diff \\"badge.png\\"/);
    const runs = (await tester.client.call(v1.runs.listRuns, { query: { projectId: project.id, jobId: record.jobId as string } })).items;
    const badge = runs.find((r) => r.name === 'the badge matches its baseline')!;
    const listed = await tester.client.call(v1.artifacts.listArtifacts, {
      params: { projectId: project.id },
      query: { testRunId: badge.id },
    });
    assert.deepEqual(listed.items.map((a) => `${a.kind} ${a.name}`).sort(), [
      'log error-context.md',
      'screenshot badge-actual.png',
      'screenshot badge-diff.png',
    ]);
  });
});
