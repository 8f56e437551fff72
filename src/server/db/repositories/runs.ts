import { type ExpressionBuilder, sql } from 'kysely';
import { insertRows } from '../chunks.ts';
import { compiledOnce } from '../compiled-once.ts';
import { dialectOf } from '../dialect.ts';
import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { Database, Executor, TestRunsTable } from '../types.ts';

// Queries of test runs. Every function takes the database or an open transaction.

export async function findRun(executor: Executor, runId: string): Promise<TestRunsTable | undefined> {
  return executor.selectFrom('test_runs').selectAll().where('id', '=', runId).executeTakeFirst();
}

/** The project a run belongs to, for the access check. */
export async function projectOfRun(executor: Executor, runId: string): Promise<string | undefined> {
  return (await projectOfRunOnce(executor, runId))?.project_id;
}

// Compiled once per dialect: every request on a run's path (results posts, run changes) checks its owner.
const projectOfRunOnce = compiledOnce((executor, runId: string) =>
  executor.selectFrom('test_runs').select('project_id').where('id', '=', runId),
);

/**
 * Locks a run row for the rest of a transaction, answering all of it (`lockRunStatus` answers its
 * status only, `runWithArtifactCount` with `lock` its artifact count and quota). The lock serialises writes to one
 * run (results appended, artifacts attached, its status changed): each either commits before the
 * run finishes or sees it finished. PostgreSQL takes a row lock; SQLite needs none, since its write
 * transactions already run one at a time.
 */
export async function lockRun(trx: Executor, runId: string): Promise<TestRunsTable | undefined> {
  return lockRunOnce(trx, runId);
}

/** lockRun for a caller that needs only the run's status (every results post): one column, not 22. */
export async function lockRunStatus(trx: Executor, runId: string): Promise<Pick<TestRunsTable, 'status'> | undefined> {
  return lockRunStatusOnce(trx, runId);
}

// Compiled once per dialect (every results post and run change runs one; FOR UPDATE on PostgreSQL).
const lockRunOnce = compiledOnce((trx, runId: string) => {
  const query = trx.selectFrom('test_runs').selectAll().where('id', '=', runId);
  return dialectOf(trx) === 'postgres' ? query.forUpdate() : query;
});
const lockRunStatusOnce = compiledOnce((trx, runId: string) => {
  const query = trx.selectFrom('test_runs').select('status').where('id', '=', runId);
  return dialectOf(trx) === 'postgres' ? query.forUpdate() : query;
});

/**
 * A run, with how many artifacts it holds (a counter on its row, migration 0007) and its project's
 * quota, in one query: what an upload checks. With `lock`, the run row is locked as by lockRun
 * until the transaction ends (the count is of this moment).
 */
export async function runWithArtifactCount(
  executor: Executor,
  runId: string,
  lock = false,
): Promise<(TestRunsTable & { quota_bytes: number | null }) | undefined> {
  const row = await (lock ? lockedRunWithQuota : runWithQuota)(executor, runId);
  return row && { ...row, artifact_count: Number(row.artifact_count), quota_bytes: row.quota_bytes ?? null };
}

// Compiled once per dialect, locked and not: every upload runs both.
const runWithQuotaQuery = (locked: boolean) =>
  compiledOnce((executor, runId: string) => {
    const query = executor
      .selectFrom('test_runs')
      .selectAll('test_runs')
      .select((eb) =>
        eb.selectFrom('projects').select('quota_bytes').whereRef('projects.id', '=', 'test_runs.project_id').as('quota_bytes'),
      )
      .where('test_runs.id', '=', runId);
    return locked && dialectOf(executor) === 'postgres' ? query.forUpdate() : query;
  });
const runWithQuota = runWithQuotaQuery(false);
const lockedRunWithQuota = runWithQuotaQuery(true);

export async function findRunByIdempotencyKey(executor: Executor, projectId: string, key: string): Promise<TestRunsTable | undefined> {
  return executor
    .selectFrom('test_runs')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
}

/** What a new run's row must say; everything else may be left to `newRunRow`. */
export type NewRun = Pick<TestRunsTable, 'id' | 'project_id' | 'name' | 'status' | 'created_at'> & Partial<TestRunsTable>;

