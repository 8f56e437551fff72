import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import { Breadcrumb } from '../breadcrumb.tsx';
import { Badge, ErrorBox, Loading, Page, PageWaiting } from '../components.tsx';
import { useApi } from '../data.ts';
import { formatDuration, formatScore, formatTime } from '../format.ts';
import { type Column, ListTable } from '../list-table.tsx';
import {
  type Dashboard,
  type DashboardDay,
  type DashboardJob,
  getDashboard,
  type HealthEntry,
  type QuarantinedTest,
} from '../triage/api.ts';
import { COLOURS, LineChart, percent, Sparkline } from '../triage/charts.tsx';
import { FlakyCostPanel } from '../triage/flaky-cost-panel.tsx';
import { groupColumns, IncidentMarker } from '../triage/parts.tsx';
import { withQuery } from '../url.ts';

/** The windows the page offers (the API takes 1 to 90 days). */
const DAY_CHOICES = [7, 14, 30, 90];
const DEFAULT_DAYS = 14;

/** Days from the URL, when they are a whole number the API takes. */
function daysOf(value: string | undefined): number {
  const days = Number(value);
  return Number.isInteger(days) && days >= 1 && days <= 90 ? days : DEFAULT_DAYS;
}

/** A duration on a chart's axis: seconds, short. */
const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

/** The branch and the window, in the URL (so a dashboard can be linked). */
function DashboardForm({ branch, days, branches }: { branch: string; days: number; branches: string[] }) {
  const { path, query, route } = useLocation();
  const submit = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const chosenDays = String(form.get('days') ?? '');
    route(
      withQuery(path, query, {
        branch: String(form.get('branch') ?? '').trim() || undefined,
        days: chosenDays === String(DEFAULT_DAYS) ? undefined : chosenDays,
      }),
    );
  };
  return (
    <form class="filters dashboard-form" onSubmit={submit} aria-label="Dashboard of">
      <label>
        Branch
        {/* Keyed by the branch shown: typing is not undone by a re-render, and a new address resets the field. */}
        <input key={branch} name="branch" type="text" list="dashboard-branches" defaultValue={branch} placeholder="every branch" />
      </label>
      <datalist id="dashboard-branches">
        {branches.map((name) => (
          <option key={name} value={name} />
        ))}
      </datalist>
      <label>
        Days
        <select name="days" value={String(days)}>
          {DAY_CHOICES.map((choice) => (
            <option key={choice} value={String(choice)}>
              {choice}
            </option>
          ))}
        </select>
      </label>
      <button type="submit">Show</button>
    </form>
  );
}

/**
 * The two charts of a series of points (days or jobs): the pass rate (0 to 100 %) and a duration,
 * each named for a screen reader with where its numbers are (the table below them).
 */
function RateAndDuration({
  labels,
  rates,
  durations,
  rateLabel,
  durationLabel,
  durationSeries,
  testIdPrefix,
}: {
  labels: string[];
  /** Pass rates from 0 to 1; null where nothing counted. */
  rates: (number | null)[];
  durations: (number | null)[];
  rateLabel: string;
  durationLabel: string;
  durationSeries: string;
  testIdPrefix: string;
}) {
  const below = '; the numbers are in the table below';
  return (
    <div class="charts">
      <LineChart
        label={`${rateLabel}${below}`}
        labels={labels}
        series={[{ label: 'Pass rate', colour: COLOURS.passed, values: rates.map((r) => (r === null ? null : r * 100)) }]}
        format={(v) => `${Math.round(v)}%`}
        range={[0, 100]}
        testId={`${testIdPrefix}-pass-rate`}
      />
      <LineChart
        label={`${durationLabel}${below}`}
        labels={labels}
        series={[{ label: durationSeries, colour: COLOURS.accent, values: durations }]}
        format={seconds}
        testId={`${testIdPrefix}-duration`}
      />
    </div>
  );
}

const DAY_COLUMNS: Column<DashboardDay>[] = [
  { header: 'Day', cell: (day) => day.day },
  { header: 'Tests', class: 'num', cell: (day) => day.tests },
  { header: 'Runs', class: 'num', cell: (day) => day.runs },
  { header: 'Passed', class: 'num', cell: (day) => day.passed },
  { header: 'Failed', class: 'num', cell: (day) => day.failed },
  { header: 'Pass rate', class: 'num', cell: (day) => percent(day.passRate) },
  { header: 'Skipped', class: 'num', cell: (day) => day.skipped },
  { header: 'Mean duration', class: 'num', cell: (day) => formatDuration(day.meanDurationMs) },
];

