import type { ServiceContext } from '../../context.ts';
import { deleteJobRow, findJob } from '../../db/repositories/jobs.ts';
import { countRunsOfTest, deleteRunRow, deleteRunsWhere, findRun } from '../../db/repositories/runs.ts';
import { deleteTestRow, findTest } from '../../db/repositories/tests.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { Executor } from '../../db/types.ts';
import { AppError, found } from '../../errors.ts';
import { auditBy } from '../access/audit.ts';
import type { Actor } from '../access/users.ts';

// Deleting runs, jobs and tests (RET-1): one transaction each, audited. Rows that hang off a run
// (steps, cells, result receipts, artifacts and their image links) go by cascade; the blobs they
// referenced stay until garbage collection finds them unreferenced (DUR-8), so a delete never
// races an upload of the same bytes. A second delete finds nothing: 404.

/**
 * Runs or a project were deleted: the answers kept in memory that may show them go, the completed
 * runs' results (PERF-2), the projects known to use each image (PERF-6) and the owners of what went
 * (PERF-7). Called once the deletion has committed, before it is acknowledged. (A single artifact's
 * deletion forgets the image uses and its own owner only: no run's results show artifacts.)
 */
export function forgetKeptContent(ctx: ServiceContext): void {
  ctx.changes.emit({ kind: 'runs-deleted' });
}

/** Audits a deletion (`run.delete`, `job.delete`, `test.delete`, `project.delete`) of the row that went, in the deleting transaction. */
export function auditDeletion(
  ctx: ServiceContext,
  trx: Executor,
  actor: Actor,
  type: 'run' | 'job' | 'test' | 'project',
  id: string,
  details: Record<string, unknown>,
): Promise<void> {
  return auditBy(ctx, trx, actor, { action: `${type}.delete`, targetType: type, targetId: id, details });
}

/** Deletes a run and everything it holds. */
export async function deleteRun(ctx: ServiceContext, runId: string, actor: Actor): Promise<void> {
  await inTransaction(ctx.db, async (trx) => {
    const run = found(await findRun(trx, runId), 'The test run');
    await deleteRunRow(trx, run.id);
    await auditDeletion(ctx, trx, actor, 'run', run.id, {
      projectId: run.project_id,
      name: run.name,
      status: run.status,
      verdict: run.verdict,
    });
  });
  // A completed run's results, or its images' uses, may be kept: not any more.
  forgetKeptContent(ctx);
}

/** Deletes a job with all its runs. Answers how many runs went. */
export async function deleteJob(ctx: ServiceContext, jobId: string, actor: Actor): Promise<{ runs: number }> {
  const runs = await inTransaction(ctx.db, async (trx) => {
    const job = found(await findJob(trx, jobId), 'The job');
    const deleted = await deleteRunsWhere(trx, 'job_id', job.id);
    await deleteJobRow(trx, job.id);
    await auditDeletion(ctx, trx, actor, 'job', job.id, { projectId: job.project_id, name: job.name, runs: deleted });
    return deleted;
  });
  forgetKeptContent(ctx);
  return { runs };
}

/**
 * Deletes a test definition. While runs reference it the answer is 409, unless `cascade` asks for
 * its runs (its history) to go too.
 */
export async function deleteTest(
  ctx: ServiceContext,
  testId: string,
  options: { cascade: boolean },
  actor: Actor,
): Promise<{ runs: number }> {
  const runs = await inTransaction(ctx.db, async (trx) => {
    const test = found(await findTest(trx, testId), 'The test');
    const referencing = await countRunsOfTest(trx, test.id);
    if (referencing > 0 && !options.cascade) {
      throw new AppError(
        'STATE_CONFLICT',
        `${referencing} run${referencing === 1 ? '' : 's'} of this test exist; delete them first, or pass cascade=true to delete them with it.`,
      );
    }
    const deleted = referencing > 0 ? await deleteRunsWhere(trx, 'test_id', test.id) : 0;
    await deleteTestRow(trx, test.id);
    await auditDeletion(ctx, trx, actor, 'test', test.id, { projectId: test.project_id, name: test.name, runs: deleted });
    return deleted;
  });
  if (runs > 0) forgetKeptContent(ctx);
  else ctx.changes.emit({ kind: 'test-deleted', testId });
  return { runs };
}
