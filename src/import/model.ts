/**
 * What every import format is read into before anything is stored: a report of test cases, each
 * with a verdict, a tree of steps, text cells and attachments. Parsers (`junit.ts`,
 * `playwright.ts`) only produce this; the server's import service stores it (docs/imports.md).
 */

export type Verdict = 'passed' | 'failed' | 'broken' | 'skipped';

/**
 * How deep a report's steps may nest (a top-level step is at depth 1); a deeper one is refused
 * (IMP-8). Real trees stay far above it: Playwright's `test.step`s and Allure's nested steps
 * rarely pass ten levels, and steps past the results contract's ten are stored under the tenth.
 * Every reader counts depth as it walks, so nothing recurses further than this, and the tree
 * it hands over (a structured clone, out of the import worker) stays shallow enough to be read.
 */
export const IMPORT_STEP_DEPTH_MAX = 100;

/** Suites (JUnit `<testsuite>`s, Playwright's file and describe suites) nested deeper than this are not a test report. */
export const SUITE_DEPTH_MAX = 32;

/** A step's status, as the results contract takes it (a finished step: never `running`). */
export type StepStatus = 'passed' | 'failed' | 'broken' | 'skipped';

export interface ImportedCell {
  /** `stdout`, `stderr`, `failure`, `error`, `labels`, … */
  name: string;
  text: string;
  mediaType?: 'text/plain' | 'text/markdown';
}

/** One image of a visual diff: its bytes inline (`body`) or from the archive (`path`). */
export interface ImportedFile {
  /** The attachment's own name (`badge-expected.png`): what it is stored as if the visual diff cannot be. */
  name: string;
  path?: string;
  body?: Uint8Array;
  contentType?: string;
}

/** A file the report names: its bytes come inline (`body`) or from the archive (`path`). */
export interface ImportedAttachment {
  name: string;
  /** The path inside the uploaded archive, as the report wrote it (resolved by `resolveAttachment`). */
  path?: string;
  /** Inline bytes (Playwright's `body`, base64-decoded). */
  body?: Uint8Array;
  /** The type the report declares; the stored type comes from the bytes for images. */
  contentType?: string;
  kind: 'screenshot' | 'video' | 'trace' | 'log' | 'file' | 'visual-diff';
  /** A visual diff's images (kind `visual-diff`, whose own `path` and `body` are unused). */
  images?: { baseline: ImportedFile; actual: ImportedFile; diff: ImportedFile };
}

export interface ImportedStep {
  title: string;
  status: StepStatus;
  startedAt?: string;
  durationMs?: number;
  error?: string;
  cells: ImportedCell[];
  attachments: ImportedAttachment[];
  steps: ImportedStep[];
}

/** One execution of one test: one run. */
export interface ImportedCase {
  /** The test's identity in the project: the same full name in a later import is the same test. */
  fullName: string;
  /** The run's name (the case's own title). */
  name: string;
  /**
   * Where the report files the case, outermost first (JUnit suite names or classname parts;
   * Playwright's file and describe titles): the suite of a test the import creates (TCM-6).
   */
  suite?: string[];
  verdict: Verdict;
  startedAt?: string;
  durationMs?: number;
  /** 0 for a first attempt; retries of the same test count up (Playwright `retry`). */
  attempt: number;
  /** Properties: `environment`, `branch`, `build`, `commit` fill the run's labels; others become a `labels` cell. */
  labels: Record<string, string>;
  /** Run-level text cells. */
  cells: ImportedCell[];
  /** Run-level attachments (no step known). */
  attachments: ImportedAttachment[];
  steps: ImportedStep[];
}

export interface ImportedReport {
  format: 'junit' | 'playwright';
  /** The file it came from (its path in the archive, or the upload's name). */
  file: string;
  /** A name for the job, when the report has one (the root `testsuites` name). */
  name?: string;
  startedAt?: string;
  cases: ImportedCase[];
  /** Problems that did not stop the file from being read (an attachment the archive lacks, …). */
  warnings: string[];
}

/** Input that cannot be imported: answered 400 with this message, naming the file; nothing is stored. */
export class ImportInputError extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`);
    this.name = 'ImportInputError';
  }
}
