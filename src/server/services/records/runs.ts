import { randomUUID } from 'node:crypto';
import type { Static } from 'typebox';
import type { createRun as createRunEndpoint, listRuns as listRunsEndpoint, updateRun as updateRunEndpoint } from '../../../api/v1/runs.ts';
import type { ServiceContext } from '../../context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Page, PageRequest } from '../../db/pagination.ts';
import { findDeviceId } from '../../db/repositories/devices.ts';
import { findJob } from '../../db/repositories/jobs.ts';
import {
  findRun,
  findRunByIdempotencyKey,
  insertRun,
  listRuns as listRunRows,
  lockRun,
  newRunRow,
  updateRunIfStatus,
} from '../../db/repositories/runs.ts';
import { findTestOfProject } from '../../db/repositories/tests.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { TestRunsTable } from '../../db/types.ts';
import { AppError, found, invalid } from '../../errors.ts';
import { queueForgeSyncs, wakeForgeSyncs } from '../integrations/forge-hooks.ts';
import { ensureTestsByFullName } from '../tests/tests.ts';
import { bodyFingerprint, fingerprintMatches } from '../triage/fingerprint.ts';
import { testNameOf } from '../triage/outcomes.ts';
import { queueJobsCompleted } from '../webhooks/events.ts';
import { deliverSoon } from '../webhooks/outbox.ts';
import { checkedCiUrl } from './ci-url.ts';
import { appendResults } from './results.ts';
import { onRunsCompleted } from './run-completion.ts';

export type CreateRunInput = Static<NonNullable<(typeof createRunEndpoint)['body']>>;
export type RunChange = Static<NonNullable<(typeof updateRunEndpoint)['body']>>;
export type RunFilters = Omit<Static<NonNullable<(typeof listRunsEndpoint)['querystring']>>, 'cursor' | 'limit'>;
type RunStatus = TestRunsTable['status'];

/** The run lifecycle: queued → running → completed, and aborted from either unfinished state. */
const NEXT_STATUSES: Record<RunStatus, readonly RunStatus[]> = {
  queued: ['running', 'aborted'],
  running: ['completed', 'aborted'],
  completed: [],
  aborted: [],
};

export const isFinished = (status: RunStatus) => status === 'completed' || status === 'aborted';

export const getRun = async (ctx: ServiceContext, runId: string): Promise<TestRunsTable> =>
  found(await findRun(ctx.db, runId), 'The test run');

/** The run created earlier with this key, if the body is the same; 409 if the key came with another body. */
async function replayedRun(ctx: ServiceContext, projectId: string, key: string, body: unknown): Promise<TestRunsTable | undefined> {
  const earlier = await findRunByIdempotencyKey(ctx.db, projectId, key);
  if (earlier && !fingerprintMatches(earlier.idempotency_fingerprint, body)) {
    throw new AppError('STATE_CONFLICT', 'This idempotencyKey was already used in the project with another body.');
  }
  return earlier;
}

/**
 * Starts a run: `running` from now on, or recorded finished in one call. Its test must be one of
 * the same project, its device a registered one. With an idempotency key used before (the same
 * body) it answers the stored run, `created: false`, and records nothing.
 */
export async function createRun(
  ctx: ServiceContext,
  projectId: string,
  input: CreateRunInput,
  actorId: string,
): Promise<{ run: TestRunsTable; created: boolean }> {
  const key = input.idempotencyKey;
  const fingerprint = key === undefined ? null : bodyFingerprint(input);
  if (key !== undefined && fingerprint !== null) {
    const earlier = await replayedRun(ctx, projectId, key, input);
    if (earlier) return { run: earlier, created: false };
  }
  try {
    return { run: await recordRun(ctx, projectId, input, actorId, fingerprint), created: true };
  } catch (error) {
    // A concurrent retry with the same key committed first.
    if (key !== undefined && fingerprint !== null && isUniqueViolation(error)) {
      const earlier = await replayedRun(ctx, projectId, key, input);
      if (earlier) return { run: earlier, created: false };
    }
    throw error;
  }
}

/**
 * A run joins a job of its own project that is not cancelled, nor a launch its reporter closed
 * (JOB-1); another project's job is as unknown as a missing one. A launch the idle timeout ended
 * takes the run and is open again (JOB-2): its end was a presumption, and refusing would lose results.
 */
async function assertJobTakesRuns(ctx: ServiceContext, projectId: string, jobId: string): Promise<void> {
  const job = await findJob(ctx.db, jobId);
  if (job?.project_id !== projectId) throw invalid('/body/jobId', 'names no job of this project');
  if (job.cancelled_at !== null) throw new AppError('STATE_CONFLICT', 'The job is cancelled; it takes no more runs.');
  if (job.closed_at !== null) throw new AppError('STATE_CONFLICT', 'The launch was closed by its reporter; it takes no more runs.');
}

