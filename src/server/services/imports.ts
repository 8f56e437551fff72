import { createHash, randomUUID } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Static } from 'typebox';
import type { ImportRecord } from '../../api/v1/imports.ts';
import type { ImportedCase, ImportedStep } from '../../import/model.ts';
import { TaskInterrupted } from '../background.ts';
import type { ServiceContext } from '../context.ts';
import { isUniqueViolation } from '../db/errors.ts';
import type { Page, PageRequest } from '../db/pagination.ts';
import {
  contentCountsOfJob,
  findImport,
  findImportByIdempotencyKey,
  insertImport,
  listImports as listImportRows,
  setImportJob,
  updateImport,
  updateOpenImport,
} from '../db/repositories/imports.ts';
import { insertJob, markJobClosed } from '../db/repositories/jobs.ts';
import { runKeysWithPrefix } from '../db/repositories/runs.ts';
import { enqueueTask } from '../db/repositories/tasks.ts';
import { inTransaction } from '../db/repositories/transaction.ts';
import type { ImportsTable } from '../db/types.ts';
import { AppError, found } from '../errors.ts';
import { canonicalJson } from './fingerprint.ts';
import { checkAndStoreUpload, type ImportOptionsInput, type ImportUpload, type ReadUpload } from './import-reading.ts';
import {
  assertTaskHeld,
  ensureTests,
  type ImportLease,
  type ImportTarget,
  type PlacedCase,
  type TaskHold,
  writeCases,
} from './import-writer.ts';
import type { JobRequest } from './jobs.ts';
import { queueImportCompleted } from './webhook-events.ts';
import { deliverSoon } from './webhook-outbox.ts';

const BATCHES_PER_CHECKPOINT = 16; // batches (512 KB of text at most) between two WAL checkpoints on SQLite

// Imports of test reports (docs/imports.md): the upload is read and checked whole before anything
// is stored (IMP-5), kept as a blob with its import row and its background task (202), then written
// as a job of completed runs by whichever instance claims the task, a batch of cases per
// transaction, resumed by another instance when the one writing it dies (IMP-4, SCALE-5).

/** The kind of the background task that writes an import; its key is `import:<id>`. */
export const IMPORT_TASK = 'import';

/** What `imports.summary` holds: the counts and files once done, and how far it got meanwhile. */
type ImportSummary = Pick<Static<typeof ImportRecord>, 'counts' | 'files'> & {
  done: number;
  total: number;
  /** Noted as it goes, so a resumed import still counts what its first attempt did. */
  testsCreated?: number;
  attachmentsMissing?: number;
};
/** Cases written per transaction: short enough not to hold the writer long, large enough to be cheap. */
const BATCH_CASES = 250;
/**
 * Text (characters of cells, step titles and errors) and inline bytes per transaction, about: a
 * batch of cases with long output is cut short, so one transaction (synchronous on SQLite) never
 * holds the event loop for long (IMP-7). A case is never split: its run commits whole.
 */
const BATCH_CHARS = 512 * 1024;
/** Bytes hashed per turn of the event loop. */
const HASH_SLICE_BYTES = 4 * 1024 * 1024;
/** Errors kept per report file in the import's summary. */
const FILE_ERRORS_MAX = 100;

/** A large upload's SHA-256, a slice per turn of the event loop (60 MB at once would hold it for about 50 ms). */
async function sha256(bytes: Uint8Array): Promise<string> {
  const hash = createHash('sha256');
  for (let at = 0; at < bytes.length; at += HASH_SLICE_BYTES) {
    if (at > 0) await nextTurn();
    hash.update(bytes.subarray(at, at + HASH_SLICE_BYTES));
  }
  return hash.digest('hex');
}

/** A case's size as a transaction writes it, about: its texts and inline bytes. */
function caseChars(testCase: ImportedCase): number {
  const ofStep = (step: ImportedStep): number =>
    step.title.length +
    (step.error?.length ?? 0) +
    step.cells.reduce((sum, cell) => sum + cell.text.length, 0) +
    step.attachments.reduce((sum, attachment) => sum + (attachment.body?.byteLength ?? 0), 0) +
    step.steps.reduce((sum, child) => sum + ofStep(child), 0);
  return (
    testCase.cells.reduce((sum, cell) => sum + cell.text.length, 0) +
    testCase.attachments.reduce((sum, attachment) => sum + (attachment.body?.byteLength ?? 0), 0) +
    testCase.steps.reduce((sum, step) => sum + ofStep(step), 0)
  );
}

