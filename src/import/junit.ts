/**
 * JUnit XML → ImportedReport. Reads the dialects real tools write (Ant/Surefire/Gradle, pytest,
 * jest-junit, mocha-junit-reporter, vitest, node's test runner, go-junit-report, Jenkins' xunit
 * and attachment conventions): a `<testsuites>` or bare `<testsuite>` root, suites nested in
 * suites, one ImportedCase per `<testcase>`. test/fixtures/junit/README.md lists the samples.
 *
 * Suite-level decisions, kept simple on purpose:
 * - suite properties (and `hostname`) become labels of every case inside, inner suites and the
 *   case's own properties overriding;
 * - a suite's own `<system-out>`/`<system-err>` becomes the run-level cells `suite stdout` /
 *   `suite stderr` of the first case inside it (in document order), not of every case; a suite
 *   with output but no case is reported in `warnings`;
 * - a case's `startedAt` is its suite's timestamp plus the times of the cases before it in that
 *   suite (nested suites without a timestamp continue their parent's clock): an approximation,
 *   since JUnit records no per-case start.
 */

import { buildCase, type CaseContext, readProperties, rerunAttempts, UNNAMED } from './junit-case.ts';
import { cell, cleanOutput, normaliseTimestamp } from './junit-values.ts';
import { readJUnitDocument, readJUnitXml, type XmlElement } from './junit-xml.ts';
import { type ImportedCase, type ImportedCell, type ImportedReport, ImportInputError, SUITE_DEPTH_MAX } from './model.ts';

export { looksLikeJUnit } from './junit-xml.ts';

interface SuiteScope {
  suites: string[];
  labels: Record<string, string>;
  clock?: { ms: number };
}

/** Output a suite carries, waiting for the first case inside it. */
interface PendingOutput {
  path: string;
  cells: ImportedCell[];
  claimed: boolean;
}

interface Walk {
  file: string;
  cases: ImportedCase[];
  warnings: string[];
  earliest?: string;
  pending: PendingOutput[];
}

export function parseJUnit(file: string, bytes: Uint8Array): ImportedReport {
  return reportOf(file, readJUnitXml(file, bytes));
}

/** A decoded report read, its text taken out of `document` (as `readJUnitDocument` does). */
export function parseJUnitDocument(file: string, document: { text?: string }): ImportedReport {
  return reportOf(file, readJUnitDocument(file, document));
}

function reportOf(file: string, root: XmlElement): ImportedReport {
  const walk: Walk = { file, cases: [], warnings: [], pending: [] };
  const top: SuiteScope = { suites: [], labels: {} };
  if (root.name === 'testsuite') walkSuite(root, top, walk);
  else walkChildren(root, top, walk);
  if (walk.cases.length === 0) walk.warnings.push('the report has no testcase');
  numberAttempts(walk.cases);
  return {
    format: 'junit',
    file,
    name: root.name === 'testsuites' ? root.attrs.get('name')?.trim() || undefined : undefined,
    startedAt: walk.earliest,
    cases: walk.cases,
    warnings: walk.warnings,
  };
}

/**
 * A test case repeated in one report is a rerun of it (Gradle's test-retry, a runner that reruns
 * failures and appends them): its repetitions are attempts 1, 2, … in report order, so the last one
 * decides the test's verdict in the job (TRIAGE-5) rather than whichever the database lists first.
 */
function numberAttempts(cases: ImportedCase[]): void {
  const seen = new Map<string, number>();
  for (const testCase of cases) {
    const before = seen.get(testCase.fullName) ?? 0;
    testCase.attempt = before;
    seen.set(testCase.fullName, before + 1);
  }
}

/** Put in place of an element once read: a large report's tree goes as its cases are made. */
const READ: XmlElement = { name: '', attrs: new Map(), children: [], text: '' };

function walkChildren(el: XmlElement, scope: SuiteScope, walk: Walk): void {
  const { children } = el;
  for (let at = 0; at < children.length; at++) {
    const child = children[at] as XmlElement;
    if (child.name === 'testsuite') walkSuite(child, scope, walk);
    else if (child.name === 'testcase') addCase(child, scope, walk);
    else continue;
    children[at] = READ;
  }
}

function walkSuite(el: XmlElement, parent: SuiteScope, walk: Walk): void {
  if (parent.suites.length >= SUITE_DEPTH_MAX) {
    throw new ImportInputError(walk.file, `nests <testsuite> elements more than ${SUITE_DEPTH_MAX} deep`);
  }
  const timestamp = normaliseTimestamp(el.attrs.get('timestamp'));
  if (timestamp && (!walk.earliest || timestamp < walk.earliest)) walk.earliest = timestamp;
  const hostname = el.attrs.get('hostname')?.trim();
  const scope: SuiteScope = {
    suites: [...parent.suites, el.attrs.get('name')?.trim() || UNNAMED],
    labels: { ...parent.labels, ...(hostname ? { hostname } : {}), ...readProperties(el).labels },
    clock: timestamp ? { ms: Date.parse(timestamp) } : parent.clock,
  };
  const output: PendingOutput = { path: scope.suites.join(' › '), cells: suiteOutput(el), claimed: false };
  walk.pending.push(output);
  walkChildren(el, scope, walk);
  walk.pending.pop();
  if (output.cells.length > 0 && !output.claimed) {
    walk.warnings.push(`suite "${output.path}" has output but no testcase to keep it with; it was not imported`);
  }
}

function suiteOutput(el: XmlElement): ImportedCell[] {
  const text = (tag: string) =>
    el.children
      .filter((child) => child.name === tag)
      .map((child) => cleanOutput(child.text))
      .filter(Boolean)
      .join('\n');
  return [...cell('suite stdout', text('system-out')), ...cell('suite stderr', text('system-err'))];
}

function addCase(el: XmlElement, scope: SuiteScope, walk: Walk): void {
  const context: CaseContext = { ...scope, runCells: claimPendingOutput(walk) };
  // Surefire's reruns (TRIAGE-11): each `<flakyFailure>`/`<rerunFailure>` was an attempt of its own that failed.
  walk.cases.push(...rerunAttempts(el, context), buildCase(el, context));
}

/** The output of every enclosing suite not yet given to a case (outermost first). */
function claimPendingOutput(walk: Walk): ImportedCell[] {
  const cells: ImportedCell[] = [];
  for (const output of walk.pending) {
    if (output.claimed) continue;
    output.claimed = true;
    cells.push(...output.cells);
  }
  return cells;
}
