import { createHash, randomUUID } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import type { Static } from 'typebox';
import type { ImportOptions, ImportRecord } from '../../api/v1/imports.ts';
import { TEST_FULL_NAME_MAX } from '../../api/v1/runs.ts';
import { readArchive } from '../../import/archive.ts';
import { looksLikeJUnit, parseJUnit } from '../../import/junit.ts';
import { type ImportedReport, ImportInputError } from '../../import/model.ts';
import { parsePlaywright } from '../../import/playwright.ts';
import type { AppContext } from '../context.ts';
import { isUniqueViolation } from '../db/errors.ts';
import type { Page, PageRequest } from '../db/pagination.ts';
import {
  findImport,
  findImportByIdempotencyKey,
  insertImport,
  listImports as listImportRows,
  unfinishedImports,
  updateImport,
} from '../db/repositories/imports.ts';
import { insertJob } from '../db/repositories/jobs.ts';
import { runKeysWithPrefix } from '../db/repositories/runs.ts';
import { inTransaction } from '../db/repositories/transaction.ts';
import type { ImportsTable } from '../db/types.ts';
import { AppError, found } from '../errors.ts';
import { type ImportTarget, type PlacedCase, writeCases } from './import-writer.ts';
import type { JobRequest } from './jobs.ts';
import { ensureTestsByFullName } from './tests.ts';

// Imports of test reports (docs/imports.md): the upload is read and checked whole before anything
// is stored (IMP-5), kept as a blob with its import row (202), then written as a job of completed
// runs in the background, a batch of cases per transaction, resumable after a restart (IMP-4).

export type ImportOptionsInput = Static<typeof ImportOptions>;
/** What `imports.summary` holds: the counts and files once done, and how far it got meanwhile. */
type ImportSummary = Pick<Static<typeof ImportRecord>, 'counts' | 'files'> & { done: number; total: number };
export type SourceType = ImportsTable['source_type'];

/** Most runs one import may make: far above real suites, and a bound on one upload's work. */
export const IMPORT_RUNS_MAX = 100_000;
/** Cases written per transaction: short enough not to hold the writer long, large enough to be cheap. */
const BATCH_CASES = 250;
/** Errors kept per report file in the import's summary. */
const FILE_ERRORS_MAX = 100;

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

const isPlaywrightCandidate = (bytes: Uint8Array) => {
  const head = Buffer.from(bytes.subarray(0, 4096)).toString('utf8');
  return head.includes('"config"') || head.includes('"suites"');
};

function readReports(upload: Pick<ImportUpload, 'fileName' | 'bytes' | 'type' | 'options'>, limits: AppContext['config']): ReadUpload {
  const format = upload.options.format ?? 'auto';
  if (upload.type === 'xml') {
    if (format === 'playwright') throw new ImportInputError(upload.fileName, 'is XML; a Playwright report is JSON');
    return { reports: [parseJUnit(upload.fileName, upload.bytes)], files: new Map() };
  }
  if (upload.type === 'json') {
    if (format === 'junit') throw new ImportInputError(upload.fileName, 'is JSON; JUnit reports are XML');
    return { reports: [parsePlaywright(upload.fileName, upload.bytes)], files: new Map() };
  }
  const files = readArchive(upload.fileName, upload.bytes, {
    maxEntries: limits.maxImportEntries,
    maxExpandedBytes: limits.maxImportExpandedBytes,
  });
  const reports: ImportedReport[] = [];
  for (const [name, bytes] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const lower = name.toLowerCase();
    if (lower.endsWith('.xml') && format !== 'playwright' && looksLikeJUnit(bytes)) reports.push(parseJUnit(name, bytes));
    else if (lower.endsWith('.json') && format !== 'junit' && isPlaywrightCandidate(bytes)) reports.push(parsePlaywright(name, bytes));
  }
  if (reports.length === 0) {
    throw new ImportInputError(upload.fileName, 'holds no JUnit XML (*.xml) or Playwright JSON report (*.json)');
  }
  return { reports, files };
}