/** The cases in order, cut into transactions of at most BATCH_CASES cases and about BATCH_CHARS of text. */
function* batchesOf(cases: readonly PlacedCase[]): Generator<PlacedCase[]> {
  let batch: PlacedCase[] = [];
  let chars = 0;
  for (const placed of cases) {
    const size = caseChars(placed.testCase);
    if (batch.length > 0 && (batch.length >= BATCH_CASES || chars + size > BATCH_CHARS)) {
      yield batch;
      batch = [];
      chars = 0;
    }
    batch.push(placed);
    chars += size;
  }
  if (batch.length > 0) yield batch;
}

/**
 * Accepts an import: checks the whole upload, keeps its bytes as a blob and records the import
 * (`queued`) with the task that writes its job, in one transaction: once acknowledged, any instance
 * finishes it whatever happens to this one. `queueImport` then wakes this instance's runner. With an
 * idempotency key used before, the same file answers the import it started (`created: false`);
 * another file is a 409.
 */
export async function startImport(
  ctx: ServiceContext,
  input: { projectId: string; actorId: string; upload: ImportUpload },
): Promise<{ record: ImportsTable; created: boolean }> {
  const { projectId, upload } = input;
  const digest = await sha256(upload.bytes);
  const key = upload.options.idempotencyKey;
  // The same upload is the same file with the same options: a retry. Anything else reusing the key is a 409.
  const sameUpload = (row: ImportsTable) =>
    row.source_sha256 === digest && canonicalJson(JSON.parse(row.options)) === canonicalJson(upload.options);
  const replay = async () => {
    const earlier = key === undefined ? undefined : await findImportByIdempotencyKey(ctx.db, projectId, key);
    if (earlier && !sameUpload(earlier)) {
      throw new AppError('STATE_CONFLICT', 'This idempotencyKey was already used in the project for another file or other options.');
    }
    return earlier;
  };
  const earlier = await replay();
  if (earlier?.status === 'failed') {
    // A failed import gives its key up: sending the same upload again is how it is retried.
    await updateImport(ctx.db, earlier.id, { idempotency_key: null });
  } else if (earlier) {
    return { record: earlier, created: false };
  }

  // Checked in a worker, then kept as a blob from the bytes that worker hands back: a large body moves
  // to the worker, and is not in this thread while the import is read again and written (IMP-7).
  const size = upload.bytes.length;
  const blob = await checkAndStoreUpload(ctx, upload, (chunks) => ctx.blobs.put(chunks));
  if (blob.sha256 !== digest || blob.size !== size) {
    blob.release();
    throw new Error(`the upload kept (${blob.size} bytes, ${blob.sha256}) is not the upload received (${size} bytes, ${digest})`);
  }
  const record: ImportsTable = {
    id: randomUUID(),
    project_id: projectId,
    job_id: null,
    status: 'queued',
    file_name: upload.fileName.replaceAll('\0', '').slice(0, 256) || 'report',
    source_type: upload.type,
    source_sha256: blob.sha256,
    source_size: size,
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
    await inTransaction(ctx.db, async (trx) => {
      await insertImport(trx, record);
      const now = ctx.background.time();
      await enqueueTask(trx, {
        kind: IMPORT_TASK,
        key: `import:${record.id}`,
        payload: JSON.stringify({ importId: record.id }),
        runAt: now,
        now,
      });
    });
  } catch (error) {
    // A concurrent retry with the same key committed first.
    const winner = isUniqueViolation(error) ? await replay() : undefined;
    if (winner) return { record: winner, created: false };
    throw error;
  } finally {
    blob.release();
  }
  // An idle instance may start it at once; this one wakes its own runner once the 202 is out.
  ctx.background.announce();
  return { record, created: true };
}

