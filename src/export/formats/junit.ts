import type { Step } from '../bundle.ts';
import { type ExportFile, elapsedMs, fileOf, imagesByStep, type RunPart, type StepNode, stepTree } from '../files.ts';
import { failureGroupOf, failureOf, type Report, type ReportTest } from '../report.ts';

/**
 * JUnit XML as TestRail's trcli, Jira Xray, ReportPortal and Jenkins import it, with Maven
 * Surefire's rerun elements: one `<testcase>` per test (a run export's one run; a job's runs of the
 * same test folded into one), grouped in one `<testsuite>` per suite path, which is the case's
 * `classname`. The final attempt decides: a failed verdict is a `<failure>` carrying the failure's
 * own message, a broken one an `<error>`, a skipped one `<skipped/>`; earlier failed attempts are
 * `<rerunFailure>`/`<rerunError>` when the final one failed too, `<flakyFailure>`/`<flakyError>`
 * when it passed. `<system-out>` holds the final attempt's steps, cells and files, then one
 * `[[ATTACHMENT|path]]` line per image and file of every attempt (the convention of Jenkins' JUnit
 * attachments, which trcli reads); the paths point into the export folder.
 */
export function junitFiles(report: Report): ExportFile[] {
  return [fileOf('junit.xml', 'application/xml', () => junitXml(report))];
}

