import { createHash } from 'node:crypto';
import type { AttachmentEntry, ImageEntry, Step } from '../bundle.ts';
import { type ExportFile, elapsedMs, fileOf, imagesByStep, type RunPart, type StepNode, stepTree } from '../files.ts';
import { DEFECT_TYPE_NAMES, failureGroupOf, failureOf, type Report, type ReportTest } from '../report.ts';

/**
 * An Allure 2 results folder (`allure-results/`), as Allure's own adapters write it: one
 * `<uuid>-result.json` per run with its steps nested as `steps`, each step's screenshots, files and
 * text cells as its `attachments` (files `<uuid>-attachment.<ext>` beside it), and an
 * `environment.properties` with the labels. The attempts of one test share its `historyId` (from
 * its full name), so Allure shows the earlier ones as retries of the latest and marks a test that
 * passed on a retry as flaky. `allure generate` renders it. A failure's error group (docs/triage.md)
 * goes with it: its issue link as the result's `issue` link, a triaged group's failure marked
 * `known`, and a `categories.json` that files each failure under its group's defect type and rule.
 */
export function allureFiles(report: Report): ExportFile[] {
  const files: ExportFile[] = [];
  for (const test of report.tests) for (const part of test.attempts) files.push(...resultFiles(report, test, part));
  const categories = categoriesOf(report);
  if (categories.length)
    files.push(fileOf('allure-results/categories.json', 'application/json', () => `${JSON.stringify(categories, null, 2)}\n`));
  const labels = report.labels;
  const environment = (
    [
      ['environment', labels.environment],
      ['branch', labels.branch],
      ['build', labels.build],
      ['commit', labels.commit],
      ['deviceId', labels.device],
    ] as const
  )
    .filter(([, value]) => value)
    .map(([name, value]) => `${name}=${String(value).replace(/[\\\n\r]/g, ' ')}`);
  if (environment.length) files.push(fileOf('allure-results/environment.properties', 'text/plain', () => `${environment.join('\n')}\n`));
  return files;
}

/** A step's (or, for null, the run's) attachments: its cells, images and files, each a file beside the result. */
type Attach = (stepId: string | null, cells: Step['cells']) => { name: string; source: string; type: string }[];

/** Adds a run's attachments to `files` as they are referenced, named by the run and what they are. */
function attacher(report: Report, part: RunPart, files: ExportFile[]): Attach {
  const { run } = part.answers;
  const byStep = imagesByStep(part.images);
  const filesByStep = new Map<string | null, AttachmentEntry[]>();
  for (const file of part.attachments) filesByStep.set(file.stepId, [...(filesByStep.get(file.stepId) ?? []), file]);
  const attachmentName = (key: string, extension: string) => `${uuidFrom(`${run.id}:${key}`)}-attachment.${extension}`;

  const imageAttachments = (images: readonly ImageEntry[]) =>
    images.map((image) => {
      const source = attachmentName(`image:${image.path}`, image.path.split('.').pop() ?? 'png');
      files.push(fileOf(`allure-results/${source}`, image.contentType, () => report.bytes(image, part.folder)));
      const role = image.role === 'screenshot' ? '' : ` (${image.role})`;
      return { name: `${image.artifactName}${role}`, source, type: image.contentType };
    });
  const fileAttachments = (entries: readonly AttachmentEntry[]) =>
    entries.map((file) => {
      const source = attachmentName(`file:${file.path}`, file.path.split('.').pop() ?? 'bin');
      files.push(fileOf(`allure-results/${source}`, file.contentType, () => report.attachmentBytes(file, part.folder)));
      return { name: file.name, source, type: file.contentType };
    });
  const cellAttachments = (cells: Step['cells']) =>
    cells.map((cell) => {
      const extension = cell.mediaType === 'text/markdown' ? 'md' : 'txt';
      const source = attachmentName(`cell:${cell.id}`, extension);
      files.push(fileOf(`allure-results/${source}`, cell.mediaType, () => cell.text));
      return { name: cell.name, source, type: cell.mediaType };
    });
  return (stepId, cells) => [
    ...cellAttachments(cells),
    ...imageAttachments(byStep.get(stepId) ?? []),
    ...fileAttachments(filesByStep.get(stepId) ?? []),
  ];
}

/** A step as Allure nests it, with its children and attachments. */
function allureStep(node: StepNode, runStart: number, attach: Attach): Record<string, unknown> {
  const { step } = node;
  const start = step.startedAt ? Date.parse(step.startedAt) : runStart;
  return {
    name: step.title,
    status: STATUS[step.status],
    ...(step.error ? { statusDetails: { message: step.error.split('\n')[0], trace: step.error } } : {}),
    stage: 'finished',
    start,
    stop: start + (step.durationMs ?? 0),
    steps: node.children.map((child) => allureStep(child, runStart, attach)),
    attachments: attach(step.id, step.cells),
    parameters: [],
  };
}