/** Pass rate and mean run duration per day: two charts and the table of their numbers. */
function PerDay({ daily }: { daily: DashboardDay[] }) {
  const labels = daily.map((d) => d.day.slice(5));
  return (
    <section class="panel" aria-labelledby="per-day">
      <h2 id="per-day">Per day</h2>
      {daily.every((d) => d.runs === 0) ? <p class="muted">No completed run in this window.</p> : null}
      <RateAndDuration
        labels={labels}
        rates={daily.map((d) => d.passRate)}
        durations={daily.map((d) => d.meanDurationMs)}
        rateLabel={`Pass rate per day, ${daily.length} days`}
        durationLabel={`Mean run duration per day, ${daily.length} days`}
        durationSeries="Mean duration"
        testIdPrefix="chart-daily"
      />
      <div class="numbers">
        <ListTable class="daily-table" label="Per day" rows={daily} columns={DAY_COLUMNS} rowKey={(d) => d.day} />
      </div>
    </section>
  );
}

/** A job's tests, retries folded into their test (TRIAGE-5). */
const testsOf = (entry: DashboardJob) => entry.job.progress.tests;

function jobColumns(projectKey: string): Column<DashboardJob>[] {
  return [
    { header: 'Job', cell: ({ job }) => job.name, href: ({ job }) => `/jobs/${job.id}` },
    { header: 'Status', cell: ({ job }) => <Badge value={job.status} /> },
    { header: 'Branch', cell: ({ job }) => job.branch ?? '' },
    { header: 'Created', cell: ({ job }) => formatTime(job.createdAt) },
    { header: 'Tests', class: 'num', cell: (entry) => testsOf(entry).total },
    // Flaky tests passed in the end: among the passed, as every page counts them (TRIAGE-14).
    { header: 'Passed', class: 'num', cell: (entry) => testsOf(entry).passed + testsOf(entry).flaky },
    { header: 'Failed', class: 'num', cell: (entry) => testsOf(entry).failed },
    { header: 'Flaky', class: 'num', cell: (entry) => testsOf(entry).flaky },
    { header: 'Pass rate', class: 'num', cell: (entry) => percent(entry.passRate) },
    { header: 'Duration', class: 'num', cell: (entry) => formatDuration(entry.durationMs) },
    { header: 'Incident', cell: ({ job }) => <IncidentMarker incident={job.incident} projectKey={projectKey} /> },
  ];
}

/**
 * The latest jobs: pass rate and duration per job in charts (oldest first, the order they ran), and
 * the table of their numbers, newest first, with the mark of an incident.
 */
function PerJob({ jobs, projectKey }: { jobs: DashboardJob[]; projectKey: string }) {
  const ordered = [...jobs].sort((a, b) => a.job.createdAt.localeCompare(b.job.createdAt));
  const labels = ordered.map((entry) => entry.job.name);
  return (
    <section class="panel" aria-labelledby="per-job">
      <h2 id="per-job">Latest jobs</h2>
      {jobs.length === 0 ? (
        <p class="muted">No job yet.</p>
      ) : (
        <>
          <RateAndDuration
            labels={labels}
            rates={ordered.map((j) => j.passRate)}
            durations={ordered.map((j) => j.durationMs)}
            rateLabel={`Pass rate of the latest ${jobs.length} jobs, each test counted once`}
            durationLabel={`Duration of the latest ${jobs.length} jobs`}
            durationSeries="Duration"
            testIdPrefix="chart-job"
          />
          <div class="numbers">
            <ListTable class="jobs-table" label="Latest jobs" rows={jobs} columns={jobColumns(projectKey)} rowKey={({ job }) => job.id} />
          </div>
        </>
      )}
    </section>
  );
}

