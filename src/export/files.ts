import { type AttachmentEntry, detailsFile, type ImageEntry, manifestOf, type RunAnswers, type Step } from './bundle.ts';

export type Chunk = string | Uint8Array;

/** One file an export writes: a path relative to the export folder, and its content as chunks. */
export interface ExportFile {
  path: string;
  /** A media type for a download of this file alone. */
  type: string;
  chunks(): AsyncIterable<Chunk>;
}

/**
 * The bytes of one image, wherever they are: a downloaded file (the CLI) or the image route (the
 * server). `folder` is the folder of the image's run in the export (see `RunPart.folder`).
 */
export type ImageBytes = (image: ImageEntry, folder: string) => Promise<Uint8Array>;
/** The bytes of one non-image file, likewise. */
export type AttachmentBytes = (file: AttachmentEntry, folder: string) => Promise<Uint8Array>;

/** One run of an export: the sequence's answers and where its images and other files go. */
export interface RunPart {
  answers: RunAnswers;
  images: ImageEntry[];
  attachments: AttachmentEntry[];
  /** The folder holding this run's files in the export, with a trailing `/`: '' for a run export, `<runId>/` in a job's. */
  folder: string;
}

/** How a writer reads bytes and signs its output. */
export interface ExportSources {
  bytes: ImageBytes;
  attachmentBytes: AttachmentBytes;
  /** Who wrote it, e.g. `attest-cli 0.1.0`; goes into the manifest and the reports. */
  exporter: string;
  /** Xray's Jira project key, when the export is meant for one project. */
  xrayProject?: string;
}

/** Everything a run export's writers need: the run, and how to read its bytes. */
export interface ExportInput extends RunPart, ExportSources {}

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
    fileOf(
      'manifest.json',
      json,
      () => `${JSON.stringify(manifestOf(answers, input.images, input.exporter, input.attachments), null, 2)}\n`,
    ),
  ];
}

/** Every image of a run, at its planned path inside the run's folder. */
export function imageFiles(part: RunPart, sources: ExportSources): ExportFile[] {
  return part.images.map((image) => fileOf(part.folder + image.path, image.contentType, () => sources.bytes(image, part.folder)));
}

/** Every non-image file of a run (logs, traces, error context), at its planned path inside the run's folder. */
export function attachmentFiles(part: RunPart, sources: ExportSources): ExportFile[] {
  return part.attachments.map((file) =>
    fileOf(part.folder + file.path, file.contentType, () => sources.attachmentBytes(file, part.folder)),
  );
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
