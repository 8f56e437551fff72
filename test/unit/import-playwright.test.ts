import assert from 'node:assert/strict';
import fs from 'node:fs';
import { before, describe, test } from 'node:test';
import { attachmentKind, formatError, innermostFailed, verdictOf } from '../../packages/playwright-reporter/src/mapping.ts';
import type { ImportedCase, ImportedReport, ImportedStep } from '../../src/import/model.ts';
import { IMPORT_STEP_DEPTH_MAX, ImportInputError, SUITE_DEPTH_MAX } from '../../src/import/model.ts';
import { looksLikePlaywright, parsePlaywright } from '../../src/import/playwright.ts';
import { browserAvailable } from '../helpers/browser.ts';
import { nestedPlaywrightReport } from '../helpers/nested-report.ts';
import { type PlaywrightRun, runPlaywrightFixture } from '../helpers/playwright-fixture.ts';

// The Playwright JSON import, on the report of a real run of test/fixtures/playwright (one run for
// the whole file), and on small hand-written reports for the shapes that run does not produce.

const noAnsi = (text: string) => assert.ok(!text.includes('\u001b['), `ANSI codes in ${text}`);
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);

const tree = (steps: ImportedStep[]): unknown[] => steps.map((s) => (s.steps.length ? [s.title, tree(s.steps)] : s.title));
const allSteps = (steps: ImportedStep[]): ImportedStep[] => steps.flatMap((s) => [s, ...allSteps(s.steps)]);

