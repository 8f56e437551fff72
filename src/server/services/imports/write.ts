import { randomUUID } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Static } from 'typebox';
import type { ImportRecord } from '../../../api/v1/imports.ts';
import type { ImportedCase, ImportedStep } from '../../../import/model.ts';
import { type HeldLease, type TaskHold, TaskInterrupted } from '../../background.ts';
import type { ServiceContext } from '../../context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { contentCountsOfJob, findImport, setImportJob, updateOpenImport } from '../../db/repositories/imports.ts';
import { insertJob, markJobClosed } from '../../db/repositories/jobs.ts';
import { runKeysWithPrefix } from '../../db/repositories/runs.ts';
import { assertTaskHeld } from '../../db/repositories/tasks.ts';
import { inDeferredTransaction, inTransaction } from '../../db/repositories/transaction.ts';
import type { Executor, ImportsTable } from '../../db/types.ts';
import type { JobRequest } from '../records/jobs.ts';
import { onJobEnded } from '../records/run-completion.ts';
import { queueImportCompleted } from '../webhooks/events.ts';
import { deliverSoon } from '../webhooks/outbox.ts';
import { type BatchOutcome, ensureTests, type ImportTarget, type PlacedCase, writeCases } from './cases.ts';
import type { ImportOptionsInput, ReadUpload } from './read.ts';

// Writing an accepted import (IMP-4, SCALE-5): its job made once, its cases a batch per transaction
// after those an earlier attempt committed, its end with the job closed; tasks.ts runs it.

