import { useState } from 'preact/hooks';
import type { Static } from 'typebox';
import { v1 } from '../../../src/client/index.ts';
import { useApi } from '../data.ts';
import { formatDuration } from '../format.ts';
import { type Column, ListStates, ListTable } from '../list-table.tsx';
import type { Dashboard } from './api.ts';

type FlakyCost = Static<typeof v1.flakyCost.FlakyCost>;

const TEST_COLUMNS: Column<FlakyCost['tests'][number]>[] = [
  { header: 'Test', cell: (t) => t.name, href: (t) => `/tests/${t.testId}` },
  { header: 'Retried attempts', class: 'num', cell: (t) => t.attempts },
  { header: 'CI time', class: 'num', cell: (t) => formatDuration(t.durationMs) },
];

const JOB_COLUMNS: Column<FlakyCost['jobs'][number]>[] = [
  { header: 'Job', cell: (j) => j.name, href: (j) => `/jobs/${j.jobId}` },
  { header: 'Flaky tests', class: 'num', cell: (j) => j.flakyTests },
  { header: 'Length', class: 'num', cell: (j) => formatDuration(j.durationMs) },
];

/** The rows behind the figures, asked for when the reader opens them (GET …/flaky-cost). */
function FlakyCostRows({ projectId, days }: { projectId: string; days: number }) {
  const rows = useApi((client) => client.call(v1.flakyCost.getFlakyCost, { params: { projectId }, query: { days } }), [projectId, days]);
  return (
    <ListStates data={rows.data} error={rows.error} isEmpty={(cost) => cost.tests.length === 0} empty="No test was retried to a pass.">
      {(cost) => (
        <>
          {cost.truncated ? <p class="muted">More than 20,000 retried tests: the figures count the first 20,000.</p> : null}
          <ListTable label="Tests by the CI time their retries cost" rows={cost.tests} columns={TEST_COLUMNS} rowKey={(t) => t.testId} />
          {cost.jobs.length > 0 ? (
            <ListTable label="Jobs that failed only on flaky tests" rows={cost.jobs} columns={JOB_COLUMNS} rowKey={(j) => j.jobId} />
          ) : null}
        </>
      )}
    </ListStates>
  );
}

/** What flakiness cost in CI time over the window (TRIAGE-15), and on request the tests and jobs behind it. */
export function FlakyCostPanel({ cost, projectId, days }: { cost: Dashboard['flakyCost']; projectId: string; days: number }) {
  const [open, setOpen] = useState(false);
  return (
    <section class="panel" aria-labelledby="flaky-cost-heading" data-testid="flaky-cost">
      <h2 id="flaky-cost-heading">What flakiness cost</h2>
      <p>
        {cost.retriedFailures.attempts} failed attempts retried to a pass: {formatDuration(cost.retriedFailures.durationMs)} of CI time.{' '}
        {cost.flakyOnlyJobs.jobs} jobs failed only on flaky tests: {formatDuration(cost.flakyOnlyJobs.durationMs)}.
      </p>
      <details onToggle={(event) => setOpen((event.currentTarget as HTMLDetailsElement).open)}>
        <summary>The tests and jobs behind it</summary>
        {open ? <FlakyCostRows projectId={projectId} days={days} /> : null}
      </details>
    </section>
  );
}