describe('Playwright JSON import: a real report', { skip: !browserAvailable() }, () => {
  let run: PlaywrightRun;
  let report: ImportedReport;
  const attempts = (title: string): ImportedCase[] =>
    report.cases.filter((c) => c.fullName.endsWith(` › ${title}`)).sort((a, b) => a.attempt - b.attempt);

  before(async () => {
    run = await runPlaywrightFixture();
    report = parsePlaywright('report.json', fs.readFileSync(run.reportPath));
  });

  test('every attempt of every test is a case, named by its title path, with its own verdict', () => {
    assert.equal(run.code, 1, 'the fixture has a failing test');
    assert.equal(report.format, 'playwright');
    assert.ok(report.startedAt && !Number.isNaN(Date.parse(report.startedAt)));
    assert.deepEqual(report.warnings, []);
    assert.deepEqual(
      report.cases.map((c) => [c.fullName, c.name, c.attempt, c.verdict]),
      [
        ['account.spec.ts › Account › shows the shop title', 'shows the shop title', 0, 'passed'],
        ['account.spec.ts › Account › loyalty points', 'loyalty points', 0, 'skipped'],
        ['account.spec.ts › Account › flaky login', 'flaky login', 0, 'failed'],
        ['account.spec.ts › Account › flaky login', 'flaky login', 1, 'passed'],
        ['checkout.spec.ts › Checkout › adds two mugs to the cart', 'adds two mugs to the cart', 0, 'passed'],
        ['checkout.spec.ts › Checkout › pays by card', 'pays by card', 0, 'failed'],
        ['checkout.spec.ts › Checkout › pays by card', 'pays by card', 1, 'failed'],
      ],
    );
    for (const c of report.cases) {
      assert.ok(c.startedAt && !Number.isNaN(Date.parse(c.startedAt)), c.name);
      assert.ok(Number.isInteger(c.durationMs) && c.durationMs! >= 0, c.name);
    }
    // TCM-6: the file and the describe titles file the test.
    assert.deepEqual(attempts('pays by card')[0]?.suite, ['checkout.spec.ts', 'Checkout']);
    // The flaky test's latest attempt passed: that is its final verdict.
    assert.equal(attempts('flaky login').at(-1)!.verdict, 'passed');
  });

  test('nested test.step trees, with the failure on the steps it went through and no ANSI codes', () => {
    const [mugs] = attempts('adds two mugs to the cart');
    assert.deepEqual(tree(mugs!.steps), [
      'Open the shop',
      ['Add two items to the cart', ['Add the blue mug', ['Add the red mug', ['Check the cart count']]]],
      'Attach the checkout screenshot',
    ]);
    assert.ok(allSteps(mugs!.steps).every((s) => s.status === 'passed' && s.error === undefined && s.durationMs! >= 0));
    for (const pay of attempts('pays by card')) {
      assert.deepEqual(tree(pay.steps), ['Fill the cart', ['Pay', ['Press pay', 'See the receipt']]]);
      const statuses = Object.fromEntries(allSteps(pay.steps).map((s) => [s.title, s.status]));
      assert.deepEqual(statuses, { 'Fill the cart': 'passed', Pay: 'failed', 'Press pay': 'passed', 'See the receipt': 'failed' });
      const receipt = allSteps(pay.steps).find((s) => s.title === 'See the receipt')!;
      assert.match(receipt.error!, /toHaveText/);
      assert.match(receipt.error!, /Card declined/);
      noAnsi(receipt.error!);
      const error = pay.cells.find((c) => c.name === 'error')!;
      assert.match(error.text, /Expected: "Thank you"/);
      assert.match(error.text, /> 36 \|/, 'the code snippet');
      assert.match(error.text, /at .*checkout\.spec\.ts:36:\d+/, 'the stack');
      noAnsi(error.text);
    }
  });

  test('the failure screenshot goes to the innermost failed step; other attachments stay on the run', () => {
    for (const c of [...attempts('pays by card'), attempts('flaky login')[0]!]) {
      const failed = allSteps(c.steps).filter((s) => s.status === 'failed');
      const innermost = failed.at(-1)!;
      assert.deepEqual(
        innermost.attachments.map((a) => [a.name, a.kind, a.contentType]),
        [['screenshot', 'screenshot', 'image/png']],
        c.name,
      );
      const path = innermost.attachments[0]!.path!;
      assert.ok(path.startsWith(run.outDir), 'the absolute path the report wrote');
      assert.deepEqual(fs.readFileSync(path).subarray(0, 4), PNG);
      assert.ok(failed.slice(0, -1).every((s) => s.attachments.length === 0));
      assert.deepEqual(
        c.attachments.map((a) => [a.name, a.kind]),
        // Playwright names it `error-context` (text/markdown); stored as `error-context.md`, so as Markdown.
        [['error-context.md', 'log']],
      );
    }
    // Attached inside a step, but the JSON report does not say which: the run's.
    const [mugs] = attempts('adds two mugs to the cart');
    assert.deepEqual(
      mugs!.attachments.map((a) => [a.name, a.kind, a.path]),
      [['checkout', 'screenshot', undefined]],
    );
    assert.deepEqual(Buffer.from(mugs!.attachments[0]!.body!).subarray(0, 4), PNG);
    const retry = attempts('flaky login')[1]!;
    assert.deepEqual(
      retry.attachments.map((a) => [a.name, a.kind, Buffer.from(a.body!).toString()]),
      [['session.log', 'log', 'retry 1\n']],
    );
  });

  test('stdout and stderr cells; a test that skips itself inside a step skips that step and keeps its reason', () => {
    const [title] = attempts('shows the shop title');
    assert.deepEqual(
      title!.cells.map((c) => [c.name, c.text]),
      [
        ['stdout', 'opening the shop\n'],
        ['stderr', 'a warning on stderr\n'],
      ],
    );
    const [skipped] = attempts('loyalty points');
    assert.deepEqual(
      skipped!.steps.map((s) => [s.title, s.status, s.error]),
      [['Open the loyalty page', 'skipped', 'Error: Test is skipped: loyalty points are not built yet']],
    );
    // The skip's reason, as the JUnit import keeps `<skipped message>`.
    assert.deepEqual([skipped!.cells, skipped!.attachments], [[{ name: 'skipped', text: 'loyalty points are not built yet' }], []]);
  });

  test('looksLikePlaywright tells the report from other JSON', () => {
    assert.equal(looksLikePlaywright(JSON.parse(fs.readFileSync(run.reportPath, 'utf8'))), true);
    for (const other of [null, [], { suites: [] }, { config: {}, suites: {} }, { testsuites: [] }, 'report']) {
      assert.equal(looksLikePlaywright(other), false, JSON.stringify(other));
    }
  });
});

