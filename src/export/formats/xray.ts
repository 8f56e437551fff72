import type { ImageEntry, Step } from '../bundle.ts';
import { type Chunk, type ExportFile, type ExportInput, failingStep, imagesByStep } from '../files.ts';

/**
 * Xray JSON, the format of Xray's "import execution results" endpoint: the run is one test with
 * its steps (all of them, nested ones flattened in results order, as Xray steps are a list), each
 * step's `actualResult` from its text cells, and the screenshots as `evidence` (base64 with file
 * names) on their step, the run's own on the test. Written as a stream: one image at a time is in
 * memory, whatever the run holds.
 */
export function xrayFiles(input: ExportInput): ExportFile[] {
  return [{ path: 'xray.json', type: 'application/json', chunks: () => xrayJson(input) }];
}

const STATUS: Record<string, string> = {
  passed: 'PASSED',
  failed: 'FAILED',
  broken: 'FAILED',
  skipped: 'TODO',
  running: 'EXECUTING',
};

const cellsText = (cells: Step['cells']) => cells.map((cell) => `${cell.name}:\n${cell.text}`).join('\n\n');

async function evidence(input: ExportInput, images: readonly ImageEntry[]): Promise<string> {
  const parts: string[] = [];
  for (const image of images) {
    const data = Buffer.from(await input.bytes(image)).toString('base64');
    parts.push(JSON.stringify({ data, filename: image.path.split('/').slice(-2).join('_'), contentType: image.contentType }));
  }
  return `[${parts.join(',')}]`;
}

export async function* xrayJson(input: ExportInput): AsyncIterable<Chunk> {
  const { run } = input.answers;
  const results = input.answers.results.value;
  const images = imagesByStep(input.images);
  const labels = [run.environment, run.branch, run.build].filter((label): label is string => label !== null);
  const info = {
    summary: run.name,
    description: `Exported from Attest: run ${run.id}, verdict ${run.verdict ?? 'none'}.`,
    ...(input.xrayProject ? { project: input.xrayProject } : {}),
    ...(run.startedAt ? { startDate: run.startedAt } : {}),
    ...(run.finishedAt ? { finishDate: run.finishedAt } : {}),
    ...(run.commit ? { revision: run.commit } : {}),
    ...(run.environment ? { testEnvironments: [run.environment] } : {}),
  };
  const testInfo = {
    summary: run.name,
    type: 'Manual',
    ...(input.xrayProject ? { projectKey: input.xrayProject } : {}),
    ...(labels.length ? { labels: labels.map((label) => label.replace(/\s+/g, '_')) } : {}),
    steps: results.steps.map((step) => ({ action: step.title, data: '', result: expectedOf(step) })),
  };
  const failed = failingStep(results.steps);
  const head = {
    testInfo,
    ...(run.startedAt ? { start: run.startedAt } : {}),
    ...(run.finishedAt ? { finish: run.finishedAt } : {}),
    status: STATUS[run.verdict ?? 'running'] ?? 'TODO',
    comment: [
      cellsText(results.cells),
      failed ? `Failed at step ${results.steps.indexOf(failed) + 1}: ${failed.title}\n${failed.error ?? ''}` : '',
    ]
      .filter(Boolean)
      .join('\n\n'),
  };
  yield `{"info":${JSON.stringify(info)},"tests":[${JSON.stringify(head).slice(0, -1)}`;
  yield `,"evidence":${await evidence(input, images.get(null) ?? [])},"steps":[`;
  for (const [index, step] of results.steps.entries()) {
    const fields = {
      status: STATUS[step.status] ?? 'TODO',
      actualResult: cellsText(step.cells.filter((cell) => cell.name.toLowerCase() !== 'expected')),
      ...(step.error ? { comment: step.error } : {}),
    };
    yield `${index ? ',' : ''}${JSON.stringify(fields).slice(0, -1)},"evidence":${await evidence(input, images.get(step.id) ?? [])}}`;
  }
  yield ']}]}\n';
}

/** What the step expected, when a cell says it. */
function expectedOf(step: Step): string {
  return step.cells.find((cell) => cell.name.toLowerCase() === 'expected')?.text ?? '';
}