/**
 * A new test run's row, the one builder of it (the services, the scale data set, the tests' seeds):
 * what `run` says, and for the rest no test, job, device, labels, times, owner, lease or
 * idempotency key, a first attempt, not kept, and the counters triggers keep at 0. A value `run`
 * gives as `undefined` is not taken: an unknown is `null`.
 */
export function newRunRow(run: NewRun): TestRunsTable {
  const row: TestRunsTable = {
    id: run.id,
    project_id: run.project_id,
    test_id: null,
    job_id: null,
    device_id: null,
    name: run.name,
    status: run.status,
    verdict: null,
    environment: null,
    branch: null,
    build: null,
    commit_sha: null,
    created_at: run.created_at,
    started_at: null,
    finished_at: null,
    created_by: null,
    lease_owner: null,
    lease_expires_at: null,
    idempotency_key: null,
    idempotency_fingerprint: null,
    keep: 0,
    superseded: 0, // kept by the run_days triggers (migration 0023)
    artifact_count: 0, // kept by the artifacts triggers (migration 0007)
    ci_url: null,
    failure_group_id: null,
    attempt: 0,
    test_version: null,
  };
  const fields = row as unknown as Record<string, unknown>;
  for (const [name, value] of Object.entries(run)) if (value !== undefined) fields[name] = value;
  return row;
}

export async function insertRun(executor: Executor, run: TestRunsTable): Promise<void> {
  await executor.insertInto('test_runs').values(run).execute();
}

/** Inserts many runs (a job's fan-out) in as few statements as the dialect allows. */
export async function insertRuns(executor: Executor, runs: readonly TestRunsTable[]): Promise<void> {
  await insertRows(executor, dialectOf(executor), 'test_runs', runs);
}

/**
 * Applies `changes` only while the run is still in `expectedStatus`, so a concurrent change (a
 * runner claiming it, another PATCH, a job cancel) is never silently overwritten. False when it was.
 */
