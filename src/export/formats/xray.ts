import type { AttachmentEntry, ImageEntry, Step } from '../bundle.ts';
import { type Chunk, type ExportFile, failingStep, imagesByStep, type RunPart } from '../files.ts';
import { DEFECT_TYPE_NAMES, failureGroupOf, failureOf, type Report, type ReportTest } from '../report.ts';

/**
 * Xray JSON, the format of Xray's "import execution results" endpoint: one Xray test per test of
 * the report (a job's retries folded; the final attempt decides). An automated test (a test
 * without steps of its own, as imports and reporters create them) is a `Generic` test whose
 * `definition` is its full name, so a later import finds and updates the same Jira test instead
 * of creating another; its evidence is every image and file of the final attempt. Any other run
 * is a `Manual` test with all its steps (nested ones flattened in results order, as Xray steps are
 * a list), each step's `actualResult` from its text cells and its screenshots as `evidence`.
 * Written as a stream: one image at a time is in memory, whatever the export holds. A failure's
 * error group (docs/triage.md) goes with it: its issue as the test's `defects` (the Jira key its
 * link ends in) and its defect type, issue link and comment at the head of the `comment`.
 */
export function xrayFiles(report: Report): ExportFile[] {
  return [{ path: 'xray.json', type: 'application/json', chunks: () => xrayJson(report) }];
}

const STATUS: Record<string, string> = {
  passed: 'PASSED',
  failed: 'FAILED',
  broken: 'FAILED',
  skipped: 'TODO',
  running: 'EXECUTING',
};

