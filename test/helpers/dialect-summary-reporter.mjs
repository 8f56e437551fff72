// A node:test reporter that prints, after the run, how many tests passed, failed and were
// skipped on each database dialect. Suites name their dialect in brackets: `[sqlite] GET /me`.

export default async function* dialectSummary(source) {
  const stacks = new Map();
  const counts = {};
  for await (const event of source) {
    const { data } = event;
    const file = data.file ?? '';
    const stack = stacks.get(file) ?? [];
    stacks.set(file, stack);
    if (event.type === 'test:start' && data.nesting !== undefined) {
      stack.length = data.nesting;
      stack.push(data.name ?? '');
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
}