const encode = (value: unknown) => new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));

describe('Playwright JSON import: hand-written reports', () => {
  const result = (overrides: Record<string, unknown> = {}) => ({
    status: 'passed',
    retry: 0,
    duration: 12.6,
    startTime: '2026-01-02T03:04:05.000Z',
    errors: [],
    stdout: [{ buffer: Buffer.from('bytes \u001b[31mred\u001b[39m').toString('base64') }],
    stderr: [],
    attachments: [],
    ...overrides,
  });
  const spec = (title: string, tests: unknown[]) => ({ title, tests });
  const report = (projects: string[], tests: unknown[]) => ({
    config: { projects: projects.map((name) => ({ name })) },
    suites: [{ title: 'a.spec.ts', specs: [spec('works', tests)], suites: [{ title: 'Deep', specs: [], suites: [] }] }],
  });

  test('several projects put the project name first; interrupted is broken, timedOut failed; durations are whole', () => {
    const parsed = parsePlaywright(
      'r.json',
      encode(
        report(
          ['chromium', 'firefox'],
          [
            { projectName: 'chromium', results: [result({ status: 'interrupted' })] },
            { projectName: 'firefox', results: [result({ status: 'timedOut' })] },
          ],
        ),
      ),
    );
    assert.deepEqual(
      parsed.cases.map((c) => [c.fullName, c.verdict, c.durationMs, c.cells]),
      [
        ['chromium › a.spec.ts › works', 'broken', 13, [{ name: 'stdout', text: 'bytes red' }]],
        ['firefox › a.spec.ts › works', 'failed', 13, [{ name: 'stdout', text: 'bytes red' }]],
      ],
    );
    // TCM-6: the file, then the describe titles, file the test (the project name is no folder).
    assert.deepEqual(
      parsed.cases.map((c) => c.suite),
      [['a.spec.ts'], ['a.spec.ts']],
    );
  });

  test('an attachment with neither path nor body is left out with a warning; an SVG is a file, a trace a trace', () => {
    const attachments = [
      { name: 'lost', contentType: 'image/png' },
      { name: 'drawing', contentType: 'image/svg+xml', path: '/ci/out/d.svg' },
      { name: 'trace', contentType: 'application/zip', path: '/ci/out/trace.zip' },
      { name: 'video', contentType: 'video/webm', path: '/ci/out/v.webm' },
    ];
    const parsed = parsePlaywright('r.json', encode(report(['only'], [{ projectName: 'only', results: [result({ attachments })] }])));
    const [only] = parsed.cases;
    assert.equal(only!.fullName, 'a.spec.ts › works', 'one project: no project name');
    assert.deepEqual(
      only!.attachments.map((a) => [a.name, a.kind, a.path]),
      [
        ['drawing', 'file', '/ci/out/d.svg'],
        ['trace', 'trace', '/ci/out/trace.zip'],
        ['video', 'video', '/ci/out/v.webm'],
      ],
    );
    assert.equal(parsed.warnings.length, 1);
    assert.match(parsed.warnings[0]!, /lost/);
  });

  test('malformed JSON, the wrong shape and prototype pollution are ImportInputErrors naming the file', () => {
    const refused = (bytes: Uint8Array, message: RegExp) =>
      assert.throws(
        () => parsePlaywright('up/report.json', bytes),
        (error: unknown) => error instanceof ImportInputError && error.file === 'up/report.json' && message.test(error.message),
      );
    refused(encode('{"config": {'), /not valid JSON/);
    refused(encode({ testsuites: [] }), /not a Playwright JSON report/);
    refused(encode('{"config": {}, "suites": [], "__proto__": {"x": 1}}'), /not valid JSON/);
    refused(encode({ config: {}, suites: [{ title: 'a', specs: {} }] }), /suites\[0\]\.specs is not an array/);
    refused(encode({ config: {}, suites: [{ title: 7, specs: [] }] }), /suites\[0\]\.title is not a string/);
  });

  test('steps nested 100 levels deep are read; one level more, or 2,000 (84 KB), is refused naming the limit (IMP-8)', () => {
    const depthOf = (steps: ImportedStep[]): number => {
      let depth = 0;
      for (let level = steps; level.length > 0; level = (level[0] as ImportedStep).steps) depth++;
      return depth;
    };
    assert.equal(IMPORT_STEP_DEPTH_MAX, 100);
    const [deepest] = parsePlaywright('r.json', nestedPlaywrightReport(100)).cases;
    assert.equal(depthOf(deepest!.steps), 100);
    const deep = nestedPlaywrightReport(2000);
    assert.ok(deep.length > 80_000 && deep.length < 90_000, `${deep.length} bytes`);
    for (const bytes of [nestedPlaywrightReport(101), deep]) {
      assert.throws(
        () => parsePlaywright('up/report.json', bytes),
        (error: unknown) =>
          error instanceof ImportInputError &&
          error.message ===
            'up/report.json: suites[0].specs[0].tests[0].results[0]: steps nest more than 100 levels deep; an import takes at most 100',
      );
    }
    // A reading told of another bound keeps to it.
    assert.throws(() => parsePlaywright('r.json', nestedPlaywrightReport(6), { maxStepDepth: 5 }), /more than 5 levels deep/);
  });

  test('describes nested deeper than 32 suites are refused before they are walked (IMP-8)', () => {
    // Written as text: JSON.stringify itself recurses, and would not make the deepest one.
    const nested = (depth: number) => {
      const innermost = JSON.stringify({ title: 'inner', specs: [spec('works', [{ projectName: 'p', results: [result()] }])] });
      const json = `{"config":{},"suites":[${'{"title":"d","suites":['.repeat(depth - 1)}${innermost}${']}'.repeat(depth - 1)}]}`;
      return encode(json);
    };
    assert.equal(SUITE_DEPTH_MAX, 32);
    assert.equal(parsePlaywright('r.json', nested(32)).cases[0]?.suite?.length, 32);
    assert.throws(() => parsePlaywright('r.json', nested(33)), /suites nest more than 32 levels deep/);
    // Far deeper than any stack: refused at the limit, never a stack overflow.
    assert.throws(() => parsePlaywright('r.json', nested(100_000)), /suites nest more than 32 levels deep/);
  });

  test('the shared rules: verdicts, kinds, innermost failed step, error formatting', () => {
    assert.deepEqual(['passed', 'failed', 'timedOut', 'interrupted', 'skipped'].map(verdictOf), [
      'passed',
      'failed',
      'failed',
      'broken',
      'skipped',
    ]);
    assert.equal(attachmentKind('screenshot', 'image/jpeg'), 'screenshot');
    assert.equal(attachmentKind('notes', 'text/markdown'), 'log');
    type S = { id: string; failed: boolean; children: S[] };
    const s = (id: string, failed: boolean, children: S[] = []): S => ({ id, failed, children });
    const steps = [s('a', true, [s('a1', true, [s('a1x', true)])]), s('b', true, [s('b1', true, [s('b1x', true)])]), s('c', true)];
    assert.equal(innermostFailed(steps, { children: (x) => x.children, failed: (x) => x.failed })?.id, 'b1x');
    assert.equal(innermostFailed([s('a', false)], { children: (x) => x.children, failed: (x) => x.failed }), undefined);
    assert.equal(
      formatError({ message: 'Error: boom', stack: 'Error: boom\n    at f (x.ts:1:2)', snippet: '> 1 | boom()', location: {} }),
      'Error: boom\n\n> 1 | boom()\n    at f (x.ts:1:2)',
    );
    assert.equal(formatError({ value: 'thrown 7' }), 'thrown 7');
  });
});