/** The test a run names, checked with the rest of what the run names: the device, the job, the CI link. */
async function checkedRunInput(ctx: ServiceContext, projectId: string, input: CreateRunInput) {
  // A test of another project answers like an unknown one, so ids of other projects cannot be probed.
  const named = input.testId === undefined ? undefined : await findTestOfProject(ctx.db, input.testId, projectId);
  if (input.testId !== undefined && !named) throw invalid('/body/testId', 'names no test of this project');
  if (input.testId !== undefined && input.testName !== undefined) throw invalid('/body/testName', 'cannot be combined with testId');
  if (input.deviceId !== undefined && !(await findDeviceId(ctx.db, input.deviceId))) {
    throw invalid('/body/deviceId', 'names no registered device');
  }
  if (input.jobId !== undefined) await assertJobTakesRuns(ctx, projectId, input.jobId);
  return { named, ciUrl: checkedCiUrl(input.ciUrl, '/body/ciUrl') };
}

/** The run's test, and the version of it the run executes (TCM-3): the one named, or found (made) by its full name. */
async function testOfRun(
  ctx: ServiceContext,
  scope: { projectId: string; actorId: string; now: string },
  input: CreateRunInput,
  named: { id: string; version: number } | undefined,
): Promise<{ testId: string | null; testVersion: number | null }> {
  if (input.testName === undefined) return { testId: named?.id ?? null, testVersion: named?.version ?? null };
  const { ids, versions } = await ensureTestsByFullName(ctx.db, { ...scope, fullNames: [input.testName] });
  const testId = ids.get(input.testName) ?? null;
  return { testId, testVersion: testId === null ? null : (versions.get(testId) ?? 1) };
}

/** A new run's row, running since now. */
function runningRunRow(
  input: CreateRunInput,
  made: { projectId: string; actorId: string; now: string; fingerprint: string | null; ciUrl: string | null },
  test: { testId: string | null; testVersion: number | null },
): TestRunsTable {
  const { now } = made;
  return newRunRow({
    id: randomUUID(),
    project_id: made.projectId,
    test_id: test.testId,
    job_id: input.jobId ?? null,
    device_id: input.deviceId ?? null,
    // A retry named ` (retry N)` (reporters before TRIAGE-14) is stored under its test's name.
    name: testNameOf({ name: input.name, attempt: input.attempt ?? 0 }),
    status: 'running',
    environment: input.environment ?? null,
    branch: input.branch ?? null,
    build: input.build ?? null,
    commit_sha: input.commit ?? null,
    created_at: now,
    started_at: now,
    created_by: made.actorId,
    idempotency_key: input.idempotencyKey ?? null,
    idempotency_fingerprint: made.fingerprint,
    ci_url: made.ciUrl,
    attempt: input.attempt ?? 0,
    test_version: test.testVersion,
  });
}

/** A run without a verdict: inserted running, with the results it brings. */
async function insertRunning(ctx: ServiceContext, row: TestRunsTable, input: CreateRunInput): Promise<TestRunsTable> {
  if (input.finishedAt !== undefined) throw invalid('/body/finishedAt', 'needs a verdict: only a finished run has a finish time');
  if (input.startedAt !== undefined) row.started_at = new Date(input.startedAt).toISOString();
  const forgeQueued = await inTransaction(ctx.db, async (trx) => {
    await insertRun(trx, row);
    if (input.results) await appendResults(ctx, row.id, input.results, trx);
    // A run joining a launch starts it (FORGE-2).
    return queueForgeSyncs(ctx, trx, [row.job_id]);
  });
  wakeForgeSyncs(ctx, forgeQueued);
  return row;
}

/**
 * A finished run in one call: inserted running, its results appended, then completed, all in
 * one transaction, so a reader never sees it half recorded and a failure leaves nothing.
 */
async function insertFinished(ctx: ServiceContext, row: TestRunsTable, input: CreateRunInput, now: string): Promise<TestRunsTable> {
  const startedAt = input.startedAt === undefined ? now : new Date(input.startedAt).toISOString();
  const finishedAt = input.finishedAt === undefined ? now : new Date(input.finishedAt).toISOString();
  if (finishedAt < startedAt) throw invalid('/body/finishedAt', 'must not be before startedAt');
  row.started_at = startedAt;
  const queued = await inTransaction(ctx.db, async (trx) => {
    await insertRun(trx, row);
    if (input.results) await appendResults(ctx, row.id, input.results, trx);
    const completed = { status: 'completed', verdict: input.verdict ?? null, finished_at: finishedAt } as const;
    await updateRunIfStatus(trx, row.id, 'running', completed);
    return onRunsCompleted(ctx, trx, [{ ...row, ...completed }]);
  });
  if (queued) announceQueued(ctx);
  return getRun(ctx, row.id);
}

