import type { Attest } from './attest.ts';
import { Api } from './attest.ts';
import type { Settings } from './figures.ts';
import { median } from './lib.ts';
import { type Figure, judge } from './report.ts';

// F8 (IMP-1): importing a 5,000-test JUnit XML file (50 suites of 100 cases, one in ten failing
// with a stack trace, every case with a line of output), from the upload to the import's
// `completed`. The baseline, in the same run and interleaved: the same 5,000 runs recorded the way
// a hand-written converter would, one bulk `POST /testmgmt/testruns` per case (verdict, step and
// cells in one call), 4 clients at once. Bars: the import is at least as fast as that, and takes
// seconds (at most 10), not minutes.

const SUITES = 50;
const CASES = 100;
const TESTS = SUITES * CASES;
const STACK = Array.from({ length: 12 }, (_, i) => `    at com.example.Frame${i}.call(Frame${i}.java:${40 + i})`).join('\n');

const xmlEscaped = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('"', '&quot;');

/** The report, with names unique to this round so each import creates its tests anew, like the baseline. */
export function report(round: string): Buffer {
  const suites: string[] = [];
  for (let s = 0; s < SUITES; s++) {
    const cases: string[] = [];
    for (let c = 0; c < CASES; c++) {
      const failing = (s * CASES + c) % 10 === 0;
      const failure = failing ? `<failure message="expected 200 but was 500" type="AssertionError">${xmlEscaped(STACK)}</failure>` : '';
      cases.push(
        `<testcase classname="com.example.r${round}.Suite${s}" name="case ${c}" time="0.${String(c).padStart(3, '0')}">${failure}<system-out>case ${c} of suite ${s} ran</system-out></testcase>`,
      );
    }
    suites.push(
      `<testsuite name="com.example.r${round}.Suite${s}" tests="${CASES}" timestamp="2026-11-25T10:00:00">${cases.join('')}</testsuite>`,
    );
  }
  return Buffer.from(`<?xml version="1.0" encoding="UTF-8"?><testsuites name="bench ${round}">${suites.join('')}</testsuites>`);
}

async function importOnce(attest: Attest, projectId: string, round: string): Promise<number> {
  return (await importReport(attest, projectId, report(round))).seconds;
}

/** Imports `body` (JUnit XML) with `options` in the query; seconds from the upload to `completed`, and the job. */
export async function importReport(
  attest: Attest,
  projectId: string,
  body: Buffer,
  options: Record<string, string> = {},
): Promise<{ seconds: number; jobId: string; runs: number }> {
  const query = new URLSearchParams(options).toString();
  const started = performance.now();
  const response = await fetch(`${attest.url}/api/v1/projects/${projectId}/imports${query ? `?${query}` : ''}`, {
    method: 'POST',
    headers: { 'service.api-token': attest.key, accept: 'application/json', 'content-type': 'application/xml' },
    body,
  });
  const accepted = (await response.json()) as { id: string };
  if (response.status !== 202) throw new Error(`import: ${response.status} ${JSON.stringify(accepted)}`);
  const api = new Api(attest.url, attest.key);
  for (;;) {
    const record = await api.call<{ status: string; error: string | null; jobId: string | null; counts: { runs: number } | null }>(
      'GET',
      `/projects/${projectId}/imports/${accepted.id}`,
    );
    if (record.status === 'completed')
      return { seconds: (performance.now() - started) / 1000, jobId: record.jobId as string, runs: record.counts?.runs ?? 0 };
    if (record.status === 'failed') throw new Error(`import failed: ${record.error}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function bulkOnce(attest: Attest, projectId: string, round: string): Promise<number> {
  const api = new Api(attest.url, attest.key);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < TESTS) {
        const i = next++;
        const failing = i % 10 === 0;
        const title = `case ${i % CASES}`;
        await api.call('POST', '/testmgmt/testruns', {
          projectId,
          name: title,
          testName: `com.example.b${round}.Suite${Math.floor(i / CASES)} › ${title}`,
          verdict: failing ? 'failed' : 'passed',
          results: {
            steps: [
              {
                title,
                status: failing ? 'failed' : 'passed',
                durationMs: i % CASES,
                ...(failing ? { error: 'expected 200 but was 500' } : {}),
                cells: [
                  ...(failing ? [{ name: 'failure', text: `AssertionError: expected 200 but was 500\n${STACK}` }] : []),
                  { name: 'stdout', text: `case ${i % CASES} of suite ${Math.floor(i / CASES)} ran` },
                ],
              },
            ],
          },
        });
      }
    }),
  );
  return (performance.now() - started) / 1000;
}

export async function importFigures(attest: Attest, settings: Settings): Promise<Figure[]> {
  const api = new Api(attest.url, attest.key);
  const project = await api.project();
  await importOnce(attest, project.id, 'warm'); // the parser's and the statements' first use
  const imports: number[] = [];
  const bulks: number[] = [];
  for (let i = 0; i < Math.max(2, settings.repetitions); i++) {
    imports.push(await importOnce(attest, project.id, String(i)));
    bulks.push(await bulkOnce(attest, project.id, String(i)));
  }
  const importSeconds = median(imports);
  return [
    judge({
      id: 'F8',
      title: `import of a ${TESTS.toLocaleString('en-US')}-test JUnit XML file, upload to completed`,
      dialect: 'sqlite',
      unit: 'tests/s',
      attest: TESTS / importSeconds,
      baseline: TESTS / median(bulks),
      baselineName: 'the same runs through the bulk run API, 4 clients',
      minRatio: 1,
      samples: { attest: imports.map((s) => TESTS / s), baseline: bulks.map((s) => TESTS / s) },
      notes: `import ${importSeconds.toFixed(2)} s, bulk API ${median(bulks).toFixed(2)} s (medians)`,
    }),
    judge({
      id: 'F8b',
      title: `the same import's wall time (${TESTS.toLocaleString('en-US')} tests)`,
      dialect: 'sqlite',
      unit: 's',
      attest: importSeconds,
      maxValue: 10,
      samples: { attest: imports },
    }),
  ];
}