const BATCHES_PER_CHECKPOINT = 16; // batches (512 KB of text at most) between two WAL checkpoints on SQLite

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
const BATCH_CHARS = 512 * 1024; /** Errors kept per report file in the import's summary. */
const FILE_ERRORS_MAX = 100;

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
  // Not acknowledged until the import completes, like its batches (inDeferredTransaction).
  const made = inDeferredTransaction(ctx.db, async (trx) => {
    await assertTaskHeld(trx, hold, `import ${row.id}`);
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

type Counts = NonNullable<ImportSummary['counts']>;
type FileSummary = NonNullable<ImportSummary['files']>[number];

/** What an import is written as, once its job and tests are there. */
interface Prepared {
  target: ImportTarget;
  placed: PlacedCase[];
  testsCreated: number;
}

/** What an import has counted so far: carried over from an earlier attempt, added to per batch. */
interface Tally {
  counts: Counts;
  files: Map<string, FileSummary>;
  missing: number;
  rows: { steps: number; cells: number; attachments: number };
}

/** Marks the import processing, makes its job and its tests; undefined once the import ended. */
async function prepare(ctx: ServiceContext, row: ImportsTable, read: ReadUpload, lease: HeldLease): Promise<Prepared | undefined> {
  const options = JSON.parse(row.options) as ImportOptionsInput;
  const started = { status: 'processing', started_at: row.started_at ?? ctx.clock().toISOString() } as const;
  if (!(await updateOpenImport(ctx.db, row.id, started))) return undefined;
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
  return { target, placed, testsCreated };
}

/** The counts and file errors to start from: the upload's, with what an earlier attempt met. */
function startTally(row: ImportsTable, read: ReadUpload, prepared: Prepared): Tally {
  const earlier = row.summary === null ? undefined : (JSON.parse(row.summary) as ImportSummary);
  const counts = emptyCounts();
  counts.reports = read.reports.length;
  counts.tests = prepared.target.testIds.size;
  // A resumed import: the tests its first attempt created count, and the errors that attempt met.
  counts.testsCreated = (earlier?.testsCreated ?? 0) + prepared.testsCreated;
  const files = new Map(
    read.reports.map((r) => [r.file, { file: r.file, format: r.format, runs: r.cases.length, errors: [...r.warnings] }]),
  );
  for (const file of earlier?.files ?? []) {
    const known = files.get(file.file);
    if (known) known.errors = [...new Set([...known.errors, ...file.errors])];
  }
  for (const p of prepared.placed) counts[p.testCase.verdict]++;
  counts.runs = prepared.placed.length;
  return { counts, files, missing: earlier?.attachmentsMissing ?? 0, rows: { steps: 0, cells: 0, attachments: 0 } };
}

/** Notes how far the import got, for its progress while it runs. */
function noteProgress(executor: Executor, row: ImportsTable, tally: Tally, written: number, total: number) {
  const partial: ImportSummary = {
    counts: null,
    files: [...tally.files.values()],
    done: written,
    total,
    testsCreated: tally.counts.testsCreated,
    attachmentsMissing: tally.missing,
  };
  return updateOpenImport(executor, row.id, { summary: JSON.stringify(partial) });
}

/** Adds what a batch wrote to the tally. */
function addOutcome(tally: Tally, outcome: BatchOutcome): void {
  tally.missing += outcome.attachmentsMissing;
  tally.rows.steps += outcome.steps;
  tally.rows.cells += outcome.cells;
  tally.rows.attachments += outcome.attachments;
  for (const problem of outcome.problems) tally.files.get(problem.file)?.errors.push(problem.message);
}

/**
 * Writes one batch in its transaction, with the import's progress once it is written (`done` cases
 * then); runs another writer committed meanwhile interrupt, not fail. The tally takes the batch's
 * outcome before the commit: a commit that fails ends this attempt, and the next starts afresh.
 */
async function writeBatch(
  ctx: ServiceContext,
  { row, read, lease, prepared, tally }: Writing,
  batch: PlacedCase[],
  done: number,
  incidents: 'now' | 'when-the-job-ends',
) {
  const noted = (trx: Executor, outcome: BatchOutcome) => {
    addOutcome(tally, outcome);
    return noteProgress(trx, row, tally, done, prepared.placed.length);
  };
  await writeCases(ctx, prepared.target, batch, read.files, lease, noted, incidents).catch(async (error: unknown) => {
    // Runs of this batch committed by another writer (their keys are unique): resumed with a fresh look, not failed.
    const committed = isUniqueViolation(error) ? await runKeysWithPrefix(ctx.db, row.project_id, `import:${row.id}:`) : undefined;
    throw batch.some((p) => committed?.has(`import:${row.id}:${p.index}`)) ? new TaskInterrupted(`import ${row.id}`) : error;
  });
}

/** What writing an import works with. */
interface Writing {
  row: ImportsTable;
  read: ReadUpload;
  lease: HeldLease;
  prepared: Prepared;
  tally: Tally;
}

/**
 * Writes the cases no earlier attempt committed (on any instance), a batch per transaction; true
 * when some had been (the import is resumed).
 */
async function writeRemaining(ctx: ServiceContext, writing: Writing): Promise<boolean> {
  const { row, lease, prepared, tally } = writing;
  const { placed } = prepared;
  const done = await runKeysWithPrefix(ctx.db, row.project_id, `import:${row.id}:`);
  const todo = placed.filter((p) => !done.has(`import:${row.id}:${p.index}`));
  let written = placed.length - todo.length;
  await noteProgress(ctx.db, row, tally, written, placed.length);
  const resumed = written > 0;
  let batchesSinceCheckpoint = 0;
  let batches = 0;
  for (const batch of batchesOf(todo)) {
    // Stopping, or the lease lost: the batches written so far stay; the next claimer resumes after them.
    if (!lease.stillHeld()) throw new TaskInterrupted(`import ${row.id}`);
    written += batch.length;
    await writeBatch(ctx, writing, batch, written, incidentsAfter(++batches));
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
  return resumed;
}

/**
 * Whether the job's outage guard (TRIAGE-4) is looked at after the `n`th batch: after the 1st, 2nd,
 * 4th, 8th… and once more when the import ends. Counting the job's failed tests costs the failures
 * written so far; after every batch, a 150,000-case import read them 600 times (quadratic), while
 * an outage, a cause that fails most tests, shows from the first batches, and its incident is
 * then kept as the runs come (their health leaves the job's runs out as they are written).
 */
const incidentsAfter = (n: number): 'now' | 'when-the-job-ends' => ((n & (n - 1)) === 0 ? 'now' : 'when-the-job-ends');

/** Ends the import with its summary and closes its job, in one transaction with their webhook events. */
async function finish(ctx: ServiceContext, row: ImportsTable, lease: HeldLease, jobId: string, summary: ImportSummary): Promise<void> {
  const finishedAt = ctx.clock().toISOString();
  // The job is closed with the import, in one transaction: its runs are all there (JOB-1).
  // Its webhook events (import.completed, job.completed) go into the outbox with it (HOOK-3).
  const queued = await inTransaction(ctx.db, async (trx) => {
    await assertTaskHeld(trx, lease, `import ${row.id}`);
    const ended = { status: 'completed', summary: JSON.stringify(summary), finished_at: finishedAt } as const;
    if (!(await updateOpenImport(trx, row.id, ended))) return false;
    await markJobClosed(trx, jobId, finishedAt);
    await onJobEnded(ctx, trx, jobId);
    return queueImportCompleted(ctx, trx, { id: row.id, project_id: row.project_id, job_id: jobId });
  });
  if (queued) deliverSoon(ctx);
}

/**
 * Writes an accepted import's job from its upload read again (import-tasks.ts runs it), a batch per
 * transaction, after the batches an earlier attempt committed; stops between two batches once the
 * lease is no longer held, and writes nothing once the task is another runner's (`assertTaskHeld`).
 * An import that ended meanwhile (`row` is read before the slow reading) is left as it is.
 */
export async function writeImport(ctx: ServiceContext, row: ImportsTable, read: ReadUpload, lease: HeldLease): Promise<void> {
  const prepared = await prepare(ctx, row, read, lease);
  if (!prepared) return;
  const tally = startTally(row, read, prepared);
  const resumed = await writeRemaining(ctx, { row, read, lease, prepared, tally });
  const { counts, files, missing, rows } = tally;
  const { jobId } = prepared.target;
  // What the job holds: the rows this process wrote, or, for an import resumed after a crash (whose
  // first attempt's batches are not all known), counted from the job's rows. Counting reads every
  // cell of the job, on SQLite on the event loop (about a second for 60 MB of cells).
  Object.assign(counts, resumed ? await contentCountsOfJob(ctx.db, jobId) : rows, { attachmentsMissing: missing });
  const summary: ImportSummary = {
    counts,
    files: [...files.values()].map((f) => ({ ...f, errors: f.errors.slice(0, FILE_ERRORS_MAX) })),
    done: prepared.placed.length,
    total: prepared.placed.length,
  };
  await finish(ctx, row, lease, jobId, summary);
}