/** One run's `…-result.json`. */
function allureResult(test: ReportTest, part: RunPart, uuid: string, attach: Attach): Record<string, unknown> {
  const { run } = part.answers;
  const results = part.answers.results.value;
  const runStart = run.startedAt ? Date.parse(run.startedAt) : Date.parse(run.createdAt);
  const failure = failureOf(part);
  const group = failureGroupOf(part);
  const stop = run.finishedAt ? Date.parse(run.finishedAt) : runStart + (elapsedMs(run.startedAt, run.finishedAt) ?? 0);
  // Attempts of one test share it; a run without a test is a test of its own.
  const historyId = createHash('md5')
    .update(`${run.projectId}:${run.testId ? test.fullName : test.key}`)
    .digest('hex');
  return {
    uuid,
    historyId,
    testCaseId: run.testId ?? historyId,
    name: test.name,
    fullName: test.fullName,
    status: run.verdict === null ? 'unknown' : STATUS[run.verdict],
    ...(failure
      ? {
          statusDetails: {
            message: failure.message,
            trace: failure.detail,
            ...(group && group.defectType !== 'to_investigate' ? { known: true } : {}),
          },
        }
      : {}),
    // Passed after a failed attempt: Allure reads a known-flaky test from its status details.
    ...(run.verdict === 'passed' && part === test.final && test.attempts.some(failed) ? { statusDetails: { flaky: true } } : {}),
    stage: 'finished',
    start: runStart,
    stop,
    steps: stepTree(results.steps).map((node) => allureStep(node, runStart, attach)),
    attachments: attach(null, results.cells),
    parameters: [],
    labels: [
      { name: 'framework', value: 'attest' },
      { name: 'suite', value: test.classname },
      ...(run.deviceId ? [{ name: 'host', value: run.deviceId }] : []),
      ...(run.environment ? [{ name: 'tag', value: run.environment }] : []),
      ...(group ? [{ name: 'defectType', value: group.defectType }] : []),
    ],
    links: group?.issueUrl ? [{ type: 'issue', name: issueName(group.issueUrl), url: group.issueUrl }] : [],
  };
}

/** A run's result file, first, then its attachments' files. */
function resultFiles(report: Report, test: ReportTest, part: RunPart): ExportFile[] {
  const files: ExportFile[] = [];
  const uuid = uuidFrom(`run:${part.answers.run.id}`);
  const result = allureResult(test, part, uuid, attacher(report, part, files));
  files.unshift(fileOf(`allure-results/${uuid}-result.json`, 'application/json', () => `${JSON.stringify(result, null, 2)}\n`));
  return files;
}

/** An issue link's name: its tracker key (`SHOP-12`) when the URL ends in one, else the URL. */
function issueName(url: string): string {
  return /([A-Z][A-Z0-9_]+-\d+)\/?(?:[?#].*)?$/.exec(url)?.[1] ?? url;
}

/** A regex (Java's syntax, as Allure reads it) matching exactly `text`. */
const literal = (text: string) => text.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');

/**
 * Allure's `categories.json`: one category per error group that a failed result falls into, named
 * by its defect type and its rule (or its title), matching those results' messages exactly, so the
 * Categories tab shows the triage Attest holds.
 */
function categoriesOf(report: Report): Record<string, unknown>[] {
  const byGroup = new Map<string, { name: string; messages: Set<string>; statuses: Set<string> }>();
  for (const test of report.tests) {
    for (const part of test.attempts) {
      const group = failureGroupOf(part);
      const failure = failureOf(part);
      if (!group || !failure) continue;
      // Groups of one defect type and rule share a category.
      const name = `${DEFECT_TYPE_NAMES[group.defectType]}: ${group.rule ?? group.title.split('\n')[0]}`;
      let entry = byGroup.get(name);
      if (!entry) {
        entry = { name, messages: new Set(), statuses: new Set() };
        byGroup.set(name, entry);
      }
      entry.messages.add(failure.message);
      entry.statuses.add(part.answers.run.verdict as string);
    }
  }
  return [...byGroup.values()].map((entry) => ({
    name: entry.name,
    messageRegex: [...entry.messages].map(literal).join('|'),
    matchedStatuses: [...entry.statuses].sort(),
  }));
}

const failed = (part: RunPart) => part.answers.run.verdict === 'failed' || part.answers.run.verdict === 'broken';

const STATUS: Record<string, string> = { passed: 'passed', failed: 'failed', broken: 'broken', skipped: 'skipped', running: 'unknown' };

/** A stable UUID (v4 layout) from a name, so exporting the same run twice writes the same files. */
function uuidFrom(name: string): string {
  const hex = createHash('sha256').update(name).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${((Number.parseInt(hex[16]!, 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
