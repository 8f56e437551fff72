import sjson from 'secure-json-parse';
import type { Static } from 'typebox';
import type { ImportOptions } from '../../api/v1/imports.ts';
import { TEST_FULL_NAME_MAX } from '../../api/v1/runs.ts';
import { readArchive } from '../../import/archive.ts';
import { looksLikeJUnit, parseJUnit } from '../../import/junit.ts';
import { type ImportedReport, ImportInputError } from '../../import/model.ts';
import { looksLikePlaywright, parsePlaywright, playwrightReportOf } from '../../import/playwright.ts';
import type { AppContext } from '../context.ts';
import type { ImportsTable } from '../db/types.ts';
import { AppError } from '../errors.ts';

// Reading an upload (IMP-5): everything an import holds is read and checked here, before anything
// is stored; whatever is wrong with it is a 400 that names the file.

export type ImportOptionsInput = Static<typeof ImportOptions>;
export type SourceType = ImportsTable['source_type'];

/** Most runs one import may make: far above real suites, and a bound on one upload's work. */
export const IMPORT_RUNS_MAX = 100_000;
/** The largest report file (XML or JSON) read: parsing takes several times its size in memory. */
export const REPORT_MAX_BYTES = 64 * 1024 * 1024;
/** Most tags one XML report may hold: each becomes an object while parsing (≈ 500 bytes each). */
export const XML_TAGS_MAX = 600_000;

export interface ImportUpload {
  fileName: string;
  bytes: Buffer;
  type: SourceType;
  options: ImportOptionsInput;
}

/** The reports an upload holds, and the archive's files their attachments may name. */
export interface ReadUpload {
  reports: ImportedReport[];
  files: Map<string, Uint8Array>;
}

/** The type of an upload from its first bytes, when its Content-Type did not say (a multipart file part). */
export function sniffType(bytes: Uint8Array): SourceType {
  if (bytes[0] === 0x50 && bytes[1] === 0x4b) return 'zip';
  const start = Buffer.from(bytes.subarray(0, 64))
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart();
  return start.startsWith('{') || start.startsWith('[') ? 'json' : 'xml';
}

/** `<` signs counted without decoding: an upper bound of the tags a parser would build. */
function tagCount(bytes: Uint8Array): number {
  let count = 0;
  for (let at = bytes.indexOf(0x3c); at !== -1; at = bytes.indexOf(0x3c, at + 1)) count++;
  return count;
}

/**
 * One report file read, with the bounds that keep a hostile one from taking the process down.
 * Anything a parser throws is the file's fault: a report of a valid syntax but an odd shape can
 * trip a parser's assumptions (a number where a message was expected), and is still a 400.
 */
function readReport(file: string, bytes: Uint8Array, kind: 'junit' | 'playwright', parsed?: unknown): ImportedReport {
  if (bytes.length > REPORT_MAX_BYTES) {
    throw new ImportInputError(file, `is ${bytes.length} bytes; a report file may be at most ${REPORT_MAX_BYTES}`);
  }
  if (kind === 'junit' && tagCount(bytes) > XML_TAGS_MAX) throw new ImportInputError(file, `holds more than ${XML_TAGS_MAX} XML tags`);
  try {
    if (kind === 'junit') return parseJUnit(file, bytes);
    return parsed === undefined ? parsePlaywright(file, bytes) : playwrightReportOf(file, parsed);
  } catch (error) {
    if (error instanceof ImportInputError) throw error;
    throw new ImportInputError(file, `is not a report this import can read (${(error as Error).message ?? String(error)})`);
  }
}

/** A JSON file of an archive, parsed once: the Playwright report it holds, or undefined for any other JSON (an attachment). */
function playwrightIn(bytes: Uint8Array): unknown {
  if (bytes.length > REPORT_MAX_BYTES) return undefined;
  try {
    const value: unknown = sjson.parse(Buffer.from(bytes).toString('utf8'), { protoAction: 'error', constructorAction: 'error' });
    return looksLikePlaywright(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

async function readReports(upload: ImportUpload, config: AppContext['config']): Promise<ReadUpload> {
  const format = upload.options.format ?? 'auto';
  if (upload.type === 'xml') {
    if (format === 'playwright') throw new ImportInputError(upload.fileName, 'is XML; a Playwright report is JSON');
    return { reports: [readReport(upload.fileName, upload.bytes, 'junit')], files: new Map() };
  }
  if (upload.type === 'json') {
    if (format === 'junit') throw new ImportInputError(upload.fileName, 'is JSON; JUnit reports are XML');
    return { reports: [readReport(upload.fileName, upload.bytes, 'playwright')], files: new Map() };
  }
  const files = await readArchive(upload.fileName, upload.bytes, {
    maxEntries: config.maxImportEntries,
    maxExpandedBytes: config.maxImportExpandedBytes,
  });
  const reports: ImportedReport[] = [];
  for (const [name, bytes] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const lower = name.toLowerCase();
    if (lower.endsWith('.xml') && format !== 'playwright' && looksLikeJUnit(bytes)) reports.push(readReport(name, bytes, 'junit'));
    else if (lower.endsWith('.json') && format !== 'junit') {
      const report = playwrightIn(bytes);
      if (report !== undefined) reports.push(readReport(name, bytes, 'playwright', report));
    }
  }
  if (reports.length === 0) {
    throw new ImportInputError(upload.fileName, 'holds no JUnit XML (*.xml) or Playwright JSON report (*.json)');
  }
  return { reports, files };
}

/** Unpaired UTF-16 halves (a cut emoji, `&#xD800;`): the database would store U+FFFD, so the name is made so first. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * A test's full name as stored and looked up: no NUL (PostgreSQL refuses it), at most
 * TEST_FULL_NAME_MAX characters, well-formed UTF-16, so the name written is the name found again.
 */
export const storedFullName = (name: string): string =>
  name.replaceAll('\0', '').slice(0, TEST_FULL_NAME_MAX).replace(LONE_SURROGATE, '\uFFFD') || '(unnamed)';

/** Reads and checks a whole upload; any fault is a 400 naming the file, before anything is stored (IMP-5). */
export async function readUpload(ctx: AppContext, upload: ImportUpload): Promise<ReadUpload> {
  let read: ReadUpload;
  try {
    read = await readReports(upload, ctx.config);
  } catch (error) {
    if (error instanceof ImportInputError) throw new AppError('INVALID_INPUT', error.message);
    throw error;
  }
  const runs = read.reports.reduce((sum, report) => sum + report.cases.length, 0);
  if (runs === 0) throw new AppError('INVALID_INPUT', `${upload.fileName}: holds no test case to import.`);
  if (runs > IMPORT_RUNS_MAX) {
    throw new AppError('INVALID_INPUT', `The upload holds ${runs} test cases; an import takes at most ${IMPORT_RUNS_MAX}.`);
  }
  for (const report of read.reports) {
    for (const testCase of report.cases) testCase.fullName = storedFullName(testCase.fullName);
    if (report.name !== undefined) report.name = report.name.replaceAll('\0', '');
  }
  return read;
}
