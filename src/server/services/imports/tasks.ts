import { type HeldLease, type Task, type TaskHold, TaskInterrupted, TaskTimedOut } from '../../background.ts';
import type { ServiceContext } from '../../context.ts';
import { findImport, updateOpenImport } from '../../db/repositories/imports.ts';
import { markJobClosed } from '../../db/repositories/jobs.ts';
import { assertTaskHeld } from '../../db/repositories/tasks.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { ImportsTable } from '../../db/types.ts';
import { AppError } from '../../errors.ts';
import { onJobEnded } from '../records/run-completion.ts';
import { IMPORT_TASK } from './accept.ts';
import { type ReadUpload, readUpload } from './read.ts';
import { writeImport } from './write.ts';

// The background half of imports (IMP-4, SCALE-5): the task stored with an accepted import, run
// by whichever instance claims it, reads the kept upload again and writes the job (imports.ts).

/** Registers the writing of imports with the background runner (from the catalogue, background-tasks.ts). */
export function handleImportTasks(ctx: ServiceContext): void {
  const importIdOf = (task: Task) => (task.payload as { importId: string }).importId;
  const holdOf = (task: Task): TaskHold => ({ taskId: task.id, owner: ctx.background.instanceId });
  ctx.background.handle(IMPORT_TASK, (task, lease) => runImport(ctx, importIdOf(task), { ...lease, ...holdOf(task) }), {
    // Past its time limit (SCALE-9), or claimed again and again without finishing: each attempt
    // died with its instance, or its failure could not even be recorded. Marked failed, with the
    // reason, so it is not `queued` or `processing` forever.
    gaveUp: (task, cause) => markImportFailed(ctx, importIdOf(task), gaveUpReason(cause), holdOf(task)),
  });
}

function gaveUpReason(cause: unknown): string {
  if (cause instanceof TaskTimedOut) {
    return `The import ran past the time limit of a background task (${cause.limitMs / 1000} s, ATTEST_TASK_TIMEOUT_SECONDS) and was stopped.`;
  }
  return 'The import did not finish after several attempts; upload it again.';
}

/**
 * Writes an accepted import's job; a failure marks the import failed with the reason. When the
 * lease is lost or the instance stops, it stops between two batches and throws TaskInterrupted:
 * the batches written so far stay, and whoever claims the task next resumes after them.
 */
export async function runImport(ctx: ServiceContext, importId: string, lease: HeldLease): Promise<void> {
  const row = await findImport(ctx.db, importId);
  if (!row || row.status === 'completed' || row.status === 'failed') return;
  try {
    // Read again from the kept upload rather than held in memory since acceptance: a queue of large
    // uploads would otherwise hold all of them expanded at once.
    await writeImport(ctx, row, await readAgain(ctx, row, lease.signal), lease);
  } catch (error) {
    // A write that failed after the lease was lost may have met the successor's rows (the runs'
    // unique keys keep every case once): the import is the successor's to finish, not to fail.
    if (error instanceof TaskInterrupted || !lease.stillHeld()) throw new TaskInterrupted(`import ${importId}`);
    ctx.log.error({ err: error, importId }, 'an import failed');
    const reason = error instanceof AppError ? error.message : 'The import failed on the server; see its log.';
    await markImportFailed(ctx, importId, reason, lease);
  }
}

/**
 * Marks an import failed while its task is still this runner's, unless it ended already (another
 * attempt completed it); its job holds what was written before the failure, and gets nothing more: closed too.
 */
async function markImportFailed(ctx: ServiceContext, importId: string, message: string, hold: TaskHold): Promise<void> {
  const finishedAt = ctx.clock().toISOString();
  await inTransaction(ctx.db, async (trx) => {
    await assertTaskHeld(trx, hold, `import ${importId}`);
    if (!(await updateOpenImport(trx, importId, { status: 'failed', error: message, finished_at: finishedAt }))) return;
    const jobId = (await findImport(trx, importId))?.job_id;
    if (!jobId) return;
    await markJobClosed(trx, jobId, finishedAt);
    await onJobEnded(ctx, trx, jobId);
  });
}

/**
 * An import's upload, read again from the blob kept at acceptance: streamed from the store into
 * the worker, never whole in this thread. Once `signal` aborts (the task's lease: its time limit,
 * a lost lease, a stop), it stops waiting for the store, and the worker reading it is ended.
 */
export async function readAgain(ctx: ServiceContext, row: ImportsTable, signal?: AbortSignal): Promise<ReadUpload> {
  const source = await untilAborted(ctx.blobs.get(row.source_sha256), signal, (late) => late?.destroy());
  if (!source) throw new AppError('UNAVAILABLE', 'The uploaded report is no longer stored; upload it again.');
  try {
    const upload = {
      fileName: row.file_name,
      size: row.source_size,
      chunks: source,
      type: row.source_type,
      options: JSON.parse(row.options),
    };
    return await readUpload(ctx, upload, signal);
  } finally {
    source.destroy();
  }
}

/** `work`, unless `signal` aborts first (then its reason is thrown, and what `work` answers late goes to `dispose`). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined, dispose: (late: T) => void): Promise<T> {
  if (!signal) return work;
  signal.throwIfAborted();
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  work.then(
    (value) => {
      if (signal.aborted) dispose(value);
    },
    () => {},
  );
  return Promise.race([work, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
}
