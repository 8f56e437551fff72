import { createHash } from 'node:crypto';
import type { ImageEntry, Step } from '../bundle.ts';
import { type ExportFile, type ExportInput, elapsedMs, failingStep, fileOf, imagesByStep, type StepNode, stepTree } from '../files.ts';

/**
 * An Allure 2 results folder (`allure-results/`), as Allure's own adapters write it: one
 * `<uuid>-result.json` for the run with its steps nested as `steps`, each step's screenshots and
 * text cells as its `attachments` (files `<uuid>-attachment.<ext>` beside it), and an
 * `environment.properties` with the run labels. `allure generate` renders it.
 */
export function allureFiles(input: ExportInput): ExportFile[] {
  const { run } = input.answers;
  const results = input.answers.results.value;
  const byStep = imagesByStep(input.images);
  const files: ExportFile[] = [];
  const uuid = uuidFrom(`run:${run.id}`);
  const attachmentName = (key: string, extension: string) => `${uuidFrom(`${run.id}:${key}`)}-attachment.${extension}`;

  const imageAttachments = (images: readonly ImageEntry[]) =>
    images.map((image) => {
      const source = attachmentName(`image:${image.path}`, image.path.split('.').pop() ?? 'png');
      files.push(fileOf(`allure-results/${source}`, image.contentType, () => input.bytes(image)));
      const role = image.role === 'screenshot' ? '' : ` (${image.role})`;
      return { name: `${image.artifactName}${role}`, source, type: image.contentType };
    });
  const cellAttachments = (cells: Step['cells']) =>
    cells.map((cell) => {
      const extension = cell.mediaType === 'text/markdown' ? 'md' : 'txt';
      const source = attachmentName(`cell:${cell.id}`, extension);
      files.push(fileOf(`allure-results/${source}`, cell.mediaType, () => cell.text));
      return { name: cell.name, source, type: cell.mediaType };
    });

  const runStart = run.startedAt ? Date.parse(run.startedAt) : Date.parse(run.createdAt);
  const toStep = (node: StepNode): Record<string, unknown> => {
    const { step } = node;
    const start = step.startedAt ? Date.parse(step.startedAt) : runStart;
    return {
      name: step.title,
      status: STATUS[step.status],
      ...(step.error ? { statusDetails: { message: step.error.split('\n')[0], trace: step.error } } : {}),
      stage: 'finished',
      start,
      stop: start + (step.durationMs ?? 0),
      steps: node.children.map(toStep),
      attachments: [...cellAttachments(step.cells), ...imageAttachments(byStep.get(step.id) ?? [])],
      parameters: [],
    };
  };

  const failed = failingStep(results.steps);
  const stop = run.finishedAt ? Date.parse(run.finishedAt) : runStart + (elapsedMs(run.startedAt, run.finishedAt) ?? 0);
  const result = {
    uuid,
    historyId: createHash('md5')
      .update(`${run.projectId}:${run.testId ?? run.name}`)
      .digest('hex'),
    ...(run.testId ? { testCaseId: run.testId } : {}),
    name: run.name,
    fullName: `${run.projectId}: ${run.name}`,
    status: run.verdict === null ? 'unknown' : STATUS[run.verdict],
    ...(failed?.error ? { statusDetails: { message: failed.error.split('\n')[0], trace: `${failed.title}\n${failed.error}` } } : {}),
    stage: 'finished',
    start: runStart,
    stop,
    steps: stepTree(results.steps).map(toStep),
    attachments: [...cellAttachments(results.cells), ...imageAttachments(byStep.get(null) ?? [])],
    parameters: [],
    labels: [
      { name: 'framework', value: 'attest' },
      { name: 'suite', value: run.projectId },
      ...(run.deviceId ? [{ name: 'host', value: run.deviceId }] : []),
      ...(run.environment ? [{ name: 'tag', value: run.environment }] : []),
    ],
    links: [],
  };
  files.unshift(fileOf(`allure-results/${uuid}-result.json`, 'application/json', () => `${JSON.stringify(result, null, 2)}\n`));
  const environment = (['environment', 'branch', 'build', 'commit', 'deviceId'] as const)
    .filter((name) => run[name])
    .map((name) => `${name}=${String(run[name]).replace(/[\\\n\r]/g, ' ')}`);
  if (environment.length) files.push(fileOf('allure-results/environment.properties', 'text/plain', () => `${environment.join('\n')}\n`));
  return files;
}

const STATUS: Record<string, string> = { passed: 'passed', failed: 'failed', broken: 'broken', skipped: 'skipped', running: 'unknown' };

/** A stable UUID (v4 layout) from a name, so exporting the same run twice writes the same files. */
function uuidFrom(name: string): string {
  const hex = createHash('sha256').update(name).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${((Number.parseInt(hex[16]!, 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
