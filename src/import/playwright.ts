import {
  artifactNameOf,
  attachmentKind,
  attachmentStep,
  clip,
  errorCellText,
  fullNameOf,
  groupVisualDiffs,
  NAME_MAX,
  STEP_TITLE_MAX,
  skipReasonOf,
  stdioText,
  stepErrorOf,
  stepStatusOf,
  stripAnsi,
  verdictOf,
  visualDiffStep,
} from '@attest-hq/playwright-reporter/mapping';
import sjson from 'secure-json-parse';
import {
  IMPORT_STEP_DEPTH_MAX,
  type ImportedAttachment,
  type ImportedCase,
  type ImportedCell,
  type ImportedFile,
  type ImportedReport,
  type ImportedStep,
  ImportInputError,
  SUITE_DEPTH_MAX,
} from './model.ts';

/**
 * Playwright's JSON report (`reporter: [['json', { outputFile }]]`) → the imported-report model.
 * Every attempt of every test is one case; steps are the `test.step` tree the report keeps. The
 * mapping rules (names, verdicts, step status, attachment kinds and placement) live in the live
 * reporter's `mapping.ts`, shared so an import and a live-streamed run of the same tests match.
 *
 * What Playwright 1.65 writes (checked against a real run of test/fixtures/playwright):
 * - root `suites` are files (`title` = path below testDir), nested `suites` are describes, `specs`
 *   are tests with one `tests[i]` per project, each with `results[]`, one per attempt (`retry`);
 * - a result has `status`, `duration`, `startTime`, `error` (raw), `errors[]` (formatted: message,
 *   snippet and stack in one `message`), `stdout`/`stderr` (`{ text }` or `{ buffer }` base64),
 *   `steps` (only `test.step`s, absent when none) and `attachments` (`path` absolute on the
 *   producing machine, or `body` base64);
 * - a step has only `title`, `duration`, `error` and `steps`: no start time, no attachments.
 *
 * Suites and steps are walked with their depth counted, and refused before the walk goes past the
 * limit (IMP-8): a report is JSON, which nests as deep as its bytes allow.
 */

type Json = Record<string, unknown>;

interface Context {
  file: string;
  severalProjects: boolean;
  warnings: string[];
  maxStepDepth: number;
}

/** What a reading may be told: how deep steps may nest (IMPORT_STEP_DEPTH_MAX unless said). */
export interface PlaywrightLimits {
  maxStepDepth?: number;
}

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A Playwright JSON report at a glance: a `config` object and a `suites` array (JUnit XML and others never are). */
export function looksLikePlaywright(value: unknown): value is Json & { config: Json; suites: unknown[] } {
  return (
    isObject(value) && isObject(value.config) && Array.isArray(value.suites) && (value.errors === undefined || Array.isArray(value.errors))
  );
}

export function parsePlaywright(file: string, bytes: Uint8Array, limits: PlaywrightLimits = {}): ImportedReport {
  return playwrightReportOf(file, readJson(file, bytes), limits);
}

/** A report already parsed from JSON (an archive's file, parsed once to tell whether it is a report). */
export function playwrightReportOf(file: string, report: unknown, limits: PlaywrightLimits = {}): ImportedReport {
  if (!looksLikePlaywright(report)) throw new ImportInputError(file, 'not a Playwright JSON report (no `config` and `suites`)');
  const config = report.config;
  const projects = Array.isArray(config.projects) ? config.projects : [];
  const maxStepDepth = limits.maxStepDepth ?? IMPORT_STEP_DEPTH_MAX;
  const context: Context = { file, severalProjects: projects.length > 1, warnings: [], maxStepDepth };
  const cases: ImportedCase[] = [];
  list(context, report, 'suites', 'report').forEach((suite, i) => {
    readSuite(context, object(context, suite, `suites[${i}]`), [], `suites[${i}]`, cases);
  });
  const stats = isObject(report.stats) ? report.stats : {};
  return {
    format: 'playwright',
    file,
    ...(typeof stats.startTime === 'string' ? { startedAt: stats.startTime } : {}),
    cases,
    warnings: context.warnings,
  };
}

