import type { Step } from '../bundle.ts';
import { type ExportFile, type ExportInput, elapsedMs, failingStep, fileOf, imagesByStep, type StepNode, stepTree } from '../files.ts';

/**
 * JUnit XML as TestRail's trcli, Jira Xray and ReportPortal import it: one `<testsuite>` holding
 * one `<testcase>` for the run; the steps with their text cells and the screenshots as
 * `[[ATTACHMENT|path]]` lines (the convention of Jenkins' JUnit attachments, which trcli reads) in
 * `<system-out>`; a failed verdict is a `<failure>` carrying the failed step's error, a broken one
 * an `<error>`, a skipped one `<skipped/>`. The attachment paths point into the export folder.
 */
export function junitFiles(input: ExportInput): ExportFile[] {
  return [fileOf('junit.xml', 'application/xml', () => junitXml(input))];
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

export function junitXml(input: ExportInput): string {
  const { run, results } = { run: input.answers.run, results: input.answers.results.value };
  const duration =
    elapsedMs(run.startedAt, run.finishedAt) ?? results.steps.reduce((sum, s) => (s.parentId ? sum : sum + (s.durationMs ?? 0)), 0);
  const failures = run.verdict === 'failed' ? 1 : 0;
  const errors = run.verdict === 'broken' ? 1 : 0;
  const skipped = run.verdict === 'skipped' ? 1 : 0;
  const counts = `tests="1" failures="${failures}" errors="${errors}" skipped="${skipped}" time="${seconds(duration)}"`;
  const properties = (
    [
      ['attest.runId', run.id],
      ['attest.projectId', run.projectId],
      ['attest.verdict', run.verdict ?? ''],
      ['environment', run.environment],
      ['branch', run.branch],
      ['build', run.build],
      ['commit', run.commit],
      ['device', run.deviceId],
    ] as const
  )
    .filter(([, value]) => value)
    .map(([name, value]) => `      <property name="${xml(name)}" value="${xml(String(value))}"/>`);
  const failed = failingStep(results.steps);
  const lines: string[] = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xml(run.name)}" ${counts}>`,
    `  <testsuite name="${xml(run.name)}" ${counts}${run.startedAt ? ` timestamp="${xml(run.startedAt.replace(/Z$/, ''))}"` : ''}${run.deviceId ? ` hostname="${xml(run.deviceId)}"` : ''}>`,
    '    <properties>',
    ...properties,
    '    </properties>',
    `    <testcase name="${xml(run.name)}" classname="${xml(`attest.${run.projectId}`)}" time="${seconds(duration)}">`,
  ];
  if (run.verdict === 'failed' || run.verdict === 'broken') {
    const element = run.verdict === 'failed' ? 'failure' : 'error';
    const message = failed?.error?.split('\n')[0] ?? `The run ended ${run.verdict}.`;
    const body = failed ? `Step ${results.steps.indexOf(failed) + 1}: ${failed.title}\n${failed.error ?? ''}` : message;
    lines.push(`      <${element} message="${xml(message)}" type="${xml(failed?.title ?? run.verdict)}">${xml(body)}</${element}>`);
  } else if (run.verdict === 'skipped') {
    lines.push('      <skipped/>');
  }
  lines.push(`      <system-out>${xml(systemOut(input))}</system-out>`, '    </testcase>', '  </testsuite>', '</testsuites>', '');
  return lines.join('\n');
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

/** The readable account of the run: cells, then each step with its error, cells and screenshots. */
function systemOut(input: ExportInput): string {
  const results = input.answers.results.value;
  const images = imagesByStep(input.images);
  const out: string[] = [];
  for (const cell of results.cells) out.push(`${cell.name}:`, indented(cell.text, 1));
  const visit = (node: StepNode) => {
    const { step, depth } = node;
    out.push(stepLine(step, node.number, depth));
    if (step.error) out.push(indented(`error: ${step.error}`, depth + 2));
    for (const cell of step.cells) out.push(indented(`${cell.name}:`, depth + 2), indented(cell.text, depth + 3));
    for (const image of images.get(step.id) ?? []) out.push(indented(`screenshot: ${image.path}`, depth + 2));
    node.children.forEach(visit);
  };
  stepTree(results.steps).forEach(visit);
  // One attachment line per image, after the account, as the attachments convention reads them.
  for (const image of input.images) out.push(`[[ATTACHMENT|${image.path}]]`);
  return `${out.join('\n')}\n`;
}
