import {
  answerFiles,
  attachmentFiles,
  type ExportFile,
  type ExportInput,
  type ExportSources,
  type Format,
  fileOf,
  imageFiles,
  type RunPart,
} from './files.ts';
import { allureFiles } from './formats/allure.ts';
import { htmlFiles } from './formats/html.ts';
import { junitFiles } from './formats/junit.ts';
import { xrayFiles } from './formats/xray.ts';
import { type JobAnswer, jobReport, type Report, runReport } from './report.ts';

export {
  type AttachmentEntry,
  type ImageEntry,
  manifestOf,
  planAttachments,
  planImages,
  type RunAnswers,
  readRunAnswers,
} from './bundle.ts';
export {
  type AttachmentBytes,
  type ExportFile,
  type ExportInput,
  type ExportSources,
  FORMATS,
  type Format,
  type ImageBytes,
  type RunPart,
} from './files.ts';
export { type JobAnswers, readJobAnswers } from './job.ts';
export { type JobAnswer, type Report, type ReportTest, withoutAttempt } from './report.ts';
export { zipOf } from './zip.ts';

/** What a job export's writers need: the job, its completed runs (each in its folder), and how to read bytes. */
export interface JobExportInput extends ExportSources {
  job: JobAnswer;
  parts: RunPart[];
}

function reportFiles(format: Exclude<Format, 'bundle'>, report: Report): ExportFile[] {
  switch (format) {
    case 'junit':
      return junitFiles(report);
    case 'xray':
      return xrayFiles(report);
    case 'allure':
      return allureFiles(report);
    case 'html':
      return htmlFiles(report);
  }
}

/** A run's images and other files, at their paths inside its folder. */
const evidenceFiles = (part: RunPart, sources: ExportSources) => [...imageFiles(part, sources), ...attachmentFiles(part, sources)];

/**
 * The files a format writes for one run: the bundle itself (answers, manifest, images, other
 * files); `junit.xml`, whose attachment lines point at the bundle's files; `xray.json`;
 * `allure-results/`; `report.html`.
 */
export function formatFiles(format: Format, input: ExportInput): ExportFile[] {
  if (format === 'bundle') return [...answerFiles(input), ...evidenceFiles(input, input)];
  return reportFiles(format, runReport(input));
}

const sourcesOf = (input: ExportSources): ExportSources => ({
  bytes: input.bytes,
  attachmentBytes: input.attachmentBytes,
  exporter: input.exporter,
  ...(input.xrayProject ? { xrayProject: input.xrayProject } : {}),
});

/** `job.json`: the job, and which folder holds each of its exported runs. */
function jobManifest(input: JobExportInput): ExportFile {
  const body = {
    format: 'attest-job-export/1',
    exportedBy: input.exporter,
    job: input.job,
    runs: input.parts.map((part) => ({
      id: part.answers.run.id,
      name: part.answers.run.name,
      testId: part.answers.run.testId,
      verdict: part.answers.run.verdict,
      folder: part.folder,
    })),
  };
  return fileOf('job.json', 'application/json', () => `${JSON.stringify(body, null, 2)}\n`);
}

/**
 * The files a format writes for a whole job, ONE report per format: the bundle is `job.json` and
 * each run's bundle in its folder; every other format is one file (or one Allure folder) for all
 * of the job's tests, retries folded into their test.
 */
export function jobFormatFiles(format: Format, input: JobExportInput): ExportFile[] {
  if (format === 'bundle') {
    return [
      jobManifest(input),
      ...input.parts.flatMap((part) => [
        ...answerFiles({ ...part, ...sourcesOf(input) }).map((file) => ({ ...file, path: part.folder + file.path })),
        ...evidenceFiles(part, input),
      ]),
    ];
  }
  return reportFiles(format, jobReport(input.job, input.parts, input));
}

/** The server's `format=` names: `zip` is the bundle; `junit-zip` the JUnit XML with the files it names. */
export type DownloadFormat = Format | 'zip' | 'junit-zip';

/**
 * What one download of a format holds: one file, or a folder (sent as a ZIP archive). JUnit is the
 * XML alone when there are no files for its attachment lines to name (or `xml` asks for it), the
 * archive when there are (or `zip` asks for it); `junit-zip` is always the archive.
 */
export function downloadOf(
  format: DownloadFormat,
  scope: { run: ExportInput } | { job: JobExportInput },
  options: { zip?: boolean; xml?: boolean } = {},
): { files: ExportFile[]; archive: boolean } {
  const parts = 'run' in scope ? [scope.run as RunPart] : scope.job.parts;
  const sources = 'run' in scope ? scope.run : scope.job;
  const files = (f: Format) => ('run' in scope ? formatFiles(f, scope.run) : jobFormatFiles(f, scope.job));
  switch (format) {
    case 'xray':
    case 'html':
      return { files: files(format), archive: false };
    case 'junit':
    case 'junit-zip': {
      const evidence = parts.flatMap((part) => evidenceFiles(part, sources));
      const archive = format === 'junit-zip' || options.zip === true || (options.xml !== true && evidence.length > 0);
      return archive ? { files: [...files('junit'), ...evidence], archive } : { files: files('junit'), archive };
    }
    case 'zip':
      return { files: files('bundle'), archive: true };
    default:
      return { files: files(format), archive: true };
  }
}
