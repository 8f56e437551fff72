import { useLocation } from 'preact-iso';
import type { Static } from 'typebox';
import type { QueryOf } from '../../../src/api/endpoint.ts';
import { v1 } from '../../../src/client/index.ts';
import { Badge, ErrorBox, Loading, Page } from '../components.tsx';
import { useApi } from '../data.ts';
import { type FilterField, FilterForm, filterValues } from '../filter-form.tsx';
import { between, formatDuration, formatTestCounts, formatTime } from '../format.ts';
import { type Column, ListTable, Pager, pageQuery } from '../list-table.tsx';
import type { TestRun } from '../run/steps.ts';
import { UsageSummary } from '../usage.tsx';

type Job = Static<typeof v1.jobs.Job>;

const RUN_FILTERS = [
  { name: 'status', label: 'Status', options: ['queued', 'running', 'completed', 'aborted'] },
  { name: 'verdict', label: 'Verdict', options: ['passed', 'failed', 'broken', 'skipped'] },
  { name: 'branch', label: 'Branch' },
  { name: 'build', label: 'Build' },
  { name: 'environment', label: 'Environment' },
  { name: 'deviceId', label: 'Device' },
  { name: 'from', label: 'From', type: 'datetime-local' },
  { name: 'to', label: 'To', type: 'datetime-local' },
] as const satisfies readonly FilterField[];

/** Live while anything on the page still runs. */
const LIVE = {
  refreshMs: 3000,
  refreshWhile: (page: { items: readonly { status: string }[] }) =>
    page.items.some((item) => item.status === 'running' || item.status === 'queued'),
};

/** A datetime-local value as an ISO time for the API (the browser's zone), or undefined. */
const isoOf = (local: string | undefined) => (local ? new Date(local).toISOString() : undefined);

const RUN_COLUMNS: Column<TestRun>[] = [
  { header: 'Run', cell: (run) => run.name, href: (run) => `/runs/${run.id}` },
  { header: 'Attempt', class: 'num', cell: (run) => run.attempt + 1 },
  { header: 'Verdict', cell: (run) => <Badge value={run.status === 'completed' ? run.verdict : run.status} /> },
  { header: 'Branch', cell: (run) => run.branch ?? '' },
  { header: 'Build', cell: (run) => run.build ?? '' },
  { header: 'Device', cell: (run) => run.deviceId ?? '' },
  { header: 'Started', cell: (run) => formatTime(run.startedAt ?? run.createdAt) },
  { header: 'Duration', cell: (run) => formatDuration(between(run.startedAt, run.finishedAt)) },
];

function RunsTab({ projectId }: { projectId: string }) {
  const { query } = useLocation();
  const { from, to, ...labels } = filterValues(query, RUN_FILTERS);
  const filters = { ...labels, ...(from ? { from: isoOf(from) } : {}), ...(to ? { to: isoOf(to) } : {}) };
  const runs = useApi(
    // The select fields take only the API's own values, so the filters are the API's query as they stand.
    (client) =>
      client.call(v1.runs.listRuns, { query: { projectId, ...pageQuery(query), ...(filters as QueryOf<typeof v1.runs.listRuns>) } }),
    [projectId, JSON.stringify(query)],
    LIVE,
  );
  return (
    <>
      <FilterForm label="Filter runs" fields={RUN_FILTERS} />
      <ListTable rows={runs.data?.items} error={runs.error} empty="No run matches." columns={RUN_COLUMNS} rowKey={(run) => run.id} />
      <Pager nextCursor={runs.data?.nextCursor} first="Newest" next="Older runs" />
    </>
  );
}

const JOB_COLUMNS: Column<Job>[] = [
  { header: 'Job', cell: (job) => job.name, href: (job) => `/jobs/${job.id}` },
  { header: 'Status', cell: (job) => <Badge value={job.status} /> },
  // Tests, retries folded (TRIAGE-14): the job page, the dashboard and the comparison count the same way.
  { header: 'Tests', cell: ({ progress }) => formatTestCounts(progress.tests, progress.tests.total) },
  { header: 'Branch', cell: (job) => job.branch ?? '' },
  { header: 'Created', cell: (job) => formatTime(job.createdAt) },
];

function JobsTab({ projectId }: { projectId: string }) {
  const { query } = useLocation();
  const jobs = useApi(
    (client) => client.call(v1.jobs.listJobs, { query: { projectId, ...pageQuery(query) } }),
    [projectId, query.cursor],
    LIVE,
  );
  return (
    <>
      <ListTable rows={jobs.data?.items} error={jobs.error} empty="No job yet." columns={JOB_COLUMNS} rowKey={(job) => job.id} />
      <Pager nextCursor={jobs.data?.nextCursor} first="Newest" next="Older jobs" />
    </>
  );
}

/** A project: its runs (filtered, paged, live) or its jobs. */
export function ProjectPage({ projectKey }: { projectKey: string }) {
  const { query, path } = useLocation();
  const project = useApi((client) => client.call(v1.projects.getProject, { params: { projectId: projectKey } }), [projectKey]);
  const tab = query.tab === 'jobs' ? 'jobs' : 'runs';
  if (project.error) return <ErrorBox error={project.error} />;
  if (project.data === undefined) return <Loading />;
  const { id, key, name, usage } = project.data;
  return (
    <Page
      title={`${key} · ${name}`}
      actions={
        <>
          <a class="button secondary" href={`/projects/${key}/dashboard`}>
            Dashboard
          </a>
          <a class="button secondary" href={`/projects/${key}/failures`}>
            Failures
          </a>
          <a class="button secondary" href={`/projects/${key}/tests`}>
            Tests
          </a>
          <a class="button secondary" href={`/projects/${key}/traceability`}>
            Traceability
          </a>
          <a class="button secondary" href={`/projects/${key}/import`}>
            Import results
          </a>
          <a class="button secondary" href={`/projects/${key}/settings`}>
            Settings
          </a>
        </>
      }
    >
      <p>
        <UsageSummary usage={usage} />
      </p>
      <nav class="tabs" aria-label="Project">
        <a href={path} aria-current={tab === 'runs' ? 'page' : undefined}>
          Runs
        </a>
        <a href={`${path}?tab=jobs`} aria-current={tab === 'jobs' ? 'page' : undefined}>
          Jobs
        </a>
      </nav>
      {tab === 'runs' ? <RunsTab projectId={id} /> : <JobsTab projectId={id} />}
    </Page>
  );
}
