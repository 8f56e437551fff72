import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import { Badge, ErrorBox, Loading, Page } from '../components.tsx';
import { useApi } from '../data.ts';
import { between, formatDuration, formatTime } from '../format.ts';
import { withQuery } from '../url.ts';
import { UsageSummary } from '../usage.tsx';

const RUN_FILTERS = ['status', 'verdict', 'branch', 'build', 'environment', 'deviceId', 'from', 'to'] as const;
const STATUSES = ['', 'queued', 'running', 'completed', 'aborted'];
const VERDICTS = ['', 'passed', 'failed', 'broken', 'skipped'];
const PAGE_SIZE = 50;

/** A datetime-local value as an ISO time for the API (the browser's zone), or undefined. */
const isoOf = (local: string | undefined) => (local ? new Date(local).toISOString() : undefined);

function RunFilters({ query, path }: { query: Record<string, string>; path: string }) {
  const { route } = useLocation();
  const submit = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const changes: Record<string, string | undefined> = { cursor: undefined };
    for (const name of RUN_FILTERS) changes[name] = String(form.get(name) ?? '').trim() || undefined;
    route(withQuery(path, query, changes));
  };
  const select = (name: 'status' | 'verdict', options: string[]) => (
    <label>
      {name === 'status' ? 'Status' : 'Verdict'}
      <select name={name} value={query[name] ?? ''}>
        {options.map((option) => (
          <option key={option} value={option}>
            {option || 'any'}
          </option>
        ))}
      </select>
    </label>
  );
  const text = (name: (typeof RUN_FILTERS)[number], label: string, type = 'text') => (
    <label>
      {label}
      <input name={name} type={type as 'text'} value={query[name] ?? ''} />
    </label>
  );
  return (
    <form class="filters" onSubmit={submit} aria-label="Filter runs">
      {select('status', STATUSES)}
      {select('verdict', VERDICTS)}
      {text('branch', 'Branch')}
      {text('build', 'Build')}
      {text('environment', 'Environment')}
      {text('deviceId', 'Device')}
      {text('from', 'From', 'datetime-local')}
      {text('to', 'To', 'datetime-local')}
      <button type="submit">Filter</button>
      <a href={path}>Clear</a>
    </form>
  );
}

function RunsTab({ projectId, query, path }: { projectId: string; query: Record<string, string>; path: string }) {
  const filters: Record<string, string | undefined> = {};
  for (const name of RUN_FILTERS) filters[name] = query[name] || undefined;
  const runs = useApi(
    (client) =>
      client.call(v1.runs.listRuns, {
        query: {
          projectId,
          limit: PAGE_SIZE,
          ...(query.cursor ? { cursor: query.cursor } : {}),
          ...(filters.status ? { status: filters.status as 'running' } : {}),
          ...(filters.verdict ? { verdict: filters.verdict as 'passed' } : {}),
          ...(filters.branch ? { branch: filters.branch } : {}),
          ...(filters.build ? { build: filters.build } : {}),
          ...(filters.environment ? { environment: filters.environment } : {}),
          ...(filters.deviceId ? { deviceId: filters.deviceId } : {}),
          ...(filters.from ? { from: isoOf(filters.from) } : {}),
          ...(filters.to ? { to: isoOf(filters.to) } : {}),
        },
      }),
    [projectId, JSON.stringify(query)],
    // Live while anything on the page still runs.
    { refreshMs: 3000, refreshWhile: (page) => page.items.some((run) => run.status === 'running' || run.status === 'queued') },
  );
  return (
    <>
      <RunFilters query={query} path={path} />
      {runs.error ? <ErrorBox error={runs.error} /> : null}
      {runs.data === undefined ? (
        <Loading />
      ) : runs.data.items.length === 0 ? (
        <p class="muted">No run matches.</p>
      ) : (
        <table class="list">
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Verdict</th>
              <th scope="col">Branch</th>
              <th scope="col">Build</th>
              <th scope="col">Device</th>
              <th scope="col">Started</th>
              <th scope="col">Duration</th>
            </tr>
          </thead>
          <tbody>
            {runs.data.items.map((run) => (
              <tr key={run.id}>
                <td>
                  <a href={`/runs/${run.id}`}>{run.name}</a>
                </td>
                <td>
                  <Badge value={run.status === 'completed' ? run.verdict : run.status} />
                </td>
                <td>{run.branch ?? ''}</td>
                <td>{run.build ?? ''}</td>
                <td>{run.deviceId ?? ''}</td>
                <td>{formatTime(run.startedAt ?? run.createdAt)}</td>
                <td>{formatDuration(between(run.startedAt, run.finishedAt))}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages">
        {query.cursor ? <a href={withQuery(path, query, { cursor: undefined })}>Newest</a> : null}
        {runs.data?.nextCursor ? <a href={withQuery(path, query, { cursor: runs.data.nextCursor })}>Older runs</a> : null}
      </nav>
    </>
  );
}

function JobsTab({ projectId, query, path }: { projectId: string; query: Record<string, string>; path: string }) {
  const jobs = useApi(
    (client) =>
      client.call(v1.jobs.listJobs, { query: { projectId, limit: PAGE_SIZE, ...(query.cursor ? { cursor: query.cursor } : {}) } }),
    [projectId, query.cursor],
    { refreshMs: 3000, refreshWhile: (page) => page.items.some((job) => job.status === 'running' || job.status === 'queued') },
  );
  if (jobs.error) return <ErrorBox error={jobs.error} />;
  if (jobs.data === undefined) return <Loading />;
  return (
    <>
      {jobs.data.items.length === 0 ? <p class="muted">No job yet.</p> : null}
      <table class="list">
        <thead>
          <tr>
            <th scope="col">Job</th>
            <th scope="col">Status</th>
            <th scope="col">Progress</th>
            <th scope="col">Branch</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {jobs.data.items.map((job) => (
            <tr key={job.id}>
              <td>
                <a href={`/jobs/${job.id}`}>{job.name}</a>
              </td>
              <td>
                <Badge value={job.status} />
              </td>
              <td>
                {job.progress.passed} passed, {job.progress.failed} failed of {job.progress.total}
              </td>
              <td>{job.branch ?? ''}</td>
              <td>{formatTime(job.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <nav class="pager" aria-label="Pages">
        {query.cursor ? <a href={withQuery(path, query, { cursor: undefined })}>Newest</a> : null}
        {jobs.data.nextCursor ? <a href={withQuery(path, query, { cursor: jobs.data.nextCursor })}>Older jobs</a> : null}
      </nav>
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
    <Page title={`${key} · ${name}`}>
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
      {tab === 'runs' ? <RunsTab projectId={id} query={query} path={path} /> : <JobsTab projectId={id} query={query} path={path} />}
    </Page>
  );
}