/** Text as XML 1.0 allows it: the five specials escaped, characters XML cannot hold removed. */
export function xml(text: string): string {
  return text
    .replace(/[^\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

const seconds = (ms: number | undefined) => ((ms ?? 0) / 1000).toFixed(3);

const runDuration = (part: RunPart) => {
  const { run, results } = { run: part.answers.run, results: part.answers.results.value };
  return elapsedMs(run.startedAt, run.finishedAt) ?? results.steps.reduce((sum, s) => (s.parentId ? sum : sum + (s.durationMs ?? 0)), 0);
};

const countsAttributes = (tests: readonly ReportTest[], time: number) => {
  const verdicts = tests.map((test) => test.final.answers.run.verdict);
  const count = (verdict: string) => verdicts.filter((v) => v === verdict).length;
  return `tests="${tests.length}" failures="${count('failed')}" errors="${count('broken')}" skipped="${count('skipped')}" time="${seconds(time)}"`;
};

export function junitXml(report: Report): string {
  const properties = (
    [
      [report.kind === 'run' ? 'attest.runId' : 'attest.jobId', report.id],
      ['attest.projectId', report.projectId],
      ...(report.kind === 'run' ? [['attest.verdict', report.parts[0]?.answers.run.verdict ?? '']] : []),
      ['environment', report.labels.environment],
      ['branch', report.labels.branch],
      ['build', report.labels.build],
      ['commit', report.labels.commit],
      ['device', report.labels.device],
    ] as [string, string | null][]
  )
    .filter(([, value]) => value)
    .map(([name, value]) => `      <property name="${xml(name)}" value="${xml(String(value))}"/>`);
  const suites = new Map<string, ReportTest[]>();
  for (const test of report.tests) suites.set(test.classname, [...(suites.get(test.classname) ?? []), test]);
  const total = elapsedMs(report.startedAt, report.finishedAt) ?? report.tests.reduce((sum, test) => sum + runDuration(test.final), 0);
  const lines: string[] = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xml(report.name)}" ${countsAttributes(report.tests, total)}>`,
  ];
  for (const [suite, tests] of suites) {
    const time = tests.reduce((sum, test) => sum + runDuration(test.final), 0);
    const [first] = tests
      .map((test) => test.attempts[0]!.answers.run.startedAt)
      .filter((t): t is string => t !== null)
      .sort();
    const timestamp = first ? ` timestamp="${xml(first.replace(/Z$/, ''))}"` : '';
    const host = report.labels.device ? ` hostname="${xml(report.labels.device)}"` : '';
    lines.push(
      `  <testsuite name="${xml(suite)}" ${countsAttributes(tests, time)}${timestamp}${host}>`,
      '    <properties>',
      ...properties,
      '    </properties>',
    );
    for (const test of tests) lines.push(...testcase(test));
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>', '');
  return lines.join('\n');
}

/** Surefire's element for an earlier attempt: a rerun when the final attempt did not pass, flaky when it did. */
function earlierElement(final: string | null, earlier: string): string | undefined {
  if (earlier !== 'failed' && earlier !== 'broken') return undefined;
  const kind = earlier === 'failed' ? 'Failure' : 'Error';
  return final === 'passed' ? `flaky${kind}` : `rerun${kind}`;
}

function testcase(test: ReportTest): string[] {
  const final = test.final;
  const verdict = final.answers.run.verdict;
  const lines = [`    <testcase name="${xml(test.name)}" classname="${xml(test.classname)}" time="${seconds(runDuration(final))}">`];
  const failure = failureOf(final);
  // The failure's error group and its triage (docs/triage.md), as properties of the test case (Surefire 3, Jenkins, Xray read them).
  const group = failureGroupOf(final);
  if (group) {
    const properties = [
      ['attest.failureGroupId', group.id],
      ['attest.defectType', group.defectType],
      ['attest.category', group.category],
      ...(group.issueUrl ? [['attest.issueUrl', group.issueUrl]] : []),
    ];
    lines.push(
      '      <properties>',
      ...properties.map(([n, v]) => `        <property name="${xml(n as string)}" value="${xml(v as string)}"/>`),
      '      </properties>',
    );
  }
  const earlier = test.attempts.slice(0, -1).flatMap((part) => {
    const element = earlierElement(verdict, part.answers.run.verdict ?? '');
    const failed = failureOf(part);
    if (!element || !failed) return [];
    return [
      {
        element,
        text:
          `      <${element} message="${xml(failed.message)}" type="${xml(failed.type)}">` +
          `<stackTrace>${xml(failed.detail)}</stackTrace><system-out>${xml(account(part))}</system-out></${element}>`,
      },
    ];
  });
  const of = (element: string) => earlier.filter((e) => e.element === element).map((e) => e.text);
  // Surefire's order: failure, rerunFailure, flakyFailure, skipped, error, rerunError, flakyError, system-out.
  if (verdict === 'failed' && failure)
    lines.push(`      <failure message="${xml(failure.message)}" type="${xml(failure.type)}">${xml(failure.detail)}</failure>`);
  lines.push(...of('rerunFailure'), ...of('flakyFailure'));
  if (verdict === 'skipped') {
    const reason = skipReason(final);
    lines.push(reason ? `      <skipped message="${xml(reason)}"/>` : '      <skipped/>');
  }
  if (verdict === 'broken' && failure)
    lines.push(`      <error message="${xml(failure.message)}" type="${xml(failure.type)}">${xml(failure.detail)}</error>`);
  lines.push(...of('rerunError'), ...of('flakyError'));
  const attachments = test.attempts.flatMap((part) => [
    ...part.images.map((image) => `[[ATTACHMENT|${part.folder}${image.path}]]`),
    ...part.attachments.map((file) => `[[ATTACHMENT|${part.folder}${file.path}]]`),
  ]);
  const out = `${account(final)}${attachments.map((line) => `${line}\n`).join('')}`;
  lines.push(`      <system-out>${xml(out)}</system-out>`, '    </testcase>');
  return lines;
}

/** Why a run was skipped: its `skipped` cell, else the first skipped step's error. */
function skipReason(part: RunPart): string | undefined {
  const { cells, steps } = part.answers.results.value;
  const text = cells.find((c) => c.name === 'skipped')?.text ?? steps.find((s) => s.status === 'skipped' && s.error)?.error ?? undefined;
  return text?.split('\n')[0];
}

function stepLine(step: Step, number: number, depth: number): string {
  const duration = step.durationMs === null ? '' : ` (${step.durationMs} ms)`;
  return `${'  '.repeat(depth)}[${step.status}] ${number}. ${step.title}${duration}`;
}

function indented(text: string, depth: number): string {
  return text
    .split('\n')
    .map((line) => `${'  '.repeat(depth)}${line}`)
    .join('\n');
}

/** The readable account of a run: cells, then each step with its error, cells, screenshots and files. */
function account(part: RunPart): string {
  const results = part.answers.results.value;
  const images = imagesByStep(part.images);
  const files = new Map<string | null, string[]>();
  for (const file of part.attachments) files.set(file.stepId, [...(files.get(file.stepId) ?? []), file.path]);
  const out: string[] = [];
  for (const cell of results.cells) out.push(`${cell.name}:`, indented(cell.text, 1));
  for (const path of files.get(null) ?? []) out.push(`file: ${part.folder}${path}`);
  const visit = (node: StepNode) => {
    const { step, depth } = node;
    out.push(stepLine(step, node.number, depth));
    if (step.error) out.push(indented(`error: ${step.error}`, depth + 2));
    for (const cell of step.cells) out.push(indented(`${cell.name}:`, depth + 2), indented(cell.text, depth + 3));
    for (const image of images.get(step.id) ?? []) out.push(indented(`screenshot: ${part.folder}${image.path}`, depth + 2));
    for (const path of files.get(step.id) ?? []) out.push(indented(`file: ${part.folder}${path}`, depth + 2));
    node.children.forEach(visit);
  };
  stepTree(results.steps).forEach(visit);
  return out.length ? `${out.join('\n')}\n` : '';
}