function readJson(file: string, bytes: Uint8Array): unknown {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  try {
    return sjson.parse(text, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    throw new ImportInputError(file, `not valid JSON: ${(error as Error).message}`);
  }
}

/** A file suite (its title is the file) or a describe: both add their title to the path. */
function readSuite(context: Context, suite: Json, titles: string[], where: string, cases: ImportedCase[]): void {
  const path = [...titles, string(context, suite.title, `${where}.title`)];
  list(context, suite, 'specs', where).forEach((spec, i) => {
    readSpec(context, object(context, spec, `${where}.specs[${i}]`), path, `${where}.specs[${i}]`, cases);
  });
  const children = list(context, suite, 'suites', where);
  // `path` holds this suite's depth (1 for a file): a child would be one deeper.
  if (children.length > 0 && path.length >= SUITE_DEPTH_MAX) {
    throw new ImportInputError(context.file, `${where}: suites nest more than ${SUITE_DEPTH_MAX} levels deep`);
  }
  children.forEach((child, i) => {
    readSuite(context, object(context, child, `${where}.suites[${i}]`), path, `${where}.suites[${i}]`, cases);
  });
}

function readSpec(context: Context, spec: Json, titles: string[], where: string, cases: ImportedCase[]): void {
  const title = string(context, spec.title, `${where}.title`);
  list(context, spec, 'tests', where).forEach((test, i) => {
    const at = `${where}.tests[${i}]`;
    const entry = object(context, test, at);
    const projectName = typeof entry.projectName === 'string' ? entry.projectName : '';
    const fullName = fullNameOf([...titles, title], projectName, context.severalProjects);
    const annotations = Array.isArray(entry.annotations) ? entry.annotations.filter(isObject) : [];
    list(context, entry, 'results', at).forEach((result, r) => {
      cases.push(
        readResult(
          context,
          object(context, result, `${at}.results[${r}]`),
          { fullName, title, annotations, suite: titles },
          `${at}.results[${r}]`,
        ),
      );
    });
  });
}

function readResult(
  context: Context,
  result: Json,
  test: { fullName: string; title: string; annotations: Json[]; suite: string[] },
  where: string,
): ImportedCase {
  const status = string(context, result.status, `${where}.status`);
  const attempt = Number.isInteger(result.retry) && (result.retry as number) >= 0 ? (result.retry as number) : 0;
  const steps = list(context, result, 'steps', where).map((step, i) =>
    readStep(context, object(context, step, `${where}.steps[${i}]`), { status, result: where, depth: 1 }, `${where}.steps[${i}]`),
  );
  const imported: ImportedCase = {
    fullName: test.fullName,
    // The test's title, whatever the attempt (TRIAGE-14): a retry's attempt is its `attempt`.
    name: clip(test.title, NAME_MAX),
    suite: test.suite,
    verdict: verdictOf(status),
    ...(typeof result.startTime === 'string' ? { startedAt: result.startTime } : {}),
    ...(typeof result.duration === 'number' ? { durationMs: milliseconds(result.duration) } : {}),
    attempt,
    labels: {},
    cells: resultCells(result, status, Array.isArray(result.annotations) ? result.annotations.filter(isObject) : test.annotations),
    attachments: [],
    steps,
  };
  const attachments = list(context, result, 'attachments', where).flatMap((raw, i) => {
    const attachment = readAttachment(context, object(context, raw, `${where}.attachments[${i}]`), `${where}.attachments[${i}]`);
    return attachment ? [attachment] : [];
  });
  const tree = { children: (s: ImportedStep) => s.steps, failed: (s: ImportedStep) => s.status === 'failed' };
  for (const group of groupVisualDiffs(attachments)) {
    if ('visualDiff' in group) {
      // A failed toHaveScreenshot: one visual diff on the step that made it (mapping.ts's `visualDiffStep`).
      const { name, baseline, actual, diff } = group.visualDiff;
      const step = visualDiffStep(name, steps, { ...tree, error: (s) => s.error });
      const images = { baseline: fileOf(baseline), actual: fileOf(actual), diff: fileOf(diff) };
      (step ?? imported).attachments.push({
        name,
        kind: 'visual-diff',
        ...(diff.contentType ? { contentType: diff.contentType } : {}),
        images,
      });
      continue;
    }
    // The placement rule: see `attachmentStep` in the reporter's mapping.ts.
    const step = attachmentStep(group.attachment.name, steps, tree);
    (step ?? imported).attachments.push(group.attachment);
  }
  return imported;
}

const fileOf = (attachment: ImportedAttachment): ImportedFile => ({
  name: attachment.name,
  ...(attachment.path !== undefined ? { path: attachment.path } : {}),
  ...(attachment.body !== undefined ? { body: attachment.body } : {}),
  ...(attachment.contentType !== undefined ? { contentType: attachment.contentType } : {}),
});

/** Where a step is: its result's status and place in the report, and its own depth (1 at the top). */
interface StepPlace {
  status: string;
  result: string;
  depth: number;
}

function readStep(context: Context, step: Json, place: StepPlace, where: string): ImportedStep {
  const error = isObject(step.error) ? step.error : undefined;
  const message = stepErrorOf(error as Parameters<typeof stepErrorOf>[0]);
  const children = list(context, step, 'steps', where);
  // Refused before the children are read: the walk never goes deeper than the limit.
  if (children.length > 0 && place.depth >= context.maxStepDepth) {
    throw new ImportInputError(
      context.file,
      `${place.result}: steps nest more than ${context.maxStepDepth} levels deep; an import takes at most ${context.maxStepDepth}`,
    );
  }
  const inner: StepPlace = { ...place, depth: place.depth + 1 };
  return {
    title: clip(string(context, step.title, `${where}.title`) || '(untitled step)', STEP_TITLE_MAX),
    status: stepStatusOf(error !== undefined, place.status),
    // Playwright 1.65 writes no start time for a step; a later one may.
    ...(typeof step.startTime === 'string' ? { startedAt: step.startTime } : {}),
    ...(typeof step.duration === 'number' ? { durationMs: milliseconds(step.duration) } : {}),
    ...(message !== undefined ? { error: message } : {}),
    cells: [],
    attachments: [],
    steps: children.map((child, i) => readStep(context, object(context, child, `${where}.steps[${i}]`), inner, `${where}.steps[${i}]`)),
  };
}

/** Run-level cells, in this order: `skipped` (the reason), `error` (every error, formatted by Playwright), `stdout`, `stderr`. */
function resultCells(result: Json, status: string, annotations: Json[]): ImportedCell[] {
  const cells: ImportedCell[] = [];
  const reason = skipReasonOf(status, annotations);
  if (reason) cells.push({ name: 'skipped', text: reason });
  const errors = (Array.isArray(result.errors) ? result.errors : [])
    .filter(isObject)
    .map((e) => stripAnsi(String(e.message ?? e.value ?? '')));
  const error = errorCellText(errors.filter((text) => text !== ''));
  if (error) cells.push({ name: 'error', text: error });
  for (const name of ['stdout', 'stderr'] as const) {
    const items = (Array.isArray(result[name]) ? result[name] : []).filter(isObject);
    const text = stdioText(items as { text?: string; buffer?: string }[]);
    if (text) cells.push({ name, text });
  }
  return cells;
}

function readAttachment(context: Context, raw: Json, where: string): ImportedAttachment | undefined {
  const contentType = typeof raw.contentType === 'string' ? raw.contentType : undefined;
  const name = artifactNameOf(typeof raw.name === 'string' && raw.name !== '' ? raw.name : 'attachment', contentType);
  const attachment: ImportedAttachment = { name, kind: attachmentKind(name, contentType), ...(contentType ? { contentType } : {}) };
  if (typeof raw.body === 'string') return { ...attachment, body: Buffer.from(raw.body, 'base64') };
  if (typeof raw.path === 'string' && raw.path !== '') return { ...attachment, path: raw.path };
  context.warnings.push(`${context.file}: ${where} (${name}) has neither a path nor a body; left out`);
  return undefined;
}

const milliseconds = (value: number) => Math.max(0, Math.round(value));

function object(context: Context, value: unknown, where: string): Json {
  if (!isObject(value)) throw new ImportInputError(context.file, `${where} is not an object`);
  return value;
}

function string(context: Context, value: unknown, where: string): string {
  if (typeof value !== 'string') throw new ImportInputError(context.file, `${where} is not a string`);
  return value;
}

/** An optional array field: absent is empty, anything but an array is malformed. */
function list(context: Context, owner: Json, key: string, where: string): unknown[] {
  const value = owner[key];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new ImportInputError(context.file, `${where}.${key} is not an array`);
  return value;
}
