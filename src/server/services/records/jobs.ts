import { randomUUID } from 'node:crypto';
import type { Static } from 'typebox';
import { NAME_MAX } from '../../../api/common.ts';
import { type createJob as createJobEndpoint, JOB_RUNS_MAX, type JobProgress } from '../../../api/v1/jobs.ts';
import type { ServiceContext } from '../../context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Page, PageRequest } from '../../db/pagination.ts';
import { deviceIdsWithLabels, knownDeviceIds } from '../../db/repositories/devices.ts';
import {
  findJob,
  findJobByIdempotencyKey,
  insertJob,
  type JobFilter,
  type JobRunSummary,
  jobRunSummaries,
  listJobs as listJobRows,
  markJobCancelled,
  markJobClosed,
} from '../../db/repositories/jobs.ts';
import { abortQueuedRunsOfJob, insertRuns, newRunRow } from '../../db/repositories/runs.ts';
import { testNamesInProject } from '../../db/repositories/tests.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { Executor, JobsTable, TestRunsTable } from '../../db/types.ts';
import { AppError, found, invalid } from '../../errors.ts';
import { registerForgeCheck, syncAfter, wakeForgeSyncs } from '../integrations/forge-hooks.ts';
import { bodyFingerprint, fingerprintMatches } from '../triage/fingerprint.ts';
import { countOutcomes, type OutcomeCounts } from '../triage/outcomes.ts';
import { deliverSoon, jobCompletedEvent, queueWebhookEvents } from '../webhooks/outbox.ts';
import { checkedCiUrl } from './ci-url.ts';
import { testCountsOfJobs } from './job-test-counts.ts';

export type CreateJobInput = Static<NonNullable<(typeof createJobEndpoint)['body']>>;

/** What a job was asked for, as stored in `jobs.request`. */
export interface JobRequest {
  testIds: string[];
  deviceIds: string[];
  deviceLabels: string[];
  environment: string | null;
  branch: string | null;
  build: string | null;
  commit: string | null;
  repository?: string | null; // of `commit` (FORGE-2); absent on jobs stored before migration 0020
  /** The branch its pull request merges into (TRIAGE-16): its comparison's base; absent on jobs stored before it. */
  targetBranch?: string | null;
}

export type JobStatus = 'queued' | 'running' | 'completed' | 'cancelled';

