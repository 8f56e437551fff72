import type { Static } from 'typebox';
import { type AttestClient, v1 } from '../../../src/client/index.ts';
import { CiLink } from '../ci-link.tsx';
import { Badge, ErrorBox, LiveStatus, Loading, Page } from '../components.tsx';
import { useApi } from '../data.ts';
import { between, formatDuration, formatTime } from '../format.ts';
import type { TestRun } from '../run/steps.ts';
import '../run/run.css';

type Job = Static<typeof v1.jobs.Job>;

interface JobData {
  job: Job;
  runs: TestRun[];
}

/** A job is open until it is completed or cancelled; a launch stays running between tests until its reporter closes it (JOB-1). */
const isOpen = (job: Job) => job.status !== 'completed' && job.status !== 'cancelled';

/** While the job is open the page looks again every 3 seconds, and stops once it is over. */
const LIVE = { refreshMs: 3000, refreshWhile: (data: JobData) => isOpen(data.job) };

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

/** What a run's tile shows: its verdict once completed, else its status. */
const stateOf = (run: TestRun) => run.verdict ?? run.status;
const LETTER: Record<string, string> = { passed: '✓', failed: '✗', broken: '!', skipped: '–', running: '▶', queued: '…', aborted: '⊘' };

export function JobPage({ jobId }: { jobId: string }) {
  const { data, error } = useApi((client) => loadJob(client, jobId), [jobId], LIVE);
  const project = useApi(
    (client) => (data ? client.call(v1.projects.getProject, { params: { projectId: data.job.projectId } }) : Promise.resolve(undefined)),
    [data?.job.projectId],
  );
  if (!data) {
    return <Page title="Job">{error ? <ErrorBox error={error} /> : <Loading />}</Page>;
  }
  const { job, runs } = data;
  const live = isOpen(job);
  const labels = (['environment', 'branch', 'build', 'commit'] as const).filter((label) => job[label]);
  const duration = between(job.startedAt, job.finishedAt ?? job.cancelledAt);
  return (
    <Page title={job.name}>
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href={`/projects/${project.data?.key ?? job.projectId}`}>{project.data?.name ?? 'Project'}</a>
        {' › '}
        <span aria-current="page">Job</span>
      </nav>
      <div class="panel">
        <div class="run-badges">
          <Badge value={job.status} />
          <LiveStatus live={live} error={error} />
        </div>
        <h2 class="progress-heading">Progress</h2>
        <ProgressBar progress={job.progress} />
        <dl class="facts job-facts">
          {labels.map((label) => (
            <div key={label}>
              <dt>{label[0]?.toUpperCase() + label.slice(1)}</dt>
              <dd class={label === 'commit' ? 'mono' : undefined}>{job[label]}</dd>
            </div>
          ))}
          {job.deviceLabels.length > 0 ? (
            <div>
              <dt>Device labels</dt>
              <dd>{job.deviceLabels.join(', ')}</dd>
            </div>
          ) : null}
          <div>
            <dt>Tests</dt>
            <dd>
              {job.testIds.length > 0
                ? job.testIds.length
                : job.closedAt
                  ? 'Launch (closed: no more runs join)'
                  : 'Launch (runs join as they start)'}
            </dd>
          </div>
          {job.ciUrl ? (
            <div>
              <dt>CI build</dt>
              <dd>
                <CiLink url={job.ciUrl} />
              </dd>
            </div>
          ) : null}
          <div>
            <dt>Created</dt>
            <dd>{formatTime(job.createdAt)}</dd>
          </div>
          <div>
            <dt>Started</dt>
            <dd>{formatTime(job.startedAt)}</dd>
          </div>
          <div>
            <dt>{job.cancelledAt ? 'Cancelled' : 'Finished'}</dt>
            <dd>{formatTime(job.cancelledAt ?? job.finishedAt)}</dd>
          </div>
          <div>
            <dt>Duration</dt>
            <dd>{formatDuration(duration)}</dd>
          </div>
        </dl>
      </div>

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

      {runs.length > 0 ? (
        <section class="panel" aria-labelledby="table-heading">
          <h2 id="table-heading">Run list</h2>
          <table class="list runs-table">
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Verdict</th>
                <th scope="col">Device</th>
                <th scope="col">Started</th>
                <th scope="col">Duration</th>
              </tr>
            </thead>
            <tbody>
              {runs.map((run) => (
                <tr key={run.id}>
                  <td class="name">
                    <a href={`/runs/${run.id}`}>{run.name}</a>
                  </td>
                  <td>
                    <Badge value={stateOf(run)} />
                  </td>
                  <td>{run.deviceId ?? '—'}</td>
                  <td>{formatTime(run.startedAt)}</td>
                  <td>{formatDuration(between(run.startedAt, run.finishedAt))}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ) : null}
    </Page>
  );
}