/**
 * Starts writing an accepted import on this instance once its 202 has gone out (the route calls
 * it then): its task was stored with it, and this wakes the local runner, so the answer never
 * waits behind the first batch. Another instance may have claimed it already; then this finds nothing.
 */
export function queueImport(ctx: ServiceContext, _importId: string): void {
  ctx.background.wake();
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

/** Rolls back the making of a job that another attempt made first. */
const JOB_MADE_ALREADY = new Error('the import has its job already');

/**
 * The job an import becomes, created once: a resumed import finds the one it made, and so does an
 * attempt that read `row` before another gave the import its job (the stored one wins).
 */
async function jobOf(ctx: ServiceContext, row: ImportsTable, name: string, options: ImportOptionsInput, hold: TaskHold): Promise<string> {
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
    targetBranch: options.targetBranch ?? null,
    importId: row.id,
  };
  const made = inTransaction(ctx.db, async (trx) => {
    await assertTaskHeld(trx, hold, row.id);
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
      // Open while the import writes it, a batch at a time; closed when the import ends (JOB-1).
      closed_at: null,
      ci_url: options.ciUrl ?? null,
      incident_group_id: null,
      incident_failed_runs: null,
      branch: request.branch,
      build: request.build,
    });
    if (!(await setImportJob(trx, row.id, jobId))) throw JOB_MADE_ALREADY;
  });
  return made.then(
    () => jobId,
    async (error: unknown) => {
      if (error !== JOB_MADE_ALREADY) throw error;
      return (await findImport(ctx.db, row.id))?.job_id as string;
    },
  );
}

/**
 * Writes an accepted import's job from its upload read again (import-tasks.ts runs it), a batch per
 * transaction, after the batches an earlier attempt committed; stops between two batches once the
 * lease is no longer held, and writes nothing once the task is another runner's (`assertTaskHeld`).
 * An import that ended meanwhile (`row` is read before the slow reading) is left as it is.
 */