/** A job's state, derived from its runs every time it is read: it is never stored, so it never drifts. */
export interface JobState {
  status: JobStatus;
  progress: Static<typeof JobProgress>;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface JobView {
  row: JobsTable;
  request: JobRequest;
  state: JobState;
}

/** A request's `testIds: []`: a launch, which runs join as they start and its reporter closes. */
export const isLaunch = (request: Pick<JobRequest, 'testIds'>) => request.testIds.length === 0;

/** What deriving a job's state needs besides its rows: the time now and the launch idle timeout. */
export interface JobClock {
  now: string;
  launchIdleMs: number;
}

export const jobClock = (ctx: ServiceContext): JobClock => ({
  now: ctx.clock().toISOString(),
  launchIdleMs: ctx.config.launchIdleMinutes * 60_000,
});

/** The summary of a job without runs. */
const NO_RUNS: JobRunSummary = {
  queued: 0,
  running: 0,
  completed: 0,
  aborted: 0,
  passed: 0,
  failed: 0,
  broken: 0,
  skipped: 0,
  firstStarted: null,
  lastFinished: null,
  lastCreated: null,
};

/**
 * A job's state from what its runs add up to. A job with tests is `completed` when every run has finished. A
 * launch has no fixed set of runs: "every run so far has finished" is also true between two tests
 * of a streamed run, so it is `completed` only once it is over (closed by its reporter, or idle for
 * `launchIdleMs` with no run open) and every run in it has finished (JOB-1, JOB-2). Deterministic:
 * the same rows and the same `now` give the same state on every instance, and nothing is written.
 */
export function deriveJobState(
  job: JobsTable,
  request: Pick<JobRequest, 'testIds'>,
  runs: JobRunSummary | undefined,
  clock: JobClock,
  tests: OutcomeCounts = countOutcomes([]),
): JobState {
  const r = runs ?? NO_RUNS;
  const progress = {
    total: r.queued + r.running + r.completed + r.aborted,
    queued: r.queued,
    running: r.running,
    completed: r.completed,
    aborted: r.aborted,
    passed: r.passed,
    failed: r.failed,
    broken: r.broken,
    skipped: r.skipped,
    tests,
  };
  const startedAt = r.firstStarted;
  const finishedAt = r.lastFinished;
  let lastActivity = job.created_at;
  if (r.lastCreated && r.lastCreated > lastActivity) lastActivity = r.lastCreated;
  if (finishedAt !== null && finishedAt > lastActivity) lastActivity = finishedAt;
  const unfinished = progress.queued + progress.running;
  const over = isLaunch(request)
    ? unfinished === 0 && (job.closed_at !== null || Date.parse(clock.now) - Date.parse(lastActivity) >= clock.launchIdleMs)
    : unfinished === 0 && progress.total > 0;
  // Queued until one of its runs has started: runs aborted straight from the queue never started,
  // so they leave the job queued (and `startedAt` null, as a running job's never is). A launch
  // with no runs yet waits for them: queued, not completed, until it is closed or idle.
  const status: JobStatus = job.cancelled_at !== null ? 'cancelled' : over ? 'completed' : startedAt === null ? 'queued' : 'running';
  // A completed job finished when its last run did; a launch that ended with no run finished when
  // it was closed, or (idle) with its last activity.
  const ended = finishedAt ?? job.closed_at ?? lastActivity;
  return { status, progress, startedAt, finishedAt: status === 'completed' ? ended : null };
}

/** Jobs as the API shows them: each with the state its runs give it at `clock.now`. */
export async function viewJobs(executor: Executor, rows: readonly JobsTable[], clock: JobClock): Promise<JobView[]> {
  const jobIds = rows.map((r) => r.id);
  const summaries = rows.length > 0 ? await jobRunSummaries(executor, jobIds) : new Map<string, JobRunSummary>();
  const tests = await testCountsOfJobs(executor, jobIds, summaries);
  return rows.map((row) => {
    const request = JSON.parse(row.request) as JobRequest;
    return {
      row,
      request,
      state: deriveJobState(row, request, summaries.get(row.id), clock, tests.get(row.id)),
    };
  });
}

async function loadJobView(ctx: ServiceContext, executor: Executor, jobId: string): Promise<JobView> {
  const row = found(await findJob(executor, jobId), 'The job');
  const [view] = await viewJobs(executor, [row], jobClock(ctx));
  return view as JobView;
}

export const getJob = (ctx: ServiceContext, jobId: string) => loadJobView(ctx, ctx.db, jobId);

/** A project's jobs, newest first, each with the state its runs give it. */
export async function listJobs(ctx: ServiceContext, projectId: string, page: PageRequest, filter: JobFilter = {}): Promise<Page<JobView>> {
  const rows = await listJobRows(ctx.db, projectId, page, filter);
  return { items: await viewJobs(ctx.db, rows.items, jobClock(ctx)), nextCursor: rows.nextCursor };
}

/** The devices a job runs on: those named, then those carrying any named label; each once, ordered. */
async function resolveDevices(executor: Executor, deviceIds: readonly string[], labels: readonly string[]): Promise<string[]> {
  const known = await knownDeviceIds(executor, deviceIds);
  const unknown = deviceIds.findIndex((id) => !known.has(id));
  if (unknown >= 0) throw invalid(`/body/deviceIds/${unknown}`, 'names no registered device');

  const byLabel = new Map<string, string[]>();
  if (labels.length > 0) {
    for (const row of await deviceIdsWithLabels(executor, labels)) {
      const devices = byLabel.get(row.label) ?? [];
      if (devices.length === 0) byLabel.set(row.label, devices);
      devices.push(row.device_id);
    }
  }
  const unmatched = labels.findIndex((label) => !byLabel.has(label));
  if (unmatched >= 0) throw invalid(`/body/deviceLabels/${unmatched}`, 'is carried by no device');

  const labelled = [...new Set([...byLabel.values()].flat())].sort();
  return [...new Set([...deviceIds, ...labelled])];
}

function defaultJobName(testNames: string[]): string {
  const [first = 'Launch', ...rest] = testNames;
  const name = rest.length === 0 ? first : `${first} and ${rest.length} more`;
  return name.length > NAME_MAX ? `${name.slice(0, NAME_MAX - 1)}…` : name;
}

/** The job created earlier with this key, if the body is the same; 409 if the key came with another body. */
async function replayedJob(ctx: ServiceContext, projectId: string, key: string, body: unknown): Promise<JobView | undefined> {
  const earlier = await findJobByIdempotencyKey(ctx.db, projectId, key);
  if (!earlier) return undefined;
  if (!fingerprintMatches(earlier.idempotency_fingerprint, body)) {
    throw new AppError('STATE_CONFLICT', 'This idempotencyKey was already used in the project with another body.');
  }
  return loadJobView(ctx, ctx.db, earlier.id);
}

/**
 * Creates a job and fans it out, in one transaction, into one queued run per (test × device), or
 * one run per test when no device is asked for. The runs carry the job's labels. With no tests it
 * is a launch that runs join (a reporter's). A key used before answers the job it made, `created: false`.
 */
export async function createJob(
  ctx: ServiceContext,
  projectId: string,
  input: CreateJobInput,
  actorId: string,
): Promise<{ job: JobView; created: boolean }> {
  const key = input.idempotencyKey;
  if (key !== undefined) {
    const earlier = await replayedJob(ctx, projectId, key, input);
    if (earlier) return { job: earlier, created: false };
  }
  try {
    const job = await recordJob(ctx, projectId, input, actorId);
    wakeForgeSyncs(ctx, input.repository !== undefined && input.commit !== undefined);
    return { job, created: true };
  } catch (error) {
    // A concurrent retry with the same key committed first.
    const earlier = key !== undefined && isUniqueViolation(error) ? await replayedJob(ctx, projectId, key, input) : undefined;
    if (earlier) return { job: earlier, created: false };
    throw error;
  }
}

/** The tests a job names (each of its project), and the devices it fans out to (null: any device). */
async function jobTargets(trx: Executor, projectId: string, input: CreateJobInput) {
  const names = await testNamesInProject(trx, projectId, input.testIds);
  const missing = input.testIds.findIndex((id) => !names.has(id));
  // A test of another project answers like an unknown one, so ids of other projects cannot be probed.
  if (missing >= 0) throw invalid(`/body/testIds/${missing}`, 'names no test of this project');
  const devices = await resolveDevices(trx, input.deviceIds ?? [], input.deviceLabels ?? []);
  const targets: (string | null)[] = devices.length > 0 ? devices : [null];
  const total = input.testIds.length * targets.length;
  if (total > JOB_RUNS_MAX) throw invalid('/body', `fans out into ${total} runs (tests × devices); a job makes at most ${JOB_RUNS_MAX}`);
  return { names, targets };
}

function jobRequestOf(input: CreateJobInput): JobRequest {
  return {
    testIds: input.testIds,
    deviceIds: input.deviceIds ?? [],
    deviceLabels: input.deviceLabels ?? [],
    environment: input.environment ?? null,
    branch: input.branch ?? null,
    build: input.build ?? null,
    commit: input.commit ?? null,
    repository: input.repository ?? null,
    targetBranch: input.targetBranch ?? null,
  };
}

/** The row of a queued run a job makes: one test on one device (null: any), with the job's labels. */
function queuedRunRow(
  job: JobsTable,
  request: JobRequest,
  test: { id: string; name: string; version: number },
  deviceId: string | null,
): TestRunsTable {
  return newRunRow({
    id: randomUUID(),
    project_id: job.project_id,
    test_id: test.id,
    job_id: job.id,
    device_id: deviceId,
    name: test.name,
    status: 'queued',
    environment: request.environment,
    branch: request.branch,
    build: request.build,
    commit_sha: request.commit,
    created_at: job.created_at,
    created_by: job.created_by,
    ci_url: job.ci_url,
    test_version: test.version,
  });
}

async function recordJob(ctx: ServiceContext, projectId: string, input: CreateJobInput, actorId: string): Promise<JobView> {
  const now = ctx.clock().toISOString();
  const ciUrl = checkedCiUrl(input.ciUrl, '/body/ciUrl');
  return inTransaction(ctx.db, async (trx) => {
    const { names, targets } = await jobTargets(trx, projectId, input);
    const request = jobRequestOf(input);
    const job: JobsTable = {
      id: randomUUID(),
      project_id: projectId,
      name: input.name ?? defaultJobName(input.testIds.map((id) => names.get(id)?.name ?? '')),
      request: JSON.stringify(request),
      cancelled_at: null,
      created_at: now,
      created_by: actorId,
      idempotency_key: input.idempotencyKey ?? null,
      idempotency_fingerprint: input.idempotencyKey === undefined ? null : bodyFingerprint(input),
      closed_at: null,
      ci_url: ciUrl,
      incident_group_id: null,
      incident_failed_runs: null,
      branch: request.branch,
      build: request.build,
    };
    await insertJob(trx, job);
    const runs = input.testIds.flatMap((testId) => {
      const test = { id: testId, name: names.get(testId)?.name ?? '', version: names.get(testId)?.version ?? 1 };
      return targets.map((deviceId) => queuedRunRow(job, request, test, deviceId));
    });
    await insertRuns(trx, runs);
    await registerForgeCheck(ctx, trx, job, request);
    return loadJobView(ctx, trx, job.id);
  });
}

/**
 * Cancels a job: its queued runs are aborted at once; runs already running belong to a runner and
 * finish (or are aborted) through it. A completed or already cancelled job is a conflict.
 */
export async function cancelJob(ctx: ServiceContext, jobId: string): Promise<JobView> {
  const now = ctx.clock().toISOString();
  const view = await inTransaction(ctx.db, async (trx) => {
    const before = await loadJobView(ctx, trx, jobId);
    if (before.state.status === 'cancelled' || before.state.status === 'completed') {
      throw new AppError('STATE_CONFLICT', `The job is already ${before.state.status}.`);
    }
    // Conditional on not being cancelled yet, so two concurrent cancels cannot both succeed.
    if (!(await markJobCancelled(trx, jobId, now))) throw new AppError('STATE_CONFLICT', 'The job is already cancelled.');
    // Only runs still queued: a run a runner claimed meanwhile keeps going.
    await abortQueuedRunsOfJob(trx, jobId, now);
    return loadJobView(ctx, trx, jobId);
  });
  return syncAfter(ctx, jobId, view);
}

/**
 * Closes a launch (JOB-1): its reporter is done and no more runs join. It answers `completed` once
 * every run in it has finished. Idempotent: a closed launch answers as it is, a launch the idle
 * timeout already ended is closed as well (it stays completed). A cancelled job, or a job
 * with tests (it completes with its runs), is a conflict.
 */
export async function completeJob(ctx: ServiceContext, jobId: string): Promise<JobView> {
  const now = ctx.clock().toISOString();
  let queued = false;
  const view = await inTransaction(ctx.db, async (trx) => {
    const before = await loadJobView(ctx, trx, jobId);
    if (!isLaunch(before.request)) {
      throw new AppError('STATE_CONFLICT', 'The job was created with tests: it completes when its runs do, and is not closed by hand.');
    }
    if (before.row.cancelled_at !== null) throw new AppError('STATE_CONFLICT', 'The job is cancelled.');
    if (before.row.closed_at !== null) return before;
    // Conditional, so a cancel that committed meanwhile is not overwritten; read again either way.
    await markJobClosed(trx, jobId, now);
    const after = await loadJobView(ctx, trx, jobId);
    if (after.row.cancelled_at !== null) throw new AppError('STATE_CONFLICT', 'The job is cancelled.');
    if (after.state.status === 'completed') queued = await queueWebhookEvents(ctx, trx, [jobCompletedEvent(after.row)]);
    return after;
  });
  if (queued) deliverSoon(ctx);
  return syncAfter(ctx, jobId, view);
}
