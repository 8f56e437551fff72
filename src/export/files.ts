import { detailsFile, type ImageEntry, manifestOf, type RunAnswers, type Step } from './bundle.ts';

export type Chunk = string | Uint8Array;

/** One file an export writes: a path relative to the export folder, and its content as chunks. */
export interface ExportFile {
  path: string;
  /** A media type for a download of this file alone. */
  type: string;
  chunks(): AsyncIterable<Chunk>;
}

/** The bytes of one image, wherever they are: a downloaded file (the CLI) or the image route (the server). */
export type ImageBytes = (image: ImageEntry) => Promise<Uint8Array>;

/** Everything a writer needs: the sequence's answers, the image plan, and a way to read an image. */
export interface ExportInput {
  answers: RunAnswers;
  images: ImageEntry[];
  bytes: ImageBytes;
  /** Who wrote it, e.g. `attest-cli 0.1.0`; goes into the manifest and the reports. */
  exporter: string;
  /** Xray's Jira project key, when the export is meant for one project. */
  xrayProject?: string;
}

export const FORMATS = ['bundle', 'junit', 'xray', 'allure', 'html'] as const;
export type Format = (typeof FORMATS)[number];

export function fileOf(path: string, type: string, content: () => Promise<Chunk> | Chunk): ExportFile {
  return {
    path,
    type,
    async *chunks() {
      yield await content();
    },
  };
}

/** The files of the bundle but its images: the answers as sent, and the manifest. */
export function answerFiles(input: ExportInput): ExportFile[] {
  const { answers } = input;
  const json = 'application/json';
  return [
    fileOf('results.json', json, () => answers.results.bytes),
    fileOf('artifacts.json', json, () => answers.listing.bytes),
    ...answers.details.map((page, index) => fileOf(detailsFile(index), json, () => page.bytes)),
    fileOf('manifest.json', json, () => `${JSON.stringify(manifestOf(answers, input.images, input.exporter), null, 2)}\n`),
  ];
}

/** Every image of the run, at its planned path. */
export function imageFiles(input: ExportInput): ExportFile[] {
  return input.images.map((image) => fileOf(image.path, image.contentType, () => input.bytes(image)));
}

/** A step and the steps nested under it, in the order the results list them. */
export interface StepNode {
  step: Step;
  /** 1-based position in the results, the number the image folders use. */
  number: number;
  depth: number;
  children: StepNode[];
}

/** The step tree of the results (`parentId` links); a step whose parent is missing stays at the top. */
export function stepTree(steps: readonly Step[]): StepNode[] {
  const nodes = new Map<string, StepNode>();
  const roots: StepNode[] = [];
  steps.forEach((step, index) => {
    const parent = step.parentId === null ? undefined : nodes.get(step.parentId);
    const node: StepNode = { step, number: index + 1, depth: parent ? parent.depth + 1 : 0, children: [] };
    nodes.set(step.id, node);
    (parent ? parent.children : roots).push(node);
  });
  return roots;
}

/** The images of each step, and those of the run as a whole (key `null`), in listing order. */
export function imagesByStep(images: readonly ImageEntry[]): Map<string | null, ImageEntry[]> {
  const byStep = new Map<string | null, ImageEntry[]>();
  for (const image of images) {
    const list = byStep.get(image.stepId) ?? [];
    list.push(image);
    byStep.set(image.stepId, list);
  }
  return byStep;
}

/** The first step that failed or broke (depth first, in results order), the one a verdict points at. */
export function failingStep(steps: readonly Step[]): Step | undefined {
  return steps.find((step) => step.status === 'failed' || step.status === 'broken');
}

/** Milliseconds between two ISO times, or undefined when either is missing. */
export function elapsedMs(from: string | null, to: string | null): number | undefined {
  if (!from || !to) return undefined;
  const ms = Date.parse(to) - Date.parse(from);
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

export async function* utf8(text: AsyncIterable<Chunk>): AsyncIterable<Uint8Array> {
  const encoder = new TextEncoder();
  for await (const chunk of text) yield typeof chunk === 'string' ? encoder.encode(chunk) : chunk;
}
