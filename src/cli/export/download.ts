import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { AttestClient, v1 } from '../../client/index.ts';
import {
  type AttachmentEntry,
  type ExportFile,
  type ExportSources,
  type Format,
  formatFiles,
  type ImageEntry,
  type JobAnswer,
  jobFormatFiles,
  planAttachments,
  planImages,
  type RunPart,
  readJobAnswers,
  readRunAnswers,
} from '../../export/index.ts';

export interface ExportProgress {
  runId: string;
  done: number;
  total: number;
  image: ImageEntry;
  /** True when the file was already there with the right size and hash. */
  reused: boolean;
}

export interface ExportRunOptions {
  formats: readonly Format[];
  concurrency: number;
  exporter: string;
  xrayProject?: string;
  /** Export a run that is not completed, as far as it got. */
  partial?: boolean;
  onProgress?: (progress: ExportProgress) => void;
  onStart?: (runId: string, total: number) => void;
}

export interface ExportSummary {
  runId: string;
  name: string;
  verdict: string | null;
  dir: string;
  images: number;
  /** Files that are no images (logs, traces, error context), downloaded beside them. */
  attachments: number;
  downloaded: number;
  reused: number;
  bytesDownloaded: number;
  files: string[];
}

/** Keeps `file` inside `dir`: a planned path is ours, but a folder is never left by `..` or an absolute path. */
function inside(dir: string, file: string): string {
  const full = path.resolve(dir, file);
  if (!full.startsWith(path.resolve(dir) + path.sep)) throw new Error(`refusing to write outside ${dir}: ${file}`);
  return full;
}

