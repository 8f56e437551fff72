import { randomUUID } from 'node:crypto';
import { type AttestClient, v1 } from '../../src/client/index.ts';
import { insertRuns, newRunRow } from '../../src/server/db/repositories/runs.ts';
import type { Executor, TestRunsTable } from '../../src/server/db/types.ts';
import { randomPng } from './png.ts';

// The four pages at scale (docs/web.md, "Pages at scale"), as data: a project holding them all, a
// job of 2,000 runs (a JUnit report of 2,000 tests imported through the API), a run of 5,000 steps
// with 300 screenshots (real, distinct PNGs uploaded through the API) and a test with 10,000 runs
// of history (written by the repositories' bulk insert, `insertRuns`, which the job fan-out and the
// imports use: ten thousand API calls would cost the test a minute). Shared by
// test/browser/scale-pages.test.ts and the benchmark's W1 (bench/web-scale.ts).

export const JOB_RUNS = 2000;
export const RUN_STEPS = 5000;
export const RUN_SCREENSHOTS = 300;
export const HISTORY_RUNS = 10_000;
/** The run's top-level steps; each holds `RUN_STEPS / TOP_STEPS - 1` steps inside. */
export const TOP_STEPS = 1000;

export interface ScalePages {
  projectId: string;
  projectKey: string;
  jobId: string;
  runId: string;
  testId: string;
  /** The title of the last top-level step that holds a screenshot, and that screenshot's name. */
  lastShot: { step: string; name: string };
}

/** A JUnit report of `tests` cases in suites of 100, one in ten failing. */
function junitOf(tests: number): Buffer {
  const suites: string[] = [];
  for (let s = 0; s * 100 < tests; s++) {
    const cases: string[] = [];
    for (let c = 0; c < 100 && s * 100 + c < tests; c++) {
      const failure =
        (s * 100 + c) % 10 === 3
          ? '<failure message="expected 200 but was 500" type="AssertionError">at checkout.spec.ts:42</failure>'
          : '';
      cases.push(`<testcase classname="shop.Suite${s}" name="case ${c}" time="0.${String(c).padStart(3, '0')}">${failure}</testcase>`);
    }
    suites.push(`<testsuite name="shop.Suite${s}" tests="${cases.length}">${cases.join('')}</testsuite>`);
  }
  return Buffer.from(`<?xml version="1.0" encoding="UTF-8"?><testsuites name="scale">${suites.join('')}</testsuites>`);
}

async function importJob(client: AttestClient, projectId: string): Promise<string> {
  const accepted = await client.importReport(projectId, { name: 'scale.xml', bytes: junitOf(JOB_RUNS) }, { name: 'Nightly 2,000' });
  const importId = String(accepted.id);
  for (;;) {
    const record = await client.call(v1.imports.getImport, { params: { projectId, importId } });
    if (record.status === 'completed' && record.jobId) return record.jobId;
    if (record.status !== 'queued' && record.status !== 'processing') throw new Error(`the import ended ${record.status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Step `i` of the run: top-level steps are `Check i`, the ones inside `Action i.j`. */
const PER_TOP = RUN_STEPS / TOP_STEPS;

async function longRun(client: AttestClient, projectId: string): Promise<{ runId: string; lastShot: ScalePages['lastShot'] }> {
  const run = await client.call(v1.runs.createRun, { body: { projectId, name: 'Checkout, 5,000 steps' } });
  const steps = [];
  for (let t = 0; t < TOP_STEPS; t++) {
    // One failure near the end: the way to it opens, the rest of the tree starts folded.
    const failed = t === TOP_STEPS - 10;
    steps.push({
      key: `t${t}`,
      title: `Check ${t}`,
      status: failed ? ('failed' as const) : ('passed' as const),
      durationMs: 40,
      ...(failed ? { error: 'expected the total to read 42.00 but it read 41.99' } : {}),
    });
    for (let j = 1; j < PER_TOP; j++)
      steps.push({ key: `t${t}.${j}`, parentKey: `t${t}`, title: `Action ${t}.${j}`, status: 'passed' as const, durationMs: 10 });
  }
  await client.call(v1.results.appendResults, { params: { testRunId: run.id }, body: { steps } });
  // On every third top-level step from the start, and the last one on step 997 of 1,000.
  const shotStep = (i: number) => (i === RUN_SCREENSHOTS - 1 ? TOP_STEPS - 3 : i * 3);
  const pngs = await Promise.all(Array.from({ length: RUN_SCREENSHOTS }, () => randomPng(96, 60)));
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < RUN_SCREENSHOTS) {
        const i = next++;
        await client.upload(projectId, { testRunId: run.id, stepKey: `t${shotStep(i)}`, kind: 'screenshot', name: `shot-${i}.png` }, [
          { name: `shot-${i}.png`, bytes: pngs[i] as Buffer, type: 'image/png' },
        ]);
      }
    }),
  );
  await client.call(v1.runs.updateRun, { params: { testRunId: run.id }, body: { status: 'completed', verdict: 'failed' } });
  return { runId: run.id, lastShot: { step: `Check ${shotStep(RUN_SCREENSHOTS - 1)}`, name: `shot-${RUN_SCREENSHOTS - 1}.png` } };
}

/** `HISTORY_RUNS` completed runs of one test, one an hour back from now, one in seven failed. */
async function history(db: Executor, projectId: string, testId: string, name: string): Promise<void> {
  const now = Date.now();
  const runs: TestRunsTable[] = Array.from({ length: HISTORY_RUNS }, (_, i) => {
    const started = new Date(now - (HISTORY_RUNS - i) * 3_600_000);
    return newRunRow({
      id: randomUUID(),
      project_id: projectId,
      test_id: testId,
      name,
      status: 'completed',
      verdict: i % 7 === 3 ? 'failed' : 'passed',
      environment: 'staging',
      branch: i % 5 === 0 ? 'feature/cart' : 'main',
      build: String(1000 + i),
      created_at: started.toISOString(),
      started_at: started.toISOString(),
      finished_at: new Date(started.getTime() + 12_000).toISOString(),
      test_version: 1,
    });
  });
  await insertRuns(db, runs);
}

/**
 * Builds the four shapes in a new project: through `client` (the API) all but the test's history,
 * which goes through `db`, the same server's database.
 */
export async function seedScalePages(client: AttestClient, db: Executor, projectName = 'Scale'): Promise<ScalePages> {
  const project = await client.call(v1.projects.createProject, { body: { key: 'SCALE', name: projectName } });
  const jobId = await importJob(client, project.id);
  const { runId, lastShot } = await longRun(client, project.id);
  const first = await client.call(v1.runs.listRuns, { query: { jobId, limit: 1 } });
  const testRun = first.items[0];
  if (!testRun?.testId) throw new Error('the imported job has no run of a test');
  await history(db, project.id, testRun.testId, testRun.name);
  return { projectId: project.id, projectKey: project.key, jobId, runId, testId: testRun.testId, lastShot };
}
