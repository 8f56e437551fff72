// A node:test reporter that prints, after the run, how many tests passed, failed and were
// skipped on each database dialect (suites name their dialect in brackets: `[sqlite] GET /me`),
// and the files that took longest, so the suite's time in CI is watched where it goes.

/** How many of the slowest files the summary names. */
const SLOWEST = 15;

export default async function* dialectSummary(source) {
  const stacks = new Map();
  const counts = {};
  const fileMs = new Map();
  for await (const event of source) {
    const { data } = event;
    const file = data.file ?? '';
    const stack = stacks.get(file) ?? [];
    stacks.set(file, stack);
    if (event.type === 'test:start' && data.nesting !== undefined) {
      stack.length = data.nesting;
      stack.push(data.name ?? '');
    }
    if ((event.type === 'test:pass' || event.type === 'test:fail') && data.nesting === 0 && data.file) {
      fileMs.set(file, (fileMs.get(file) ?? 0) + (data.details?.duration_ms ?? 0));
    }
    if ((event.type === 'test:pass' || event.type === 'test:fail') && data.details?.type !== 'suite') {
      const path = [...stack.slice(0, data.nesting ?? 0), data.name ?? ''];
      const dialect = path.map((n) => /^\[(sqlite|postgres)\]/.exec(n)?.[1]).find(Boolean) ?? 'dialect-independent';
      counts[dialect] ??= { pass: 0, fail: 0, skip: 0 };
      const c = counts[dialect];
      if (data.skip !== undefined || data.todo !== undefined) c.skip++;
      else if (event.type === 'test:pass') c.pass++;
      else c.fail++;
    }
  }
  yield '\n# tests per dialect\n';
  for (const [dialect, c] of Object.entries(counts).sort()) {
    yield `# ${dialect}: ${c.pass + c.fail + c.skip} tests (${c.pass} passed, ${c.fail} failed, ${c.skip} skipped)\n`;
  }
  if (!counts.postgres) yield '# postgres: 0 tests (suite skipped: no PostgreSQL server)\n';
  const slowest = [...fileMs].sort((a, b) => b[1] - a[1]).slice(0, SLOWEST);
  if (slowest.length > 0) yield `\n# the ${slowest.length} slowest files (seconds, their top-level tests added up)\n`;
  for (const [file, ms] of slowest) yield `# ${(ms / 1000).toFixed(1).padStart(7)}  ${file.replace(`${process.cwd()}/`, '')}\n`;
}