/** What the failure's error group says, for the test: its defects and the lines that head its comment. */
function triageOf(part: RunPart): { defects?: string[]; lines: string } {
  const group = failureGroupOf(part);
  if (!group) return { lines: '' };
  const key = group.issueUrl === null ? undefined : /([A-Z][A-Z0-9_]+-\d+)\/?(?:[?#].*)?$/.exec(group.issueUrl)?.[1];
  const lines = [
    `Defect type: ${DEFECT_TYPE_NAMES[group.defectType]}${group.rule ? ` (${group.rule})` : ''}`,
    group.issueUrl ? `Issue: ${group.issueUrl}` : '',
    group.comment ? `Triage: ${group.comment}` : '',
  ];
  return { ...(key ? { defects: [key] } : {}), lines: lines.filter(Boolean).join('\n') };
}

const cellsText = (cells: Step['cells']) => cells.map((cell) => `${cell.name}:\n${cell.text}`).join('\n\n');

async function evidence(
  report: Report,
  part: RunPart,
  images: readonly ImageEntry[],
  files: readonly AttachmentEntry[] = [],
): Promise<string> {
  const items: string[] = [];
  for (const image of images) {
    const data = Buffer.from(await report.bytes(image, part.folder)).toString('base64');
    items.push(JSON.stringify({ data, filename: image.path.split('/').slice(-2).join('_'), contentType: image.contentType }));
  }
  for (const file of files) {
    const data = Buffer.from(await report.attachmentBytes(file, part.folder)).toString('base64');
    items.push(JSON.stringify({ data, filename: file.path.split('/').slice(-2).join('_'), contentType: file.contentType }));
  }
  return `[${items.join(',')}]`;
}

/** Whether a test is automated: it has a test definition without steps (what imports and reporters create). */
const isGeneric = (test: ReportTest) => test.test !== null && test.test.steps.length === 0;

export async function* xrayJson(report: Report): AsyncIterable<Chunk> {
  const { labels } = report;
  const info = {
    summary: report.name,
    description: `Exported from Attest: ${report.kind} ${report.id}.`,
    ...(report.xrayProject ? { project: report.xrayProject } : {}),
    ...(report.startedAt ? { startDate: report.startedAt } : {}),
    ...(report.finishedAt ? { finishDate: report.finishedAt } : {}),
    ...(labels.commit ? { revision: labels.commit } : {}),
    ...(labels.environment ? { testEnvironments: [labels.environment] } : {}),
  };
  yield `{"info":${JSON.stringify(info)},"tests":[`;
  for (const [index, test] of report.tests.entries()) {
    if (index) yield ',';
    yield* isGeneric(test) ? genericTest(report, test) : manualTest(report, test);
  }
  yield ']}\n';
}

function labelsOf(part: RunPart) {
  const { run } = part.answers;
  const labels = [run.environment, run.branch, run.build].filter((label): label is string => label !== null);
  return labels.length ? { labels: labels.map((label) => label.replace(/\s+/g, '_')) } : {};
}

/** What the earlier attempts of a test did, for the comment: Xray keeps one result per test. */
function attemptsText(test: ReportTest): string {
  if (test.attempts.length < 2) return '';
  const lines = test.attempts.map((part, i) => {
    const failure = failureOf(part);
    return `Attempt ${i + 1}: ${part.answers.run.verdict ?? 'no verdict'}${failure ? ` (${failure.message})` : ''}`;
  });
  return `${test.attempts.length} attempts; the last one decides.\n${lines.join('\n')}`;
}

const times = (part: RunPart) => ({
  ...(part.answers.run.startedAt ? { start: part.answers.run.startedAt } : {}),
  ...(part.answers.run.finishedAt ? { finish: part.answers.run.finishedAt } : {}),
});

async function* genericTest(report: Report, test: ReportTest): AsyncIterable<Chunk> {
  const part = test.final;
  const failure = failureOf(part);
  const triage = triageOf(part);
  const head = {
    testInfo: {
      summary: test.name,
      type: 'Generic',
      ...(report.xrayProject ? { projectKey: report.xrayProject } : {}),
      ...labelsOf(part),
      definition: test.fullName,
    },
    ...times(part),
    status: STATUS[part.answers.run.verdict ?? 'running'] ?? 'TODO',
    comment: [triage.lines, failure?.detail ?? '', attemptsText(test)].filter(Boolean).join('\n\n'),
    ...(triage.defects ? { defects: triage.defects } : {}),
  };
  yield `${JSON.stringify(head).slice(0, -1)},"evidence":${await evidence(report, part, part.images, part.attachments)}}`;
}

async function* manualTest(report: Report, test: ReportTest): AsyncIterable<Chunk> {
  const part = test.final;
  const { run } = part.answers;
  const results = part.answers.results.value;
  const images = imagesByStep(part.images);
  const testInfo = {
    summary: test.name,
    type: 'Manual',
    ...(report.xrayProject ? { projectKey: report.xrayProject } : {}),
    ...labelsOf(part),
    steps: results.steps.map((step) => ({ action: step.title, data: '', result: expectedOf(step) })),
  };
  const failed = failingStep(results.steps);
  const triage = triageOf(part);
  const head = {
    testInfo,
    ...times(part),
    status: STATUS[run.verdict ?? 'running'] ?? 'TODO',
    comment: [
      triage.lines,
      cellsText(results.cells),
      failed ? `Failed at step ${results.steps.indexOf(failed) + 1}: ${failed.title}\n${failed.error ?? ''}` : '',
      attemptsText(test),
    ]
      .filter(Boolean)
      .join('\n\n'),
    ...(triage.defects ? { defects: triage.defects } : {}),
  };
  yield `${JSON.stringify(head).slice(0, -1)},"evidence":${await evidence(report, part, images.get(null) ?? [])},"steps":[`;
  for (const [index, step] of results.steps.entries()) {
    const fields = {
      status: STATUS[step.status] ?? 'TODO',
      actualResult: cellsText(step.cells.filter((cell) => cell.name.toLowerCase() !== 'expected')),
      ...(step.error ? { comment: step.error } : {}),
    };
    yield `${index ? ',' : ''}${JSON.stringify(fields).slice(0, -1)},"evidence":${await evidence(report, part, images.get(step.id) ?? [])}}`;
  }
  yield ']}';
}

/** What the step expected, when a cell says it. */
function expectedOf(step: Step): string {
  return step.cells.find((cell) => cell.name.toLowerCase() === 'expected')?.text ?? '';
}
