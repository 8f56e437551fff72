import type { Static } from 'typebox';
import type { ArtifactDetails, Artifact as ArtifactRow } from '../api/v1/artifacts.ts';
import type { FailureGroup as FailureGroupSchema } from '../api/v1/failures.ts';
import type { RunResults } from '../api/v1/results.ts';
import type { TestRun } from '../api/v1/runs.ts';
import type { TestDefinition } from '../api/v1/tests.ts';
import { ApiError, AttestClient, v1 } from '../client/index.ts';

export type Run = Static<typeof TestRun>;
export type Test = Static<typeof TestDefinition>;
export type Results = Static<typeof RunResults>;
export type Step = Results['steps'][number];
export type Artifact = Static<typeof ArtifactRow>;
export type Details = Static<typeof ArtifactDetails>;
export type ArtifactImage = Details['images'][number];
export type FailureGroup = Static<typeof FailureGroupSchema>;

/** One answer of the documented sequence: the bytes exactly as the server sent them, and their reading. */
export interface Answer<T> {
  bytes: Uint8Array;
  value: T;
}

/** A run as the documented screenshot sequence (SPEC-1.4) reads it, answers kept byte for byte. */
export interface RunAnswers {
  run: Run;
  /** (1) `GET /testmgmt/testruns/{id}/results`. */
  results: Answer<Results>;
  /** (2) `GET /projects/{projectId}/artifact?testRunId=`. */
  listing: Answer<{ items: Artifact[]; nextCursor: string | null }>;
  /** (3) `GET /artifact/artifacts?ids=`, one answer per batch of ids, in listing order. */
  details: Answer<{ items: Details[]; missing: string[] }>[];
  /** The test the run executed (`GET /testmgmt/tests/{testId}`); null when it names none, or that test is gone. */
  test: Test | null;
  /**
   * The error groups of a failed run and its failed steps, with their triage (`GET /testmgmt/testruns/{id}/failures`),
   * read as the export runs: the defect type and issue link are today's, not the run's. Empty for a run that did not fail.
   */
  failures: FailureGroup[];
}

/** The most ids one details call names; the server's ATTEST_MAX_IDS_PER_BATCH is 100 unless raised. */
export const DETAILS_BATCH = 100;

async function answer<T>(client: AttestClient, path: string): Promise<Answer<T>> {
  const response = await client.fetchRaw('GET', path);
  // A problem answer throws its ApiError.
  if (!response.ok) await AttestClient.read(response);
  const bytes = new Uint8Array(await response.arrayBuffer());
  return { bytes, value: JSON.parse(new TextDecoder().decode(bytes)) as T };
}

/**
 * Reads a completed run the documented way: its results, the run's artifact listing, then the
 * artifacts' details in batches. A run that is not completed answers 409 `RUN_NOT_COMPLETED` at the
 * first step, as the server says, and nothing is read after that, unless `partial` asks for it as it is.
 */
export async function readRunAnswers(client: AttestClient, testRunId: string, options: { partial?: boolean } = {}): Promise<RunAnswers> {
  const run = await client.call(v1.runs.getRun, { params: { testRunId } });
  const results = await answer<Results>(
    client,
    client.pathOf(v1.results.getResults, { params: { testRunId }, query: options.partial ? { partial: true } : {} }),
  );
  const listing = await answer<RunAnswers['listing']['value']>(
    client,
    client.pathOf(v1.artifacts.listArtifacts, { params: { projectId: run.projectId }, query: { testRunId } }),
  );
  const ids = listing.value.items.map((artifact) => artifact.id);
  const details: RunAnswers['details'] = [];
  for (let start = 0; start < ids.length; start += DETAILS_BATCH) {
    const batch = ids.slice(start, start + DETAILS_BATCH).join(',');
    details.push(await answer(client, client.pathOf(v1.artifacts.getArtifacts, { query: { ids: batch } })));
  }
  const failures = run.failureGroupId === null ? [] : (await client.call(v1.failures.getRunFailures, { params: { testRunId } })).items;
  return { run, results, listing, details, test: run.testId === null ? null : await testOf(client, run.testId), failures };
}