/** Writes chunks to `file` through a temporary name and a rename: a reader never sees half a file. */
async function writeAtomically(file: string, chunks: AsyncIterable<string | Uint8Array>): Promise<void> {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.part`;
  await pipeline(Readable.from(chunks), fs.createWriteStream(temporary));
  fs.renameSync(temporary, file);
}

/** Images up to this size are read whole and written in one call; larger ones stream. */
const WHOLE_IMAGE_BYTES = 8 * 1024 * 1024;

async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(fs.createReadStream(file), hash);
  return hash.digest('hex');
}

/** Whether `file` already holds the image: same size (a stat), then same SHA-256 (a read). */
async function alreadyThere(file: string, image: { size: number; sha256: string }): Promise<boolean> {
  const stat = fs.statSync(file, { throwIfNoEntry: false });
  if (!stat || stat.size !== image.size) return false;
  if (image.size <= WHOLE_IMAGE_BYTES)
    return (
      createHash('sha256')
        .update(await fs.promises.readFile(file))
        .digest('hex') === image.sha256
    );
  return (await sha256OfFile(file)) === image.sha256;
}

/** What one download is: where its bytes are, and the size and SHA-256 they must have. */
interface Wanted {
  route: string;
  label: string;
  size: number;
  sha256: string;
}

const wantedImage = (client: AttestClient, image: ImageEntry): Wanted => ({
  route: client.pathOf(v1.images.getImage, { params: { imageId: image.imageId } }),
  label: `image ${image.imageId}`,
  size: image.size,
  sha256: image.sha256,
});

const wantedFile = (client: AttestClient, file: AttachmentEntry): Wanted => ({
  route: client.pathOf(v1.artifacts.getArtifactContent, { params: { artifactId: file.artifactId } }),
  label: `artifact ${file.artifactId}`,
  size: file.size,
  sha256: file.sha256,
});

/** Downloads one image or file to `file`, checking size and SHA-256 against its details before it takes the name. */
async function download(client: AttestClient, image: Wanted, file: string): Promise<number> {
  const response = await client.fetchRaw('GET', image.route);
  if (!response.ok || !response.body) await AttestClient.read(response);
  const temporary = `${file}.part`;
  const hash = createHash('sha256');
  let size = 0;
  if (image.size <= WHOLE_IMAGE_BYTES) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    hash.update(bytes);
    size = bytes.length;
    await fs.promises.writeFile(temporary, bytes);
  } else {
    const count = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), count, fs.createWriteStream(temporary));
  }
  const digest = hash.digest('hex');
  if (size !== image.size || digest !== image.sha256) {
    fs.rmSync(temporary, { force: true });
    throw new Error(`${image.label} arrived damaged: ${size} bytes, SHA-256 ${digest}; expected ${image.size} bytes, ${image.sha256}`);
  }
  fs.renameSync(temporary, file);
  return size;
}

/** Runs `work` over `items` with at most `limit` at once; the first failure stops new work and is thrown. */
async function inParallel<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const item = items[next++] as T;
      try {
        await work(item);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}

/** Reads bytes the export already wrote: a run's images and files, under its folder in `dir`. */
function diskSources(dir: string, exporter: string, xrayProject: string | undefined): ExportSources {
  return {
    exporter,
    ...(xrayProject ? { xrayProject } : {}),
    bytes: async (image, folder) => fs.promises.readFile(inside(dir, folder + image.path)),
    attachmentBytes: async (file, folder) => fs.promises.readFile(inside(dir, folder + file.path)),
  };
}

async function writeFiles(dir: string, files: ExportFile[], written: string[]): Promise<void> {
  for (const file of files) {
    await writeAtomically(inside(dir, file.path), file.chunks());
    written.push(file.path);
  }
}

/**
 * Writes one run's bundle into `dir` (its folder): the documented sequence's answers as sent, the
 * manifest, then every image and other file (in parallel, at most `concurrency` at once; one whose
 * file already has the right size and SHA-256 is not downloaded again).
 */
async function writeRunBundle(client: AttestClient, part: RunPart, dir: string, options: ExportRunOptions): Promise<ExportSummary> {
  const { answers, images, attachments } = part;
  const testRunId = answers.run.id;
  fs.mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  const sources = diskSources(dir, options.exporter, options.xrayProject);
  // The answers and the manifest first: an interrupted export still says what it is.
  const bundle = formatFiles('bundle', { ...part, folder: '', ...sources });
  await writeFiles(
    dir,
    bundle.filter((file) => !file.path.startsWith('images/') && !file.path.startsWith('files/')),
    written,
  );

  const paths = [...images.map((image) => image.path), ...attachments.map((file) => file.path)];
  for (const folder of new Set(paths.map((file) => path.dirname(inside(dir, file))))) fs.mkdirSync(folder, { recursive: true });
  options.onStart?.(testRunId, images.length);
  let done = 0;
  let downloaded = 0;
  let bytesDownloaded = 0;
  // An image shared by several artifacts is fetched once and copied to its other names.
  const byId = new Map<string, ImageEntry[]>();
  for (const image of images) byId.set(image.imageId, [...(byId.get(image.imageId) ?? []), image]);
  await inParallel([...byId.values()], options.concurrency, async (entries) => {
    let source: string | undefined;
    for (const image of entries) {
      const file = inside(dir, image.path);
      let reused = await alreadyThere(file, image);
      if (!reused && source !== undefined) {
        fs.copyFileSync(source, file);
        reused = true;
      } else if (!reused) {
        bytesDownloaded += await download(client, wantedImage(client, image), file);
        downloaded++;
      }
      source = file;
      written.push(image.path);
      options.onProgress?.({ runId: testRunId, done: ++done, total: images.length, image, reused });
    }
  });
  await inParallel(attachments, options.concurrency, async (entry) => {
    const file = inside(dir, entry.path);
    if (!(await alreadyThere(file, entry))) {
      bytesDownloaded += await download(client, wantedFile(client, entry), file);
    }
    written.push(entry.path);
  });
  return {
    runId: testRunId,
    name: answers.run.name,
    verdict: answers.run.verdict,
    dir,
    images: images.length,
    attachments: attachments.length,
    downloaded,
    reused: images.length - downloaded,
    bytesDownloaded,
    files: written,
  };
}

/**
 * Exports one completed run into `dir`: its bundle (answers, manifest, images, other files), then
 * each format's files.
 */
export async function exportRun(client: AttestClient, testRunId: string, dir: string, options: ExportRunOptions): Promise<ExportSummary> {
  const answers = await readRunAnswers(client, testRunId, { partial: options.partial });
  const part: RunPart = { answers, images: planImages(answers), attachments: planAttachments(answers), folder: '' };
  const summary = await writeRunBundle(client, part, dir, options);
  const sources = diskSources(dir, options.exporter, options.xrayProject);
  for (const format of options.formats) {
    if (format !== 'bundle') await writeFiles(dir, formatFiles(format, { ...part, ...sources }), summary.files);
  }
  return summary;
}

export interface JobExportSummary {
  jobId: string;
  name: string;
  dir: string;
  /** The job-level files: `job.json`, `junit.xml`, `report.html`, `allure-results/…`, `xray.json`. */
  files: string[];
  runs: ExportSummary[];
}

/**
 * Exports a job into `dir`: each completed run's bundle in `dir/<runId>/`, `job.json`, then ONE
 * file per format for the whole job (`junit.xml`, `report.html`, `allure-results/`, `xray.json`),
 * retries folded into their test. A job without a completed run is refused.
 */
export async function exportJob(
  client: AttestClient,
  jobId: string,
  dir: string,
  options: ExportRunOptions & { onRuns?: (job: JobAnswer, runs: number) => void },
): Promise<JobExportSummary> {
  const { job, parts } = await readJobAnswers(client, jobId);
  options.onRuns?.(job, parts.length);
  const runs: ExportSummary[] = [];
  for (const part of parts) runs.push(await writeRunBundle(client, part, inside(dir, part.folder), options));
  const input = { job, parts, ...diskSources(dir, options.exporter, options.xrayProject) };
  const files: string[] = [];
  await writeFiles(
    dir,
    jobFormatFiles('bundle', input).filter((file) => file.path === 'job.json'),
    files,
  );
  for (const format of options.formats) if (format !== 'bundle') await writeFiles(dir, jobFormatFiles(format, input), files);
  return { jobId: job.id, name: job.name, dir, files, runs };
}
