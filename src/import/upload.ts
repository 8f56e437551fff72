/**
 * An uploaded file read whole into reports: a JUnit XML or Playwright JSON file, or a ZIP of them
 * with their attachment files. This is what the import worker (`worker.ts`) runs, off the server's
 * event loop; it knows nothing of the server but the limits it is given.
 */

import sjson from 'secure-json-parse';
import type { Static } from 'typebox';
import type { ImportOptions } from '../api/v1/imports.ts';
import { readArchive } from './archive.ts';
import { looksLikeJUnit, parseJUnitDocument } from './junit.ts';
import { decodeXmlBytes } from './junit-xml.ts';
import { type ImportedReport, ImportInputError } from './model.ts';
import { looksLikePlaywright, parsePlaywright, playwrightReportOf } from './playwright.ts';

export type UploadType = 'xml' | 'json' | 'zip';
export type UploadFormat = 'auto' | 'junit' | 'playwright';
export type ImportOptionsInput = Static<typeof ImportOptions>;

/** An import as a request brought it: the report's bytes, what type they are, and the options. */
export interface ImportUpload {
  fileName: string;
  bytes: Buffer;
  type: UploadType;
  options: ImportOptionsInput;
}

/** The type of an upload from its first bytes, when its Content-Type did not say (a multipart file part). */
export function sniffType(bytes: Uint8Array): UploadType {
  if (bytes[0] === 0x50 && bytes[1] === 0x4b) return 'zip';
  const start = Buffer.from(bytes.subarray(0, 64))
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart();
  return start.startsWith('{') || start.startsWith('[') ? 'json' : 'xml';
}

/** The bounds a reading keeps to (the server's configuration and its contract's limits). */
export interface UploadLimits {
  /** Most entries of a ZIP. */
  maxEntries: number;
  /** Most bytes a ZIP's files expand to together. */
  maxExpandedBytes: number;
  /** The largest report file (XML or JSON): parsing takes several times its size in memory. */
  maxReportBytes: number;
  /** Most tags one XML report may hold: each becomes an object while parsing. */
  maxXmlTags: number;
  /** A test's full name is cut to this many characters. */
  fullNameMax: number;
  /** How deep a report's steps may nest (IMP-8); the server gives IMPORT_STEP_DEPTH_MAX. */
  maxStepDepth: number;
}

export interface UploadInput {
  fileName: string;
  bytes: Uint8Array;
  type: UploadType;
  format: UploadFormat;
  limits: UploadLimits;
  /**
   * A full garbage collection, asked for where a large buffer or text was just let go of: the
   * worker's heap only collects its old generation when it grows, so a 60 MB upload's bytes would
   * otherwise stay beside its decoded text and its runs until the worker ends.
   */
  collect?: () => void;
}

/** The reports an upload holds, and the archive's files their attachments may name. */
export interface ReadUpload {
  reports: ImportedReport[];
  files: Map<string, Uint8Array>;
}

/** `<` signs counted without decoding: an upper bound of the tags a parser would build. */
function tagCount(bytes: Uint8Array): number {
  let count = 0;
  for (let at = bytes.indexOf(0x3c); at !== -1; at = bytes.indexOf(0x3c, at + 1)) count++;
  return count;
}

/** An upload's bytes or an archive's file, handed over once: whoever takes them is then the only one holding them. */
type Take = () => Uint8Array;

const EMPTY = new Uint8Array(0);

/** A report this large has its bytes collected once decoded (a full collection costs milliseconds: not one per small file). */
export const COLLECT_BYTES = 8 * 1024 * 1024;

function checkSize(file: string, bytes: Uint8Array, limits: UploadLimits): void {
  if (bytes.length > limits.maxReportBytes) {
    throw new ImportInputError(file, `is ${bytes.length} bytes; a report file may be at most ${limits.maxReportBytes}`);
  }
}

/**
 * Anything a parser throws is the file's fault: a report of a valid syntax but an odd shape can
 * trip a parser's assumptions (a number where a message was expected), and is still a 400.
 */
function parsed(file: string, read: () => ImportedReport): ImportedReport {
  try {
    return read();
  } catch (error) {
    if (error instanceof ImportInputError) throw error;
    throw new ImportInputError(file, `is not a report this import can read (${(error as Error).message ?? String(error)})`);
  }
}

/**
 * A JUnit report read, with the bounds that keep a hostile one from taking the process down. Its
 * bytes are let go of once decoded, and the decoded text once parsed: a 60 MB report is never in
 * memory three times over.
 */
