import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import type { Static } from 'typebox';
import { type AttestClient, v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { ConfirmAction } from '../admin/confirm.tsx';
import { atLeast, useMe } from '../admin/me.ts';
import { ActionStatus } from '../admin/status.tsx';
import { Breadcrumb } from '../breadcrumb.tsx';
import { CiLink } from '../ci-link.tsx';
import { Badge, ErrorBox, LiveStatus, Page, PageWaiting } from '../components.tsx';
import { ConfirmDeletion, DeletedPage, type Freed, useApiUntilDeleted, useMeasuredDeletion } from '../deletion.tsx';
import { Fact, LabelFacts, TimeFacts } from '../facts.tsx';
import { between, formatDuration, formatTime } from '../format.ts';
import { type Column, ListTable } from '../list-table.tsx';
import { downloadFromApi } from '../run/download.ts';
import type { TestRun } from '../run/steps.ts';
import type { TestProgress } from '../triage/api.ts';
import { CompareForm } from '../triage/compare-form.tsx';
import '../admin/admin.css';
import '../forms.css';
import '../run/run.css';

type Job = Static<typeof v1.jobs.Job>;

interface JobData {
  job: Job;
  runs: TestRun[];
}

/** A job is open until it is completed or cancelled; a launch stays running between tests until its reporter closes it (JOB-1). */
const isOpen = (job: Job) => job.status !== 'completed' && job.status !== 'cancelled';

/** While the job is open the page looks again every 3 seconds, and stops once it is over. */
const LIVE = { refreshMs: 3000, refreshWhile: (data: JobData | undefined) => data !== undefined && isOpen(data.job) };

/** Every run of the job, page after page (a job holds at most 10,000). */
async function loadJob(client: AttestClient, jobId: string): Promise<JobData> {
  const job = await client.call(v1.jobs.getJob, { params: { jobId } });
  const runs: TestRun[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.call(v1.runs.listRuns, { query: { jobId, limit: 200, cursor } });
    runs.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  // The list is newest first; the grid reads in the order the runs were made.
  runs.reverse();
  return { job, runs };
}

const PARTS = ['passed', 'failed', 'broken', 'skipped', 'running', 'queued', 'aborted'] as const;

function ProgressBar({ progress }: { progress: Job['progress'] }) {
  const total = Math.max(1, progress.total);
  const done = progress.completed + progress.aborted;
  return (
    <div>
      <div
        class="progress"
        role="img"
        aria-label={`${done} of ${progress.total} runs finished: ${PARTS.map((p) => `${progress[p]} ${p}`).join(', ')}`}
      >
        {PARTS.map((part) =>
          progress[part] > 0 ? (
            <span
              key={part}
              class={`progress-part status-${part}`}
              style={{ width: `${(progress[part] / total) * 100}%` }}
              title={`${progress[part]} ${part}`}
            />
          ) : null,
        )}
      </div>
      <ul class="progress-legend">
        <li>
          <strong>{progress.total}</strong> total
        </li>
        {PARTS.map((part) => (
          <li key={part}>
            <span class={`legend-swatch status-${part}`} aria-hidden="true" />
            {progress[part]} {part}
          </li>
        ))}
      </ul>
    </div>
  );
}

const TEST_PARTS = ['passed', 'failed', 'broken', 'flaky', 'skipped', 'unfinished'] as const;

/** The job's tests, retries folded into their test (TRIAGE-5): the final attempt decides, a failure then a pass is flaky. */
function TestCounts({ tests }: { tests: TestProgress }) {
  return (
    <div data-testid="test-progress">
      <h3 class="progress-heading">Tests</h3>
      <ul class="progress-legend" aria-label="Tests, retries folded into their test">
        <li>
          <strong>{tests.total}</strong> tests
        </li>
        {TEST_PARTS.map((part) => (
          <li key={part}>
            {tests[part]} {part}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** A job one error group dominated (TRIAGE-4): one cause to triage, not each of its failures. */
function IncidentBanner({ job }: { job: Job }) {
  const { incident } = job;
  if (!incident) return null;
  return (
    <div class="panel incident-banner" role="note" data-testid="incident">
      <strong>Incident:</strong> {incident.failedRuns} failed runs share one cause.{' '}
      <a href={`/projects/${job.projectId}/failures/${incident.failureGroupId}`}>Open the error group</a>
    </div>
  );
}

/** What a run's tile shows: its verdict once completed, else its status. */
const stateOf = (run: TestRun) => run.verdict ?? run.status;
const LETTER: Record<string, string> = { passed: '✓', failed: '✗', broken: '!', skipped: '–', running: '▶', queued: '…', aborted: '⊘' };

/** The job's state, its progress and what it is: labels, tests, CI build and times. */
function JobSummary({ job, refreshError }: { job: Job; refreshError: Error | undefined }) {
  const tests =
    job.testIds.length > 0 ? job.testIds.length : job.closedAt ? 'Launch (closed: no more runs join)' : 'Launch (runs join as they start)';
  return (
    <div class="panel">
      <div class="run-badges">
        <Badge value={job.status} />
        <LiveStatus live={isOpen(job)} error={refreshError} />
      </div>
      <h2 class="progress-heading">Progress</h2>
      <ProgressBar progress={job.progress} />
      <TestCounts tests={job.progress.tests} />
      <dl class="facts job-facts">
        <LabelFacts labels={job} />
        {job.deviceLabels.length > 0 ? <Fact term="Device labels">{job.deviceLabels.join(', ')}</Fact> : null}
        <Fact term="Tests">{tests}</Fact>
        {job.ciUrl ? (
          <Fact term="CI build">
            <CiLink url={job.ciUrl} />
          </Fact>
        ) : null}
        <TimeFacts
          createdAt={job.createdAt}
          startedAt={job.startedAt}
          endedAt={job.cancelledAt ?? job.finishedAt}
          ended={job.cancelledAt ? 'Cancelled' : 'Finished'}
          durationMs={between(job.startedAt, job.finishedAt ?? job.cancelledAt)}
        />
      </dl>
    </div>
  );
}

/** The job's runs as tiles, one per run, in the order they were made. */
function RunGrid({ runs }: { runs: TestRun[] }) {
  return (
    <section class="panel" aria-labelledby="grid-heading">
      <div class="section-head">
        <h2 id="grid-heading">Runs</h2>
        <span class="muted grid-legend">
          {runs.length} runs · ✓ passed · ✗ failed · ! broken · – skipped · ▶ running · … queued · ⊘ aborted
        </span>
      </div>
      {runs.length === 0 ? (
        <p class="muted">No runs yet.</p>
      ) : (
        <ul class="run-grid" aria-label="Runs by verdict">
          {runs.map((run) => (
            <li key={run.id}>
              <a
                href={`/runs/${run.id}`}
                class={`run-tile status-${stateOf(run)}`}
                title={`${run.name}: ${stateOf(run)}`}
                aria-label={`${run.name}: ${stateOf(run)}`}
                data-testid="run-tile"
              >
                <span aria-hidden="true">{LETTER[stateOf(run)] ?? '?'}</span>
                <span class="sr-only">
                  {run.name}: {stateOf(run)}
                </span>
              </a>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

const RUN_COLUMNS: Column<TestRun>[] = [
  { header: 'Run', class: 'name', cell: (run) => run.name, href: (run) => `/runs/${run.id}` },
  { header: 'Verdict', cell: (run) => <Badge value={stateOf(run)} /> },
  { header: 'Device', cell: (run) => run.deviceId ?? '—' },
  { header: 'Started', cell: (run) => formatTime(run.startedAt) },
  { header: 'Duration', cell: (run) => formatDuration(between(run.startedAt, run.finishedAt)) },
];

/** The same tests on the same devices with the same labels, as a new job (JOB-2). */
const againBody = (job: Job) => ({
  projectId: job.projectId,
  name: job.name,
  testIds: job.testIds,
  deviceIds: job.deviceIds,
  deviceLabels: job.deviceLabels,
  ...Object.fromEntries((['branch', 'build', 'environment', 'commit'] as const).flatMap((l) => (job[l] ? [[l, job[l]]] : []))),
  ...(job.ciUrl ? { ciUrl: job.ciUrl } : {}),
});

const EXPORTS = [
  ['html', 'HTML report'],
  ['junit', 'JUnit'],
  ['zip', 'ZIP bundle'],
  ['allure', 'Allure'],
  ['xray', 'Xray'],
] as const;

/** The job's completed runs as one report, downloaded with the session key. */
function JobExport({ job }: { job: Job }) {
  const [format, setFormat] = useState<(typeof EXPORTS)[number][0]>('html');
  const action = useAction();
  const jobId = job.id;
  const exportJob = () =>
    action.run(
      () => downloadFromApi(`/testmgmt/jobs/${encodeURIComponent(jobId)}/export?format=${format}`, `job-${jobId}-${format}`),
      (name) => `Saved ${name}.`,
    );
  return (
    <span class="job-export">
      <label class="visually-hidden" for="job-export-format">
        Export format
      </label>
      <select id="job-export-format" value={format} onChange={(e) => setFormat(e.currentTarget.value as typeof format)}>
        {EXPORTS.map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
      <button type="button" class="secondary" onClick={exportJob} disabled={action.busy}>
        Export job
      </button>
      <ActionStatus state={action} />
    </span>
  );
}

/**
 * "Delete job" (manager, UI-12): asked first, naming how many runs go with it (every run of the job,
 * with what they hold, in one transaction) and what the project holds; then what it freed.
 */
function DeleteJob({ job, runs, onDeleted }: { job: Job; runs: number; onDeleted: (freed: Freed) => void }) {
  const deletion = useMeasuredDeletion(job.projectId);
  const itsRuns = runs === 1 ? 'its run' : `its ${runs.toLocaleString('en')} runs`;
  const confirm = async () => {
    const freed = await deletion.confirm(`the job ${job.name} and ${itsRuns}`, (client) =>
      client.call(v1.jobs.deleteJob, { params: { jobId: job.id } }),
    );
    if (freed) onDeleted(freed);
  };
  return (
    <ConfirmDeletion
      deletion={deletion}
      ask="Delete job"
      label={`Delete ${job.name} and ${itsRuns}`}
      onConfirm={confirm}
      testId="delete-job"
    >
      Delete the job <strong>{job.name}</strong> and its {runs.toLocaleString('en')} run{runs === 1 ? '' : 's'}, with their steps, text
      cells and artifacts?
    </ConfirmDeletion>
  );
}

/**
 * Cancel (asked twice: its queued runs are aborted) while the job is open; close a launch whose
 * reporter never did; run again once it has tests; export.
 */
function JobActions({
  job,
  runs,
  onChanged,
  onDeleted,
}: {
  job: Job;
  runs: number;
  onChanged: () => void;
  onDeleted: (freed: Freed) => void;
}) {
  const { route } = useLocation();
  const me = useMe();
  const again = useAction();
  const close = useAction();
  const closeLaunch = async () => {
    if (
      await close.run(
        (client) => client.call(v1.jobs.completeJob, { params: { jobId: job.id } }),
        () => 'Closed the launch.',
      )
    )
      onChanged();
  };
  const runAgain = async () => {
    const created = await again.run(
      (client) => client.call(v1.jobs.createJob, { body: againBody(job) }),
      (next) => `Launched ${next.name}.`,
    );
    if (created) route(`/jobs/${created.id}`);
  };
  return (
    <div class="job-actions">
      {isOpen(job) ? (
        <ConfirmAction
          verb="Cancel job"
          what={job.name}
          done={`Cancelled ${job.name}.`}
          perform={(client) => client.call(v1.jobs.cancelJob, { params: { jobId: job.id } })}
          onDone={onChanged}
        />
      ) : null}
      {job.testIds.length === 0 && !job.closedAt && job.status !== 'cancelled' ? (
        <button type="button" class="secondary" onClick={closeLaunch} disabled={close.busy}>
          Close launch
        </button>
      ) : null}
      {job.testIds.length > 0 ? (
        <button type="button" onClick={runAgain} disabled={again.busy}>
          Run again
        </button>
      ) : null}
      <JobExport job={job} />
      {atLeast(me.data?.role, 'manager') ? <DeleteJob job={job} runs={runs} onDeleted={onDeleted} /> : null}
      {again.error ? <ErrorBox error={again.error} /> : null}
      {close.error ? <ErrorBox error={close.error} /> : null}
    </div>
  );
}

export function JobPage({ jobId }: { jobId: string }) {
  const { data, error, reload, deleted, onDeleted } = useApiUntilDeleted((client) => loadJob(client, jobId), [jobId], LIVE);
  if (deleted) return <DeletedPage freed={deleted} links={[{ href: `/projects/${deleted.projectId}`, label: 'Back to the project' }]} />;
  if (!data) return <PageWaiting title="Job" error={error} />;
  const { job, runs } = data;
  return (
    <Page title={job.name} actions={<JobActions job={job} runs={runs.length} onChanged={reload} onDeleted={onDeleted} />}>
      <Breadcrumb projectId={job.projectId} here="Job" />
      <IncidentBanner job={job} />
      <JobSummary job={job} refreshError={error} />
      <section class="panel" aria-labelledby="compare-heading">
        <h2 id="compare-heading">Compare with…</h2>
        <CompareForm jobId={job.id} baseBranch={job.branch ?? undefined} />
      </section>
      <RunGrid runs={runs} />
      {runs.length > 0 ? (
        <section class="panel" aria-labelledby="table-heading">
          <h2 id="table-heading">Run list</h2>
          <ListTable class="runs-table" rows={runs} columns={RUN_COLUMNS} rowKey={(run) => run.id} />
        </section>
      ) : null}
    </Page>
  );
}
