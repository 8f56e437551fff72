import { useEffect, useLayoutEffect, useState } from 'preact/hooks';
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
import { describeError } from '../data.ts';
import { ConfirmDeletion, DeletedPage, type Freed, useApiUntilDeleted, useMeasuredDeletion } from '../deletion.tsx';
import { Fact, LabelFacts, TimeFacts } from '../facts.tsx';
import { between, formatDuration, formatTestCounts, formatTime } from '../format.ts';
import { type Column, ListTable } from '../list-table.tsx';
import { downloadFromApi } from '../run/download.ts';
import type { TestRun } from '../run/steps.ts';
import { api } from '../session.ts';
import type { TestProgress } from '../triage/api.ts';
import { CompareForm } from '../triage/compare-form.tsx';
import { DRAW_WHOLE_UP_TO, useWindowList } from '../virtual.ts';
import '../admin/admin.css';
import '../forms.css';
import '../run/run.css';

type Job = Static<typeof v1.jobs.Job>;

type RunPage = Static<(typeof v1.runs.listRuns.responses)[200]>;

interface JobData {
  job: Job;
  /**
   * The newest runs: the page drawn at once, before the rest arrive (docs/web.md, "Pages at
   * scale").
   */
  first: RunPage;
}

/** A job is open until it is completed or cancelled; a launch stays running between tests until its reporter closes it (JOB-1). */
const isOpen = (job: Job) => job.status !== 'completed' && job.status !== 'cancelled';

/** While the job is open the page looks again every 3 seconds, and stops once it is over. */
const LIVE = { refreshMs: 3000, refreshWhile: (data: JobData | undefined) => data !== undefined && isOpen(data.job) };

/** Runs per call: the API's largest page by default. */
const RUNS_PER_PAGE = 200;

async function loadJob(client: AttestClient, jobId: string): Promise<JobData> {
  const [job, first] = await Promise.all([
    client.call(v1.jobs.getJob, { params: { jobId } }),
    client.call(v1.runs.listRuns, { query: { jobId, limit: RUNS_PER_PAGE } }),
  ]);
  return { job, first };
}

interface AllRuns {
  /** Oldest first, as the grid reads; the list shows them newest first. */
  runs: TestRun[];
  /** Whether every page has come (a job holds at most 10,000 runs). */
  complete: boolean;
  error?: Error;
}

/**
 * Every run of the job, page after page through the API's cursor, from its newest page on. The
 * first time, each page shows as it comes; a refresh of a live job replaces the runs once all of
 * its pages have come, so the list does not shrink and grow every 3 seconds.
 */