function readJUnitReport(file: string, take: Take, limits: UploadLimits, collect?: () => void): ImportedReport {
  let size = 0;
  const document = ((): { text?: string } => {
    const bytes = take();
    size = bytes.length;
    checkSize(file, bytes, limits);
    if (tagCount(bytes) > limits.maxXmlTags) throw new ImportInputError(file, `holds more than ${limits.maxXmlTags} XML tags`);
    return { text: decodeXmlBytes(file, bytes) };
  })();
  // The bytes are garbage now (whoever handed them over kept none): a large report's are given back before parsing.
  if (size >= COLLECT_BYTES) collect?.();
  return parsed(file, () => parseJUnitDocument(file, document));
}

function readPlaywrightReport(file: string, bytes: Uint8Array, limits: UploadLimits, value?: unknown): ImportedReport {
  checkSize(file, bytes, limits);
  const bounds = { maxStepDepth: limits.maxStepDepth };
  return parsed(file, () => (value === undefined ? parsePlaywright(file, bytes, bounds) : playwrightReportOf(file, value, bounds)));
}

/** A JSON file of an archive, parsed once: the Playwright report it holds, or undefined for any other JSON (an attachment). */
function playwrightIn(bytes: Uint8Array, limits: UploadLimits): unknown {
  if (bytes.length > limits.maxReportBytes) return undefined;
  try {
    const value: unknown = sjson.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'), {
      protoAction: 'error',
      constructorAction: 'error',
    });
    return looksLikePlaywright(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The upload's bytes, taken out of `input`. */
function takeBytes(input: UploadInput): Uint8Array {
  const { bytes } = input;
  input.bytes = EMPTY;
  return bytes;
}

async function readReports(input: UploadInput): Promise<ReadUpload> {
  const { fileName, type, format, limits } = input;
  if (type === 'xml') {
    if (format === 'playwright') throw new ImportInputError(fileName, 'is XML; a Playwright report is JSON');
    return { reports: [readJUnitReport(fileName, () => takeBytes(input), limits, input.collect)], files: new Map() };
  }
  if (type === 'json') {
    if (format === 'junit') throw new ImportInputError(fileName, 'is JSON; JUnit reports are XML');
    return { reports: [readPlaywrightReport(fileName, takeBytes(input), limits)], files: new Map() };
  }
  const files = await readArchive(fileName, input.bytes, {
    maxEntries: limits.maxEntries,
    maxExpandedBytes: limits.maxExpandedBytes,
    // A JUnit report too large to read is refused from its declared size and first bytes, before
    // it is expanded. (A JSON file that large is no report a reader takes: it stays an attachment.)
    maxReportBytes: limits.maxReportBytes,
    isReport: (name, head) => format !== 'playwright' && name.toLowerCase().endsWith('.xml') && looksLikeJUnit(head),
  });
  input.bytes = EMPTY;
  // The reports are read, not kept as attachments: each is let go of once read.
  const take = (name: string) => () => {
    const bytes = files.get(name) ?? EMPTY;
    files.delete(name);
    return bytes;
  };
  const reports: ImportedReport[] = [];
  for (const name of [...files.keys()].sort()) {
    const lower = name.toLowerCase();
    const bytes = files.get(name) ?? EMPTY;
    if (lower.endsWith('.xml') && format !== 'playwright' && looksLikeJUnit(bytes))
      reports.push(readJUnitReport(name, take(name), limits, input.collect));
    else if (lower.endsWith('.json') && format !== 'junit') {
      const report = playwrightIn(bytes, limits);
      if (report !== undefined) reports.push(readPlaywrightReport(name, take(name)(), limits, report));
    }
  }
  if (reports.length === 0) throw new ImportInputError(fileName, 'holds no JUnit XML (*.xml) or Playwright JSON report (*.json)');
  return { reports, files };
}

/** Unpaired UTF-16 halves (a cut emoji, `&#xD800;`): the database would store U+FFFD, so the name is made so first. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * A test's full name as stored and looked up: no NUL (PostgreSQL refuses it), at most `max`
 * characters, well-formed UTF-16, so the name written is the name found again.
 */
export const storedFullName = (name: string, max: number): string =>
  name.replaceAll('\0', '').slice(0, max).replace(LONE_SURROGATE, '\uFFFD') || '(unnamed)';

/**
 * Reads a whole upload into reports, their names made storable; any fault of the input is an
 * ImportInputError naming the file. Whether the upload holds an acceptable number of cases is the
 * caller's to say.
 */
export async function readUploadBytes(input: UploadInput): Promise<ReadUpload> {
  const read = await readReports(input);
  for (const report of read.reports) {
    for (const testCase of report.cases) testCase.fullName = storedFullName(testCase.fullName, input.limits.fullNameMax);
    if (report.name !== undefined) report.name = report.name.replaceAll('\0', '');
  }
  return read;
}