/** The test of a run; a test deleted since (404) is no test. */
async function testOf(client: AttestClient, testId: string): Promise<Test | null> {
  try {
    return await client.call(v1.tests.getTest, { params: { testId } });
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

/** One image of the export: which artifact and step it belongs to, and where its file goes. */
export interface ImageEntry {
  imageId: string;
  artifactId: string;
  artifactName: string;
  kind: Details['kind'];
  role: ArtifactImage['role'];
  /** The step the artifact names, or null for evidence of the run as a whole. */
  stepId: string | null;
  stepTitle: string | null;
  /** The file, relative to the export folder, with `/` separators. */
  path: string;
  contentType: ArtifactImage['contentType'];
  width: number;
  height: number;
  size: number;
  sha256: string;
}

const EXTENSIONS: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp' };

/** A file-name-safe slug: lower-case letters, digits and dashes, at most `max` characters. */
export function slug(text: string, max = 48): string {
  const cleaned = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, max)
    .replace(/-+$/, '');
  return cleaned || 'untitled';
}

/** An artifact with its step (none for the run's own) and its place: its folder, and its number there from 1. */
interface Placed {
  artifact: Artifact;
  detail: Details;
  step: Step | undefined;
  folder: string;
  ordinal: number;
}

/**
 * The artifacts with images (`images`) or without (`files`), in listing order, each placed in
 * `<root>/<nn>-<step title>/` for the step that is <nn>th in the results, `<root>/run/` for the run's.
 */
function* placed(answers: RunAnswers, root: 'images' | 'files'): Generator<Placed> {
  const steps = answers.results.value.steps;
  const width = String(steps.length).length;
  const stepIndex = new Map(steps.map((step, index) => [step.id, index]));
  const details = new Map(answers.details.flatMap((page) => page.value.items).map((item) => [item.id, item]));
  const perFolder = new Map<string, number>();
  const withImages = root === 'images';
  for (const artifact of answers.listing.value.items) {
    const detail = details.get(artifact.id);
    if (!detail || detail.images.length > 0 !== withImages) continue;
    const index = artifact.stepId === null ? undefined : stepIndex.get(artifact.stepId);
    const step = index === undefined ? undefined : steps[index];
    const folder = step === undefined ? `${root}/run` : `${root}/${String(index! + 1).padStart(width, '0')}-${slug(step.title)}`;
    const ordinal = (perFolder.get(folder) ?? 0) + 1;
    perFolder.set(folder, ordinal);
    yield { artifact, detail, step, folder, ordinal };
  }
}

/**
 * Names every image so a person finds a step's screenshots: `images/<nn>-<step title>/` holds the
 * images of the step that is <nn>th in the results (run-level ones go to `images/run/`), each file
 * `<mm>-<artifact name>` (and `-baseline`, `-actual`, `-diff` for a visual diff).
 */
export function planImages(answers: RunAnswers): ImageEntry[] {
  const used = new Set<string>();
  const entries: ImageEntry[] = [];
  for (const { artifact, detail, step, folder, ordinal } of placed(answers, 'images')) {
    const base = `${String(ordinal).padStart(2, '0')}-${slug(artifact.name.replace(/\.[a-z0-9]{1,5}$/i, ''))}`;
    for (const image of detail.images) {
      const suffix = image.role === 'screenshot' ? '' : `-${image.role}`;
      let path = `${folder}/${base}${suffix}.${EXTENSIONS[image.contentType]}`;
      if (used.has(path)) path = `${folder}/${base}-${artifact.id.slice(0, 8)}${suffix}.${EXTENSIONS[image.contentType]}`;
      used.add(path);
      entries.push({
        imageId: image.id,
        artifactId: artifact.id,
        artifactName: artifact.name,
        kind: artifact.kind,
        role: image.role,
        stepId: step ? step.id : null,
        stepTitle: step ? step.title : null,
        path,
        contentType: image.contentType,
        width: image.width,
        height: image.height,
        size: image.size,
        sha256: image.sha256,
      });
    }
  }
  return entries;
}

/** A file of the run's evidence that is no image (a log, a trace, `error-context.md`, a video): its artifact and where it goes. */
export interface AttachmentEntry {
  artifactId: string;
  name: string;
  kind: Artifact['kind'];
  contentType: string;
  size: number;
  sha256: string;
  stepId: string | null;
  stepTitle: string | null;
  /** The file, relative to the run's export folder: `files/<nn>-<step title>/<mm>-<name>.<ext>`. */
  path: string;
}

/** Extensions for names that carry none, by media type (parameters left out). */
const TYPE_EXTENSIONS: Record<string, string> = {
  'text/plain': 'txt',
  'text/markdown': 'md',
  'text/html': 'html',
  'text/csv': 'csv',
  'application/json': 'json',
  'application/xml': 'xml',
  'text/xml': 'xml',
  'application/zip': 'zip',
  'video/webm': 'webm',
  'video/mp4': 'mp4',
};

/** The extension a non-image file is saved with: its name's own, else its media type's, else `bin`. */
function extensionOf(name: string, contentType: string): string {
  const own = /\.([a-z0-9]{1,8})$/i.exec(name)?.[1];
  return (own ?? TYPE_EXTENSIONS[contentType.split(';')[0]!.trim().toLowerCase()] ?? 'bin').toLowerCase();
}

/**
 * Names every artifact without images (logs, traces, files, videos) as `planImages` names images:
 * `files/<nn>-<step title>/` for a step's, `files/run/` for the run's, each `<mm>-<name>.<ext>`.
 */
export function planAttachments(answers: RunAnswers): AttachmentEntry[] {
  const entries: AttachmentEntry[] = [];
  for (const { artifact, step, folder, ordinal } of placed(answers, 'files')) {
    const base = slug(artifact.name.replace(/\.[a-z0-9]{1,8}$/i, ''));
    entries.push({
      artifactId: artifact.id,
      name: artifact.name,
      kind: artifact.kind,
      contentType: artifact.contentType,
      size: artifact.size,
      sha256: artifact.sha256,
      stepId: step ? step.id : null,
      stepTitle: step ? step.title : null,
      path: `${folder}/${String(ordinal).padStart(2, '0')}-${base}.${extensionOf(artifact.name, artifact.contentType)}`,
    });
  }
  return entries;
}

/** `manifest.json`: every image → its artifact → its step, with hash, size and media type. */
export function manifestOf(answers: RunAnswers, images: ImageEntry[], exporter: string, attachments: AttachmentEntry[] = []) {
  const { run } = answers;
  return {
    format: 'attest-export/1',
    exportedBy: exporter,
    run: { id: run.id, projectId: run.projectId, name: run.name, status: run.status, verdict: run.verdict },
    files: {
      results: 'results.json',
      artifacts: 'artifacts.json',
      details: answers.details.map((_, index) => detailsFile(index)),
    },
    images: images.map((image) => ({
      path: image.path,
      imageId: image.imageId,
      role: image.role,
      mediaType: image.contentType,
      size: image.size,
      sha256: image.sha256,
      width: image.width,
      height: image.height,
      artifact: { id: image.artifactId, name: image.artifactName, kind: image.kind },
      step: image.stepId === null ? null : { id: image.stepId, title: image.stepTitle },
    })),
    attachments: attachments.map((file) => ({
      path: file.path,
      mediaType: file.contentType,
      size: file.size,
      sha256: file.sha256,
      artifact: { id: file.artifactId, name: file.name, kind: file.kind },
      step: file.stepId === null ? null : { id: file.stepId, title: file.stepTitle },
    })),
  };
}

/** The file of the `index`th details answer: `artifact-details.json`, then `artifact-details-2.json`, … */
export function detailsFile(index: number): string {
  return index === 0 ? 'artifact-details.json' : `artifact-details-${index + 1}.json`;
}