export async function writeImport(ctx: ServiceContext, row: ImportsTable, read: ReadUpload, lease: ImportLease): Promise<void> {
  const options = JSON.parse(row.options) as ImportOptionsInput;
  const started = { status: 'processing', started_at: row.started_at ?? ctx.clock().toISOString() } as const;
  if (!(await updateOpenImport(ctx.db, row.id, started))) return;
  const name = (options.name ?? read.reports.find((r) => r.name)?.name ?? row.file_name).slice(0, 256) || 'Import';
  const jobId = await jobOf(ctx, row, name, options, lease);
  const now = ctx.clock().toISOString();
  const placed: PlacedCase[] = read.reports.flatMap((report) => report.cases.map((testCase) => ({ report, testCase, index: 0 })));
  placed.forEach((p, i) => {
    p.index = i;
  });
  const { ids: testIds, versions: testVersions, created: testsCreated } = await ensureTests(ctx, row, placed, now);
  const target: ImportTarget = {
    importId: row.id,
    projectId: row.project_id,
    jobId,
    actorId: row.created_by,
    now,
    labels: { environment: options.environment, branch: options.branch, build: options.build, commit: options.commit },
    ciUrl: options.ciUrl ?? null,
    testIds,
    testVersions,
  };
  const earlier = row.summary === null ? undefined : (JSON.parse(row.summary) as ImportSummary);
  const counts = emptyCounts();
  counts.reports = read.reports.length;
  counts.tests = testIds.size;
  // A resumed import: the tests its first attempt created count, and the errors that attempt met.
  counts.testsCreated = (earlier?.testsCreated ?? 0) + testsCreated;
  const files = new Map(
    read.reports.map((r) => [r.file, { file: r.file, format: r.format, runs: r.cases.length, errors: [...r.warnings] }]),
  );
  for (const file of earlier?.files ?? []) {
    const known = files.get(file.file);
    if (known) known.errors = [...new Set([...known.errors, ...file.errors])];
  }
  let missing = earlier?.attachmentsMissing ?? 0;
  for (const p of placed) counts[p.testCase.verdict]++;
  counts.runs = placed.length;

  // A resumed import skips the cases whose runs committed in an earlier attempt (on any instance).
  const done = await runKeysWithPrefix(ctx.db, row.project_id, `import:${row.id}:`);
  const todo = placed.filter((p) => !done.has(`import:${row.id}:${p.index}`));
  const progress = (written: number) => {
    const partial: ImportSummary = {
      counts: null,
      files: [...files.values()],
      done: written,
      total: placed.length,
      testsCreated: counts.testsCreated,
      attachmentsMissing: missing,
    };
    return updateOpenImport(ctx.db, row.id, { summary: JSON.stringify(partial) });
  };
  await progress(placed.length - todo.length);
  let written = placed.length - todo.length;
  const resumed = written > 0;
  const rows = { steps: 0, cells: 0, attachments: 0 };
  let batchesSinceCheckpoint = 0;
  for (const batch of batchesOf(todo)) {
    // Stopping, or the lease lost: the batches written so far stay; the next claimer resumes after them.
    if (!lease.stillHeld()) throw new TaskInterrupted(`import ${row.id}`);
    const outcome = await writeCases(ctx, target, batch, read.files, lease).catch(async (error: unknown) => {
      // Runs of this batch committed by another writer (their keys are unique): resumed with a fresh look, not failed.
      const committed = isUniqueViolation(error) ? await runKeysWithPrefix(ctx.db, row.project_id, `import:${row.id}:`) : undefined;
      throw batch.some((p) => committed?.has(`import:${row.id}:${p.index}`)) ? new TaskInterrupted(`import ${row.id}`) : error;
    });
    missing += outcome.attachmentsMissing;
    rows.steps += outcome.steps;
    rows.cells += outcome.cells;
    rows.attachments += outcome.attachments;
    for (const problem of outcome.problems) files.get(problem.file)?.errors.push(problem.message);
    written += batch.length;
    await progress(written);
    ctx.crashPoint('import-after-batch');
    // Requests waiting behind the batch go first. On SQLite a WAL checkpoint (its worker's) is asked
    // for every few batches and awaited, so the WAL restarts: a 60 MB import grew it past the serving
    // connection's backstop checkpoint, which synced 64 MB on the event loop (a 250-300 ms stall).
    await nextTurn();
    if (++batchesSinceCheckpoint >= BATCHES_PER_CHECKPOINT) {
      batchesSinceCheckpoint = 0;
      ctx.database.checkpointer?.tick();
    }
    await ctx.database.checkpointer?.idle();
  }
  // What the job holds: the rows this process wrote, or, for an import resumed after a crash (whose
  // first attempt's batches are not all known), counted from the job's rows. Counting reads every
  // cell of the job, on SQLite on the event loop (about a second for 60 MB of cells).
  Object.assign(counts, resumed ? await contentCountsOfJob(ctx.db, jobId) : rows, { attachmentsMissing: missing });
  const summary: ImportSummary = {
    counts,
    files: [...files.values()].map((f) => ({ ...f, errors: f.errors.slice(0, FILE_ERRORS_MAX) })),
    done: placed.length,
    total: placed.length,
  };
  const finishedAt = ctx.clock().toISOString();
  // The job is closed with the import, in one transaction: its runs are all there (JOB-1).
  // Its webhook events (import.completed, job.completed) go into the outbox with it (HOOK-3).
  const queued = await inTransaction(ctx.db, async (trx) => {
    await assertTaskHeld(trx, lease, row.id);
    const ended = { status: 'completed', summary: JSON.stringify(summary), finished_at: finishedAt } as const;
    if (!(await updateOpenImport(trx, row.id, ended))) return false;
    await markJobClosed(trx, jobId, finishedAt);
    return queueImportCompleted(ctx, trx, { id: row.id, project_id: row.project_id, job_id: jobId });
  });
  if (queued) deliverSoon(ctx);
}

export async function getImport(ctx: ServiceContext, importId: string): Promise<ImportsTable> {
  return found(await findImport(ctx.db, importId), 'The import');
}

export const listImports = (ctx: ServiceContext, projectId: string, page: PageRequest): Promise<Page<ImportsTable>> =>
  listImportRows(ctx.db, projectId, page);