async function recordRun(
  ctx: ServiceContext,
  projectId: string,
  input: CreateRunInput,
  actorId: string,
  fingerprint: string | null,
): Promise<TestRunsTable> {
  const { named, ciUrl } = await checkedRunInput(ctx, projectId, input);
  const now = ctx.clock().toISOString();
  const test = await testOfRun(ctx, { projectId, actorId, now }, input, named);
  const row = runningRunRow(input, { projectId, actorId, now, fingerprint, ciUrl }, test);
  return input.verdict === undefined ? insertRunning(ctx, row, input) : insertFinished(ctx, row, input, now);
}

/** A project's runs, newest first, narrowed by every filter given (`projectId` is the resolved one, not the query's). */
export async function listRuns(
  ctx: ServiceContext,
  projectId: string,
  filters: Omit<RunFilters, 'projectId'>,
  page: PageRequest,
): Promise<Page<TestRunsTable>> {
  return listRunRows(
    ctx.db,
    projectId,
    {
      ...filters,
      // Stored times are toISOString() text; the bounds are normalised to compare as times.
      from: filters.from === undefined ? undefined : new Date(filters.from).toISOString(),
      to: filters.to === undefined ? undefined : new Date(filters.to).toISOString(),
    },
    page,
  );
}

function checkVerdict(change: RunChange): void {
  if (change.status === 'completed' && change.verdict === undefined) throw invalid('/body/verdict', 'is required to complete a run');
  if (change.status !== 'completed' && change.verdict !== undefined) throw invalid('/body/verdict', 'is only given with status completed');
}

/**
 * Moves a run along its lifecycle. Asking for the state it is already in is a no-op (a retried
 * call must not fail); any other step off the lifecycle is a 409. Finishing a run (completed or
 * aborted) stamps `finished_at`, which freezes its results, and releases any runner lease.
 */
export async function changeRunStatus(ctx: ServiceContext, runId: string, change: RunChange): Promise<TestRunsTable> {
  checkVerdict(change);
  const now = ctx.clock().toISOString();
  const { run, queued } = await inTransaction(ctx.db, async (trx) => {
    const run = found(await lockRun(trx, runId), 'The test run');
    if (run.status === change.status && (change.status !== 'completed' || run.verdict === change.verdict)) return { run, queued: false };
    if (!NEXT_STATUSES[run.status].includes(change.status)) {
      const current = run.status === 'completed' ? `completed (${run.verdict})` : run.status;
      throw new AppError(
        'STATE_CONFLICT',
        `The run is ${current}; it cannot become ${change.status}${change.verdict ? ` (${change.verdict})` : ''}.`,
      );
    }
    const changes: Partial<TestRunsTable> = { status: change.status };
    if (change.status === 'running') changes.started_at = run.started_at ?? now;
    if (change.status === 'completed') changes.verdict = change.verdict ?? null;
    if (isFinished(change.status)) Object.assign(changes, { finished_at: now, lease_owner: null, lease_expires_at: null });
    if (!(await updateRunIfStatus(trx, run.id, run.status, changes))) {
      throw new AppError('STATE_CONFLICT', 'The run changed meanwhile; read it again.');
    }
    const changed = { ...run, ...changes };
    // A run that starts, finishes or is aborted changes its job's check (FORGE-2); a completed run is
    // announced (HOOK-2), and an aborted one may be the last of its job to finish: the job completes.
    let queued: boolean;
    if (change.status === 'completed') {
      queued = await onRunsCompleted(ctx, trx, [changed]);
    } else {
      queued = await queueForgeSyncs(ctx, trx, [changed.job_id]);
      if (change.status === 'aborted' && run.job_id !== null) queued = (await queueJobsCompleted(ctx, trx, [run.job_id])) || queued;
    }
    return { run: changed, queued };
  });
  if (queued) announceQueued(ctx);
  return run;
}

/**
 * After a commit that queued background work (webhook deliveries, HOOK-3; code-host syncs,
 * FORGE-2): the crash point of the outbox's durability test, then the runners look.
 */
function announceQueued(ctx: ServiceContext): void {
  ctx.crashPoint('webhook-after-outbox');
  deliverSoon(ctx);
}