export async function updateRunIfStatus(
  executor: Executor,
  runId: string,
  expectedStatus: TestRunsTable['status'],
  changes: Partial<TestRunsTable>,
): Promise<boolean> {
  const result = await executor
    .updateTable('test_runs')
    .set(changes)
    .where('id', '=', runId)
    .where('status', '=', expectedStatus)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Aborts a job's runs that are still queued; runs a runner already took keep going. */
export async function abortQueuedRunsOfJob(executor: Executor, jobId: string, now: string): Promise<void> {
  await executor
    .updateTable('test_runs')
    .set({ status: 'aborted', finished_at: now, lease_owner: null, lease_expires_at: null })
    .where('job_id', '=', jobId)
    .where('status', '=', 'queued')
    .execute();
}

/** What a runner's claim may take, and the lease it takes it under (SCALE-6). */
export interface RunClaim {
  runner: string;
  /** The projects to take from: `all`, or these (never empty). */
  projectIds: 'all' | readonly string[];
  deviceIds: readonly string[];
  /** A device carrying every one of these matches too. */
  deviceLabels: readonly string[];
  now: string;
  leaseExpiresAt: string;
}

/**
 * Marks the oldest queued run the claim matches `running` under the runner's lease, and answers
 * it; undefined when none matches. One statement: on PostgreSQL its pick locks the row and skips
 * rows another claim holds (`FOR UPDATE SKIP LOCKED`), so concurrent claims, from any instance,
 * never take one run twice and never wait on each other; on SQLite the single writer runs it whole.
 * A run without a device matches every claim.
 */
export async function claimOldestQueuedRun(executor: Executor, claim: RunClaim): Promise<TestRunsTable | undefined> {
  let pick = executor
    .selectFrom('test_runs')
    .select('id')
    // A literal, for the partial index test_runs_claim (migration 0014).
    .where('status', '=', sql.lit('queued'))
    .where((eb) => {
      const devices = [eb('device_id', 'is', null)];
      if (claim.deviceIds.length > 0) devices.push(eb('device_id', 'in', claim.deviceIds));
      if (claim.deviceLabels.length > 0) {
        // Label rows are unique per device (their primary key), so carrying all is a count.
        const carriers = eb
          .selectFrom('device_labels')
          .select('device_labels.device_id')
          .where('device_labels.label', 'in', claim.deviceLabels)
          .groupBy('device_labels.device_id')
          .having((h) => h.fn.countAll(), '=', claim.deviceLabels.length);
        devices.push(eb('device_id', 'in', carriers));
      }
      return eb.or(devices);
    })
    // A cancel aborts its job's queued runs, but a run requeued by a sweep that did not see the cancel yet may be left.
    .where((eb) => eb.not(ofCancelledJob(eb)))
    .orderBy('created_at')
    .orderBy('id')
    .limit(1);
  if (claim.projectIds !== 'all') pick = pick.where('project_id', 'in', claim.projectIds);
  if (dialectOf(executor) === 'postgres') pick = pick.forUpdate().skipLocked();
  return executor
    .updateTable('test_runs')
    .set({ status: 'running', started_at: claim.now, lease_owner: claim.runner, lease_expires_at: claim.leaseExpiresAt })
    .where('id', '=', pick)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Moves the lease `runner` holds on a running run to end at `leaseExpiresAt`, only while it is
 * still live at `now`; answers the run, or undefined when the runner holds no live lease on it.
 */
export async function renewRunLease(
  executor: Executor,
  runId: string,
  lease: { runner: string; now: string; leaseExpiresAt: string },
): Promise<TestRunsTable | undefined> {
  return executor
    .updateTable('test_runs')
    .set({ lease_expires_at: lease.leaseExpiresAt })
    .where('id', '=', runId)
    .where('status', '=', 'running')
    .where('lease_owner', '=', lease.runner)
    .where('lease_expires_at', '>', lease.now)
    .returningAll()
    .executeTakeFirst();
}

/** The runs of cancelled jobs: never handed out again, whatever becomes of their lease. */
const ofCancelledJob = (eb: ExpressionBuilder<Database, 'test_runs'>) =>
  eb.exists(
    eb.selectFrom('jobs').select('jobs.id').whereRef('jobs.id', '=', 'test_runs.job_id').where('jobs.cancelled_at', 'is not', null),
  );

/**
 * Ends the running runs whose lease ended by `now`: a cancelled job's are aborted (its runner is
 * gone, and nobody is to run it again), the others go back to the queue, `queued` with no runner,
 * lease or start time, as before their claim. Answers their ids. Each row is changed only while it
 * is still expired, so a heartbeat that got there first is never undone.
 */
export async function requeueExpiredLeases(executor: Executor, now: string): Promise<{ requeued: string[]; aborted: string[] }> {
  // Looked for first: every claim and every instance's sweep asks, nearly always finding nothing,
  // and a read neither takes SQLite's write lock nor counts as a commit to sync.
  const expired = await executor
    .selectFrom('test_runs')
    .select('id')
    .where('status', '=', 'running')
    .where('lease_expires_at', '<=', now)
    .limit(1)
    .executeTakeFirst();
  if (!expired) return { requeued: [], aborted: [] };
  const aborted = await executor
    .updateTable('test_runs')
    .set({ status: 'aborted', finished_at: now, lease_owner: null, lease_expires_at: null })
    .where('status', '=', 'running')
    .where('lease_expires_at', '<=', now)
    .where(ofCancelledJob)
    .returning('id')
    .execute();
  const requeued = await executor
    .updateTable('test_runs')
    .set({ status: 'queued', started_at: null, lease_owner: null, lease_expires_at: null })
    .where('status', '=', 'running')
    .where('lease_expires_at', '<=', now)
    .where((eb) => eb.not(ofCancelledJob(eb)))
    .returning('id')
    .execute();
  return { requeued: requeued.map((row) => row.id), aborted: aborted.map((row) => row.id) };
}

export interface RunFilter {
  status?: TestRunsTable['status'];
  verdict?: NonNullable<TestRunsTable['verdict']>;
  testId?: string;
  jobId?: string;
  deviceId?: string;
  environment?: string;
  branch?: string;
  build?: string;
  commit?: string;
  /** ISO-8601 bounds on the creation time: from inclusive, to exclusive. */
  from?: string;
  to?: string;
}

/** A project's runs, newest first, narrowed by every filter given. */
export async function listRuns(executor: Executor, projectId: string, filter: RunFilter, page: PageRequest): Promise<Page<TestRunsTable>> {
  const { jobId } = filter;
  // A job's runs are its project's: scoped by the job's row, the runs are read from the job's own
  // indexes (SCALE-11), where `project_id = ?` beside a cursor made SQLite take the project's index
  // and read every older run of the project to fill a page of the job's failures.
  let query = jobId
    ? executor
        .selectFrom('test_runs')
        .selectAll()
        .where('job_id', '=', jobId)
        .where(({ exists, selectFrom }) =>
          exists(selectFrom('jobs').select('id').where('id', '=', jobId).where('project_id', '=', projectId)),
        )
    : executor.selectFrom('test_runs').selectAll().where('project_id', '=', projectId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.verdict) query = query.where('verdict', '=', filter.verdict);
  if (filter.testId) query = query.where('test_id', '=', filter.testId);
  if (filter.deviceId) query = query.where('device_id', '=', filter.deviceId);
  if (filter.environment) query = query.where('environment', '=', filter.environment);
  if (filter.branch) query = query.where('branch', '=', filter.branch);
  if (filter.build) query = query.where('build', '=', filter.build);
  if (filter.commit) query = query.where('commit_sha', '=', filter.commit);
  // Stored times are toISOString() text, which sorts as time; callers normalise the bounds to match.
  if (filter.from) query = query.where('created_at', '>=', filter.from);
  if (filter.to) query = query.where('created_at', '<', filter.to);
  return keysetPage(query, { columns: ['created_at', 'id'], direction: 'desc' }, page);
}

/**
 * A job's progress source: run counts per job, status and verdict, with the first start, the last
 * finish and the last creation (a launch's last activity, for its idle timeout).
 */
/** The idempotency keys already used in the project that start with `prefix` (an import's runs, when it resumes). */
export async function runKeysWithPrefix(executor: Executor, projectId: string, prefix: string): Promise<Set<string>> {
  const rows = await executor
    .selectFrom('test_runs')
    .select('idempotency_key')
    .where('project_id', '=', projectId)
    // LIKE, not a range: a range compares by the database's collation, which may weigh punctuation
    // differently from the bytes. Callers' prefixes hold no % or _.
    .where('idempotency_key', 'like', `${prefix}%`)
    .execute();
  return new Set(rows.map((row) => row.idempotency_key as string));
}

/** A test's latest `limit` runs, newest first (index test_runs_test). */
export async function latestRunsOfTest(executor: Executor, testId: string, limit: number): Promise<TestRunsTable[]> {
  return executor
    .selectFrom('test_runs')
    .selectAll()
    .where('test_id', '=', testId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/**
 * The verdict of the test's newest completed run that passed or failed among those older than
 * `before` (creation time, then id: the history's order), or undefined when there is none.
 */
export async function decisiveVerdictBefore(
  executor: Executor,
  testId: string,
  before: { createdAt: string; id: string },
): Promise<'passed' | 'failed' | undefined> {
  const row = await executor
    .selectFrom('test_runs')
    .select('verdict')
    .where('test_id', '=', testId)
    .where('status', '=', 'completed')
    .where('verdict', 'in', ['passed', 'failed'])
    .where((eb) =>
      eb.or([eb('created_at', '<', before.createdAt), eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)])]),
    )
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.verdict === 'passed' || row?.verdict === 'failed' ? row.verdict : undefined;
}

/** Deletes a run; its steps, cells, result receipts and artifacts go with it (foreign keys cascade). False when there was none. */
export async function deleteRunRow(executor: Executor, runId: string): Promise<boolean> {
  const result = await executor.deleteFrom('test_runs').where('id', '=', runId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Deletes every run of a job or of a test, with what they hold; answers how many. */
export async function deleteRunsWhere(executor: Executor, column: 'job_id' | 'test_id', id: string): Promise<number> {
  const result = await executor.deleteFrom('test_runs').where(column, '=', id).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** How many runs a test has. */
export async function countRunsOfTest(executor: Executor, testId: string): Promise<number> {
  const row = await executor
    .selectFrom('test_runs')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('test_id', '=', testId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