/** Reads and checks a whole upload; any fault is a 400 naming the file, before anything is stored (IMP-5). */
export function readUpload(ctx: AppContext, upload: ImportUpload): ReadUpload {
  let read: ReadUpload;
  try {
    read = readReports(upload, ctx.config);
  } catch (error) {
    if (error instanceof ImportInputError) throw new AppError('INVALID_INPUT', error.message);
    throw error;
  }
  const runs = read.reports.reduce((sum, report) => sum + report.cases.length, 0);
  if (runs > IMPORT_RUNS_MAX)
    throw new AppError('INVALID_INPUT', `The upload holds ${runs} test cases; an import takes at most ${IMPORT_RUNS_MAX}.`);
  return read;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Uploads read at acceptance, handed to the background writer so it need not read them again. */
const readAtAcceptance = new Map<string, ReadUpload>();

/**
 * Accepts an import: checks the whole upload, keeps its bytes as a blob and records the import
 * (`queued`); `queueImport` then starts the writing of its job. With an idempotency key used before, the same
 * file answers the import it started (`created: false`); another file is a 409.
 */
export async function startImport(
  ctx: AppContext,
  input: { projectId: string; actorId: string; upload: ImportUpload },
): Promise<{ record: ImportsTable; created: boolean }> {
  const { projectId, upload } = input;
  const digest = sha256(upload.bytes);
  const key = upload.options.idempotencyKey;
  const replay = async () => {
    const earlier = key === undefined ? undefined : await findImportByIdempotencyKey(ctx.db, projectId, key);
    if (earlier && earlier.source_sha256 !== digest) {
      throw new AppError('STATE_CONFLICT', 'This idempotencyKey was already used in the project for another file.');
    }
    return earlier;
  };
  const earlier = await replay();
  if (earlier) return { record: earlier, created: false };

  const read = readUpload(ctx, upload);
  const blob = await ctx.blobs.put(
    (async function* () {
      yield upload.bytes;
    })(),
  );
  const record: ImportsTable = {
    id: randomUUID(),
    project_id: projectId,
    job_id: null,
    status: 'queued',
    file_name: upload.fileName.slice(0, 256),
    source_type: upload.type,
    source_sha256: blob.sha256,
    source_size: upload.bytes.length,
    options: JSON.stringify(upload.options),
    summary: null,
    error: null,
    idempotency_key: key ?? null,
    created_at: ctx.clock().toISOString(),
    started_at: null,
    finished_at: null,
    created_by: input.actorId,
  };
  try {
    await insertImport(ctx.db, record);
  } catch (error) {
    // A concurrent retry with the same key committed first.
    const winner = isUniqueViolation(error) ? await replay() : undefined;
    if (winner) return { record: winner, created: false };
    throw error;
  } finally {
    blob.release();
  }
  readAtAcceptance.set(record.id, read);
  return { record, created: true };
}

/** Queues the writing of an accepted import's job: the route does once its 202 has gone out. */
export function queueImport(ctx: AppContext, importId: string): void {
  ctx.background.push(`import ${importId}`, () => runImport(ctx, importId));
}

/** A stop reached an import between two batches; it stays unfinished and resumes at the next start. */
class Interrupted extends Error {}

/** Writes an accepted import's job; a failure marks the import failed with the reason. */
export async function runImport(ctx: AppContext, importId: string): Promise<void> {
  const read = readAtAcceptance.get(importId);
  readAtAcceptance.delete(importId);
  const row = await findImport(ctx.db, importId);
  if (!row || row.status === 'completed' || row.status === 'failed') return;
  try {
    await writeImport(ctx, row, read ?? (await readAgain(ctx, row)));
  } catch (error) {
    if (error instanceof Interrupted) return;
    ctx.log.error({ err: error, importId }, 'an import failed');
    const message = error instanceof AppError ? error.message : 'The import failed on the server; see its log.';
    await updateImport(ctx.db, importId, { status: 'failed', error: message, finished_at: ctx.clock().toISOString() });
  }
}

/** An import resumed after a restart: its upload read again from the blob kept at acceptance. */
async function readAgain(ctx: AppContext, row: ImportsTable): Promise<ReadUpload> {
  const source = await ctx.blobs.get(row.source_sha256);
  if (!source) throw new AppError('UNAVAILABLE', 'The uploaded report is no longer stored; upload it again.');
  const bytes = await buffer(source);
  return readUpload(ctx, { fileName: row.file_name, bytes, type: row.source_type, options: JSON.parse(row.options) });
}

/** Imports acknowledged before a restart but not finished: queued again, in the order they came. */
export async function resumeImports(ctx: AppContext): Promise<number> {
  const rows = await unfinishedImports(ctx.db);
  for (const row of rows) queueImport(ctx, row.id);
  return rows.length;
}

function emptyCounts(): NonNullable<ImportSummary['counts']> {
  return {
    reports: 0,
    tests: 0,
    testsCreated: 0,
    runs: 0,
    passed: 0,
    failed: 0,
    broken: 0,
    skipped: 0,
    steps: 0,
    cells: 0,
    attachments: 0,
    attachmentsMissing: 0,
  };
}

/** The job an import becomes, created once: a resumed import finds the one it made. */
async function jobOf(ctx: AppContext, row: ImportsTable, read: ReadUpload, options: ImportOptionsInput): Promise<string> {
  if (row.job_id) return row.job_id;
  const jobId = randomUUID();
  const request: JobRequest & { importId: string } = {
    testIds: [],
    deviceIds: [],
    deviceLabels: [],
    environment: options.environment ?? null,
    branch: options.branch ?? null,
    build: options.build ?? null,
    commit: options.commit ?? null,
    importId: row.id,
  };
  const name = (options.name ?? read.reports.find((r) => r.name)?.name ?? row.file_name).slice(0, 256) || 'Import';
  await inTransaction(ctx.db, async (trx) => {
    await insertJob(trx, {
      id: jobId,
      project_id: row.project_id,
      name,
      request: JSON.stringify(request),
      cancelled_at: null,
      created_at: ctx.clock().toISOString(),
      created_by: row.created_by,
      idempotency_key: null,
      idempotency_fingerprint: null,
    });
    await updateImport(trx, row.id, { job_id: jobId });
  });
  return jobId;
}

async function writeImport(ctx: AppContext, row: ImportsTable, read: ReadUpload): Promise<void> {
  const options = JSON.parse(row.options) as ImportOptionsInput;
  await updateImport(ctx.db, row.id, { status: 'processing', started_at: row.started_at ?? ctx.clock().toISOString() });
  const jobId = await jobOf(ctx, row, read, options);
  const now = ctx.clock().toISOString();
  const placed: PlacedCase[] = read.reports.flatMap((report) => report.cases.map((testCase) => ({ report, testCase, index: 0 })));
  placed.forEach((p, i) => {
    p.index = i;
  });
  // A test is named by at most TEST_FULL_NAME_MAX characters, as a run created with `testName` is.
  for (const p of placed) p.testCase.fullName = p.testCase.fullName.slice(0, TEST_FULL_NAME_MAX);
  const fullNames = placed.map((p) => p.testCase.fullName);
  const { ids: testIds, created: testsCreated } = await ensureTestsByFullName(ctx.db, {
    projectId: row.project_id,
    fullNames,
    actorId: row.created_by,
    now,
  });
  const target: ImportTarget = {
    importId: row.id,
    projectId: row.project_id,
    jobId,
    actorId: row.created_by,
    now,
    labels: { environment: options.environment, branch: options.branch, build: options.build, commit: options.commit },
    testIds,
  };
  const counts = emptyCounts();
  counts.reports = read.reports.length;
  counts.tests = testIds.size;
  counts.testsCreated = testsCreated;
  const files = new Map(
    read.reports.map((r) => [r.file, { file: r.file, format: r.format, runs: r.cases.length, errors: [...r.warnings] }]),
  );
  for (const p of placed) counts[p.testCase.verdict]++;
  counts.runs = placed.length;

  // A resumed import skips the cases whose runs committed before the restart.
  const done = await runKeysWithPrefix(ctx.db, row.project_id, `import:${row.id}:`);
  const todo = placed.filter((p) => !done.has(`import:${row.id}:${p.index}`));
  const progress = (written: number) =>
    updateImport(ctx.db, row.id, { summary: JSON.stringify({ counts: null, files: [], done: written, total: placed.length }) });
  await progress(placed.length - todo.length);
  for (let i = 0; i < todo.length; i += BATCH_CASES) {
    // Stopping: the batches written so far stay; the next start resumes after them.
    if (ctx.background.stopping) throw new Interrupted();
    const outcome = await writeCases(ctx, target, todo.slice(i, i + BATCH_CASES), read.files);
    counts.steps += outcome.steps;
    counts.cells += outcome.cells;
    counts.attachments += outcome.attachments;
    counts.attachmentsMissing += outcome.problems.length;
    for (const problem of outcome.problems) files.get(problem.file)?.errors.push(problem.message);
    await progress(placed.length - todo.length + Math.min(i + BATCH_CASES, todo.length));
    ctx.crashPoint('import-after-batch');
  }
  const summary: ImportSummary = {
    counts,
    files: [...files.values()].map((f) => ({ ...f, errors: f.errors.slice(0, FILE_ERRORS_MAX) })),
    done: placed.length,
    total: placed.length,
  };
  await updateImport(ctx.db, row.id, { status: 'completed', summary: JSON.stringify(summary), finished_at: ctx.clock().toISOString() });
}

export async function getImport(ctx: AppContext, importId: string): Promise<ImportsTable> {
  return found(await findImport(ctx.db, importId), 'The import');
}

export const listImports = (ctx: AppContext, projectId: string, page: PageRequest): Promise<Page<ImportsTable>> =>
  listImportRows(ctx.db, projectId, page);