function useAllRuns(jobId: string, first: RunPage | undefined): AllRuns {
  const [state, setState] = useState<AllRuns & { jobId?: string }>({ runs: [], complete: false });
  useEffect(() => {
    if (!first) return;
    let stopped = false;
    const items = [...first.items];
    const publish = (complete: boolean) =>
      setState((old) => (complete || old.jobId !== jobId || !old.complete ? { jobId, runs: [...items].reverse(), complete } : old));
    publish(!first.nextCursor);
    (async () => {
      let cursor = first.nextCursor ?? undefined;
      while (cursor && !stopped) {
        const page = await api().call(v1.runs.listRuns, { query: { jobId, limit: RUNS_PER_PAGE, cursor } });
        if (stopped) return;
        items.push(...page.items);
        cursor = page.nextCursor ?? undefined;
        publish(!cursor);
      }
    })().catch((error: Error) => {
      if (!stopped) setState((old) => ({ ...old, error }));
    });
    return () => {
      stopped = true;
    };
  }, [jobId, first]);
  return state.jobId === jobId ? state : { runs: [...(first?.items ?? [])].reverse(), complete: !first?.nextCursor };
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
      <p data-testid="test-counts">{formatTestCounts(tests, tests.total)}</p>
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

/** A tile: its link, named by the run and its state. */
function RunTile({ run }: { run: TestRun }) {
  return (
    <a
      href={`/runs/${run.id}`}
      class={`run-tile status-${stateOf(run)}`}
      title={`${run.name}: ${stateOf(run)}`}
      aria-label={`${run.name}: ${stateOf(run)}`}
      data-testid="run-tile"
    >
      <span aria-hidden="true">{LETTER[stateOf(run)] ?? '?'}</span>
      <span class="visually-hidden">
        {run.name}: {stateOf(run)}
      </span>
    </a>
  );
}

/** The grid's tiles are at least 2.1rem wide, 4px apart (run.css). */
const TILE_MIN = 33.6;
const TILE_GAP = 4;

/**
 * A long job's tiles, a row of them at a time: only the rows near the viewport are drawn, a
 * hidden spacer holding the place of the rest; the row holding the focus stays drawn.
 */
function VirtualGrid({ runs }: { runs: TestRun[] }) {
  const [width, setWidth] = useState(0);
  const [focused, setFocused] = useState<number | undefined>();
  const columns = Math.max(1, Math.floor((width + TILE_GAP) / (TILE_MIN + TILE_GAP)));
  const rowHeight = width > 0 ? (width - (columns - 1) * TILE_GAP) / columns + TILE_GAP : TILE_MIN + TILE_GAP;
  const list = useWindowList<HTMLUListElement>({
    count: Math.ceil(runs.length / columns),
    estimate: () => rowHeight,
    keep: focused === undefined ? undefined : Math.floor(focused / columns),
  });
  useLayoutEffect(() => {
    const element = list.ref.current;
    if (!element) return;
    const observer = new ResizeObserver(() => setWidth(element.clientWidth));
    observer.observe(element);
    setWidth(element.clientWidth);
    return () => observer.disconnect();
  }, []);
  const spacer = (key: string, height: number) =>
    // The grid's own gap is already between the spacer and the next row.
    height > TILE_GAP ? (
      <li key={key} class="virtual-gap grid-gap" aria-hidden="true" style={{ height: `${height - TILE_GAP}px` }} />
    ) : null;
  return (
    <ul
      ref={list.ref}
      class="run-grid"
      aria-label={`Runs by verdict (${runs.length})`}
      style={{ gridTemplateColumns: `repeat(${columns}, 1fr)` }}
      onFocusIn={(event) => {
        const index = (event.target as Element).closest('li')?.getAttribute('data-index');
        if (index) setFocused(Number(index));
      }}
    >
      {list.items.flatMap((row) => [
        spacer(`gap-${row.key}`, row.gap),
        ...runs.slice(row.index * columns, (row.index + 1) * columns).map((run, i) => (
          <li key={run.id} data-index={row.index * columns + i}>
            <RunTile run={run} />
          </li>
        )),
      ])}
      {spacer('gap-end', list.after)}
    </ul>
  );
}

/** The job's runs as tiles, one per run, in the order they were made. */
function RunGrid({ runs, total }: { runs: TestRun[]; total: number }) {
  return (
    <section class="panel" aria-labelledby="grid-heading">
      <div class="section-head">
        <h2 id="grid-heading">Runs</h2>
        <span class="muted grid-legend">
          {runs.length < total ? `${runs.length} of ${total} runs loaded` : `${runs.length} runs`} · ✓ passed · ✗ failed · ! broken · –
          skipped · ▶ running · … queued · ⊘ aborted
        </span>
      </div>
      {runs.length === 0 ? (
        <p class="muted">No runs yet.</p>
      ) : runs.length > DRAW_WHOLE_UP_TO ? (
        <VirtualGrid runs={runs} />
      ) : (
        <ul class="run-grid" aria-label="Runs by verdict">
          {runs.map((run) => (
            <li key={run.id}>
              <RunTile run={run} />
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

const RUN_COLUMNS: Column<TestRun>[] = [
  { header: 'Run', class: 'name', cell: (run) => run.name, href: (run) => `/runs/${run.id}` },
  // A retry is the same test again (TRIAGE-14): its attempt is a column, never part of its name.
  { header: 'Attempt', class: 'num', cell: (run) => run.attempt + 1 },
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
  const all = useAllRuns(jobId, data?.first);
  if (deleted) return <DeletedPage freed={deleted} links={[{ href: `/projects/${deleted.projectId}`, label: 'Back to the project' }]} />;
  if (!data) return <PageWaiting title="Job" error={error} />;
  const { job } = data;
  const { runs } = all;
  return (
    <Page title={job.name} actions={<JobActions job={job} runs={job.progress.total} onChanged={reload} onDeleted={onDeleted} />}>
      <Breadcrumb projectId={job.projectId} here="Job" />
      <IncidentBanner job={job} />
      <JobSummary job={job} refreshError={error} />
      <section class="panel" aria-labelledby="compare-heading">
        <h2 id="compare-heading">Compare with…</h2>
        <CompareForm jobId={job.id} baseBranch={job.branch ?? undefined} />
      </section>
      {all.error ? <ErrorBox error={new Error(`Not every run could be loaded: ${describeError(all.error)}`)} /> : null}
      <RunGrid runs={runs} total={Math.max(job.progress.total, runs.length)} />
      {runs.length > 0 ? (
        <section class="panel" aria-labelledby="table-heading">
          <h2 id="table-heading">Run list</h2>
          <ListTable class="runs-table" rows={runs} columns={RUN_COLUMNS} rowKey={(run) => run.id} />
        </section>
      ) : null}
    </Page>
  );
}