/** The sparklines' numbers, as a table: a row a group, a column a day. */
function TrendNumbers({ groups }: { groups: Dashboard['topGroups'] }) {
  const days = groups[0]?.trend.map((t) => t.day) ?? [];
  return (
    <details>
      <summary>The trends' numbers</summary>
      <div class="numbers">
        <table class="list trend-table">
          <caption class="muted">Occurrences per day of the top error groups</caption>
          <thead>
            <tr>
              <th scope="col">Error</th>
              {days.map((day) => (
                <th key={day} scope="col" class="num">
                  {day.slice(5)}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {groups.map((group) => (
              <tr key={group.id}>
                <th scope="row" class="group-title">
                  {group.title.slice(0, 80)}
                </th>
                {group.trend.map((t) => (
                  <td key={t.day} class="num">
                    {t.occurrences}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  );
}

/** The five groups that failed most in the window, each with its daily trend as a sparkline, and the sparklines' numbers. */
function TopGroups({ groups, projectKey }: { groups: Dashboard['topGroups']; projectKey: string }) {
  return (
    <section class="panel" aria-labelledby="top-groups">
      <h2 id="top-groups">Top error groups</h2>
      <ListTable
        class="top-groups-table"
        label="Top error groups"
        rows={groups}
        empty="No failure in this window."
        rowKey={(group) => group.id}
        columns={[
          ...groupColumns<Dashboard['topGroups'][number]>(projectKey),
          { header: 'Failed runs', class: 'num', cell: (group) => group.occurrences },
          { header: 'In all', class: 'num', cell: (group) => group.totalOccurrences },
          {
            header: 'Trend',
            cell: (group) => (
              <Sparkline
                values={group.trend.map((t) => t.occurrences)}
                label={`Occurrences per day: ${group.trend.map((t) => `${t.day} ${t.occurrences}`).join(', ')}`}
                testId="sparkline"
              />
            ),
          },
        ]}
      />
      {groups.length > 0 ? <TrendNumbers groups={groups} /> : null}
    </section>
  );
}

const HEALTH_COLUMNS: Column<HealthEntry>[] = [
  { header: 'Test', cell: (entry) => entry.name, href: (entry) => `/tests/${entry.testId}` },
  { header: 'Flaky score', class: 'num', cell: (entry) => formatScore(entry.flakyScore) },
  { header: 'Jobs', class: 'num', cell: (entry) => entry.runsConsidered },
];

const BROKEN_COLUMNS: Column<HealthEntry>[] = [
  { header: 'Test', cell: (entry) => entry.name, href: (entry) => `/tests/${entry.testId}` },
  { header: 'Failing in a row', class: 'num', cell: (entry) => entry.failingStreak },
  { header: 'Jobs', class: 'num', cell: (entry) => entry.runsConsidered },
];

const QUARANTINE_COLUMNS: Column<QuarantinedTest>[] = [
  { header: 'Test', cell: (entry) => entry.name, href: (entry) => `/tests/${entry.testId}` },
  { header: 'Owner', cell: (entry) => entry.owner },
  { header: 'Until', cell: (entry) => (entry.expired ? `expired ${formatTime(entry.expiresAt)}` : formatTime(entry.expiresAt)) },
];

/** One list of tests of the health grid, under its heading. */
function HealthPanel<T extends { testId: string }>({
  id,
  title,
  tableClass,
  rows,
  columns,
}: {
  id: string;
  title: string;
  tableClass: string;
  rows: T[];
  columns: Column<T>[];
}) {
  return (
    <section class="panel" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      <ListTable class={tableClass} label={title} rows={rows} columns={columns} rowKey={(e) => e.testId} empty="None." />
    </section>
  );
}

/** Flaky, broken and quarantined tests, side by side. */
function TestHealth({ data }: { data: Dashboard }) {
  return (
    <div class="health-grid">
      <HealthPanel id="flaky-tests" title="Flaky tests" tableClass="flaky-table" rows={data.flaky} columns={HEALTH_COLUMNS} />
      <HealthPanel id="broken-tests" title="Broken tests" tableClass="broken-table" rows={data.broken} columns={BROKEN_COLUMNS} />
      <HealthPanel
        id="quarantined-tests"
        title="Quarantined tests"
        tableClass="quarantined-table"
        rows={data.quarantined}
        columns={QUARANTINE_COLUMNS}
      />
    </div>
  );
}

/** A project's health at a glance (TRIAGE-8): per day and per job on a branch, the top error groups, flaky, broken and quarantined tests. */
export function DashboardPage({ projectKey }: { projectKey: string }) {
  const { query } = useLocation();
  const branch = query.branch ?? '';
  const days = daysOf(query.days);
  const project = useApi((client) => client.call(v1.projects.getProject, { params: { projectId: projectKey } }), [projectKey]);
  const projectId = project.data?.id;
  const dashboard = useApi(
    (client) => (projectId ? getDashboard(client, projectId, { branch: branch || undefined, days }) : Promise.resolve(undefined)),
    [projectId, branch, days],
  );
  if (!project.data) return <PageWaiting title="Dashboard" error={project.error} />;
  const data = dashboard.data;
  const branches = [...new Set((data?.jobs ?? []).map(({ job }) => job.branch).filter((b): b is string => Boolean(b)))];
  return (
    <Page title={`${project.data.name} · Dashboard`}>
      <Breadcrumb projectId={project.data.id} here="Dashboard" />
      <p>
        <a href={`/projects/${project.data.key}/failures`}>Failures</a>
      </p>
      <DashboardForm branch={branch} days={days} branches={branches} />
      {dashboard.error ? <ErrorBox error={dashboard.error} /> : null}
      {data === undefined ? (
        dashboard.error ? null : (
          <Loading />
        )
      ) : (
        <div data-testid="dashboard">
          <p class="muted">
            {data.branch ? `Branch ${data.branch}` : 'Every branch'}, the last {data.days} days.
          </p>
          <PerDay daily={data.daily} />
          <PerJob jobs={data.jobs} projectKey={project.data.key} />
          <TopGroups groups={data.topGroups} projectKey={project.data.key} />
          <TestHealth data={data} />
          <FlakyCostPanel cost={data.flakyCost} projectId={project.data.id} days={data.days} />
        </div>
      )}
    </Page>
  );
}
