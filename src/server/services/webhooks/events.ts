import type { Static } from 'typebox';
import type { EventProject, EventRun } from '../../../api/v1/webhook-events.ts';
import type { ServiceContext } from '../../context.ts';
import { findImport } from '../../db/repositories/imports.ts';
import { findJob } from '../../db/repositories/jobs.ts';
import { findProject } from '../../db/repositories/projects.ts';
import {
  enabledWebhooksOfProjects,
  firstScreenshotsOfRuns,
  markExpiryAnnounced,
  unannouncedExpiries,
} from '../../db/repositories/webhooks.ts';
import type { Executor, TestRunsTable, WebhookDeliveriesTable } from '../../db/types.ts';
import { signedThumbnailQueries } from '../evidence/image-links.ts';
import { jobClock, viewJobs } from '../records/jobs.ts';
import { compareJobs } from '../triage/comparison.ts';
import type { EventData } from './outbox.ts';
import { type EventSubject, jobCompletedEvent, type QueuedEvent, queueWebhookEvents } from './outbox.ts';

// The events of webhooks (HOOK-7): which changes queue which events (into the outbox,
// webhook-outbox.ts, in the change's transaction), and the payloads built for them.

/** The link to a page of the web interface, when the instance knows its public address. */
export const pageUrl = (ctx: ServiceContext, path: string): string | null =>
  ctx.config.publicUrl === undefined ? null : `${ctx.config.publicUrl}${path}`;

export function runData(ctx: ServiceContext, run: TestRunsTable): Static<typeof EventRun> {
  return {
    id: run.id,
    name: run.name,
    status: run.status,
    verdict: run.verdict,
    testId: run.test_id,
    jobId: run.job_id,
    environment: run.environment,
    branch: run.branch,
    commit: run.commit_sha,
    startedAt: run.started_at,
    finishedAt: run.finished_at,
    url: pageUrl(ctx, `/runs/${run.id}`),
  };
}

const failed = (run: Pick<TestRunsTable, 'verdict'>) => run.verdict === 'failed' || run.verdict === 'broken';

/**
 * The events of runs just completed through the API, in their completing transaction:
 * `run.completed` for each, `run.failed_first` for the first failed or broken run of each job (its
 * key is the job's: later failures are dropped), and `job.completed` for each job they completed.
 */
export async function queueRunEvents(ctx: ServiceContext, trx: Executor, runs: readonly TestRunsTable[]): Promise<boolean> {
  if (runs.length === 0) return false;
  const projectIds = [...new Set(runs.map((run) => run.project_id))];
  // Most projects have no webhook: one query, and nothing else.
  if ((await enabledWebhooksOfProjects(trx, projectIds)).length === 0) return false;
  const events: QueuedEvent[] = [];
  for (const run of runs) {
    const data = { project: await projectData(trx, run.project_id), run: runData(ctx, run) };
    events.push({ projectId: run.project_id, type: 'run.completed', key: `run.completed:${run.id}`, subject: { data } });
    if (failed(run) && run.job_id !== null) {
      const job = await findJob(trx, run.job_id);
      if (job) {
        const jobRef = { id: job.id, name: job.name, url: pageUrl(ctx, `/jobs/${job.id}`) };
        events.push({
          projectId: run.project_id,
          type: 'run.failed_first',
          key: `run.failed_first:${job.id}`,
          subject: { data: { ...data, job: jobRef } },
        });
      }
    }
  }
  const jobIds = [...new Set(runs.map((run) => run.job_id).filter((id): id is string => id !== null))];
  const queuedRuns = await queueWebhookEvents(ctx, trx, events);
  const queuedJobs = await queueJobsCompleted(ctx, trx, jobIds);
  return queuedRuns || queuedJobs;
}

/** `job.completed` for each of these jobs that is completed now (a job's last run finished, a launch closed). */
export async function queueJobsCompleted(ctx: ServiceContext, trx: Executor, jobIds: readonly string[]): Promise<boolean> {
  const rows = (await Promise.all(jobIds.map((id) => findJob(trx, id)))).filter((row) => row !== undefined);
  if (rows.length === 0 || (await enabledWebhooksOfProjects(trx, [...new Set(rows.map((r) => r.project_id))])).length === 0) return false;
  const views = await viewJobs(trx, rows, jobClock(ctx));
  const events = views.filter((view) => view.state.status === 'completed').map((view) => jobCompletedEvent(view.row));
  return queueWebhookEvents(ctx, trx, events);
}

/** `import.completed` (and `job.completed` for its job), in the transaction that completes the import. */
export async function queueImportCompleted(
  ctx: ServiceContext,
  trx: Executor,
  row: { id: string; project_id: string; job_id: string | null },
): Promise<boolean> {
  const queued = await queueWebhookEvents(ctx, trx, [
    { projectId: row.project_id, type: 'import.completed', key: `import.completed:${row.id}`, subject: { importId: row.id } },
  ]);
  const queuedJob = row.job_id !== null && (await queueJobsCompleted(ctx, trx, [row.job_id]));
  return queued || queuedJob;
}

