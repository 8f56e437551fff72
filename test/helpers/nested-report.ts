import { unique } from './factories.ts';

// Playwright JSON reports whose steps nest as deep as asked (IMP-8): one test, one passed attempt,
// one chain of `test.step`s, each the only child of the one above. 2,000 levels make about 84 KB.

/** A Playwright JSON report of one test whose steps nest `depth` levels deep (1: one top-level step). */
export function nestedPlaywrightReport(depth: number, title = unique('nested ')): Buffer {
  let step: Record<string, unknown> = { title: `s${depth}`, duration: 1 };
  for (let level = depth - 1; level >= 1; level--) step = { title: `s${level}`, duration: 1, steps: [step] };
  const report = {
    config: { projects: [{ name: 'chromium' }] },
    suites: [
      {
        title: 'nested.spec.ts',
        specs: [{ title, tests: [{ projectName: 'chromium', results: [{ status: 'passed', duration: 5, retry: 0, steps: [step] }] }] }],
      },
    ],
  };
  return Buffer.from(JSON.stringify(report));
}