/**
 * Announces the quarantines that expired by now and were not announced yet (`quarantine.expired`),
 * a hundred at a time, each marked announced in the transaction that queues it. Expiries with no
 * webhook to hear them are marked too: a webhook added later does not hear of old expiries.
 */
export async function queueExpiredQuarantines(ctx: ServiceContext, trx: Executor): Promise<boolean> {
  const now = ctx.clock().toISOString();
  let queued = false;
  for (const row of await unannouncedExpiries(trx, now, 100)) {
    const data: EventData<'quarantine.expired'> = {
      project: await projectData(trx, row.project_id),
      test: { id: row.test_id, name: row.test_name, url: pageUrl(ctx, `/tests/${row.test_id}`) },
      quarantine: { owner: row.owner, reason: row.reason, expiresAt: row.expires_at },
    };
    const key = `quarantine.expired:${row.test_id}:${row.expires_at}`;
    queued =
      (await queueWebhookEvents(ctx, trx, [{ projectId: row.project_id, type: 'quarantine.expired', key, subject: { data } }])) || queued;
    await markExpiryAnnounced(trx, row.test_id, row.expires_at, now);
  }
  return queued;
}

export async function projectData(executor: Executor, projectId: string): Promise<Static<typeof EventProject>> {
  const project = await findProject(executor, projectId);
  return { id: projectId, key: project?.key ?? '', name: project?.name ?? '' };
}

/** How many failures, compared tests and groups a payload lists at most. */
const FAILURES_MAX = 20;
const COMPARED_MAX = 50;

/** A delivery's `data`, built after the commit for what needs reading (a job's comparison, an import's counts). */
export async function buildEventData(ctx: ServiceContext, delivery: WebhookDeliveriesTable): Promise<unknown> {
  const subject = JSON.parse(delivery.subject) as EventSubject;
  if ('data' in subject) return subject.data;
  if ('importId' in subject) {
    const row = await findImport(ctx.db, subject.importId);
    const counts = row?.summary ? (JSON.parse(row.summary) as { counts?: { runs?: number } }).counts : undefined;
    const data: EventData<'import.completed'> = {
      project: await projectData(ctx.db, delivery.project_id),
      import: {
        id: subject.importId,
        fileName: row?.file_name ?? '',
        status: 'completed',
        jobId: row?.job_id ?? null,
        url: row?.job_id ? pageUrl(ctx, `/jobs/${row.job_id}`) : null,
        cases: counts?.runs ?? 0,
      },
    };
    return data;
  }
  return jobCompletedData(ctx, delivery.project_id, subject.jobId);
}

async function jobCompletedData(ctx: ServiceContext, projectId: string, jobId: string): Promise<EventData<'job.completed'>> {
  const comparison = await compareJobs(ctx, jobId, {});
  const { job } = comparison;
  const p = job.state.progress;
  const failures = [...comparison.newFailures, ...comparison.stillFailing].filter((test) => test.runId !== null).slice(0, FAILURES_MAX);
  const screenshots = await firstScreenshotsOfRuns(
    ctx.db,
    failures.map((test) => test.runId as string),
  );
  // Each screenshot link is signed for its image and expires (HOOK-14): the recipient has no session.
  const signed = ctx.config.publicUrl === undefined ? new Map<string, string>() : await signedThumbnailQueries(ctx, screenshots.values());
  const screenshotUrl = (runId: string) => {
    const image = screenshots.get(runId);
    return image === undefined ? null : pageUrl(ctx, `/api/v1/images/${image}/signed?${signed.get(image)}`);
  };
  const compared = (test: { name: string; runId: string | null }) => ({
    name: test.name,
    runId: test.runId,
    url: test.runId === null ? null : pageUrl(ctx, `/runs/${test.runId}`),
  });
  return {
    project: await projectData(ctx.db, projectId),
    job: {
      id: job.row.id,
      name: job.row.name,
      status: job.state.status,
      branch: job.request.branch,
      targetBranch: job.request.targetBranch ?? null,
      build: job.request.build,
      ciUrl: job.row.ci_url,
      commit: job.request.commit,
      startedAt: job.state.startedAt,
      finishedAt: job.state.finishedAt,
      url: pageUrl(ctx, `/jobs/${job.row.id}`),
      tests: p.tests,
      runs: { total: p.total, passed: p.passed, failed: p.failed, broken: p.broken, skipped: p.skipped, aborted: p.aborted },
    },
    failures: failures.map((test) => ({
      runId: test.runId as string,
      name: test.name,
      verdict: test.verdict === 'flaky' ? 'passed' : test.verdict,
      url: pageUrl(ctx, `/runs/${test.runId}`),
      screenshotUrl: screenshotUrl(test.runId as string),
    })),
    comparison: {
      baseJobId: comparison.base?.row.id ?? null,
      baseBranch: comparison.base?.request.branch ?? null,
      newFailures: comparison.newFailures.slice(0, COMPARED_MAX).map(compared),
      fixed: comparison.fixed.slice(0, COMPARED_MAX).map(compared),
      newErrorGroups: comparison.newErrorGroups
        .slice(0, COMPARED_MAX)
        .map(({ group, tests }) => ({ id: group.id, title: group.title.slice(0, 2000), tests })),
    },
  };
}
