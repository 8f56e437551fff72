import { useMemo } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import type { Static } from 'typebox';
import type { TestHistory } from '../../../src/api/v1/tests.ts';
import { type AttestClient, v1 } from '../../../src/client/index.ts';
import { atLeast, useMe } from '../admin/me.ts';
import { Badge, Page, PageWaiting, Preformatted } from '../components.tsx';
import { useApi, usePages } from '../data.ts';
import { DeletedPage, useApiUntilDeleted } from '../deletion.tsx';
import { ExecuteTestButton } from '../execute/start-button.tsx';
import { between, formatDuration, formatTime } from '../format.ts';
import { type Column, ListStates, ListTable, LoadMore } from '../list-table.tsx';
import type { TestRun } from '../run/steps.ts';
import '../admin/admin.css';
import { DeleteTest } from '../tcm/delete-test.tsx';
import { StepList, TestAuthoring } from '../tcm/test-panel.tsx';
import './test.css';

type History = Static<typeof TestHistory>;
type HistoryRun = History['runs'][number];

const LIMITS = [20, 50, 100, 200];
const DEFAULT_LIMIT = 50;

/** What a square shows: the verdict of a completed run, else its state. */
const outcomeOf = (run: HistoryRun) => (run.status === 'completed' ? (run.verdict ?? 'completed') : run.status);

const unfinished = (history: History) => history.runs.some((run) => run.status === 'running' || run.status === 'queued');

function describeRun(run: HistoryRun): string {
  const labels = [run.branch && `branch ${run.branch}`, run.build && `build ${run.build}`, run.deviceId && `on ${run.deviceId}`];
  const parts = [`${run.name}: ${outcomeOf(run)}`, formatTime(run.startedAt ?? run.createdAt), ...labels.filter(Boolean)];
  if (run.flaky) parts.push('verdict flipped from the run before');
  return parts.join(', ');
}

/** The history as squares, oldest on the left and newest on the right, each a link to its run. */
function HistoryStrip({ history }: { history: History }) {
  const oldestFirst = [...history.runs].reverse();
  return (
    <>
      <ol class="history-strip" aria-label="Runs, oldest first (newest on the right)">
        {oldestFirst.map((run) => (
          <li key={run.id}>
            <a
              href={`/runs/${run.id}`}
              class={`hsq-${outcomeOf(run)}${run.flaky ? ' flaky' : ''}`}
              aria-label={describeRun(run)}
              title={describeRun(run)}
              data-testid="history-run"
            >
              <span class="visually-hidden">{outcomeOf(run)}</span>
            </a>
          </li>
        ))}
      </ol>
      <ul class="history-legend" aria-hidden="true">
        <li>Oldest left, newest right</li>
        {(['passed', 'failed', 'broken', 'skipped', 'running'] as const).map((word) => (
          <li key={word}>
            <span class={`swatch hsq-${word}`} />
            {word}
          </li>
        ))}
        <li>
          <span class="flake-mark">⚡</span> verdict flipped
        </li>
      </ul>
    </>
  );
}

/**
 * The test's numbers, retries folded (TRIAGE-14): one per job, as the tests list, the dashboard and
 * the Jobs tab count; a flaky job passed in the end, so it is among the passed, said beside them.
 */
function HistorySummary({ summary }: { summary: History['outcomeSummary'] }) {
  const item = (label: string, value: number | string) => (
    <div>
      <dt>{label}</dt>
      <dd>{value}</dd>
    </div>
  );
  return (
    <dl class="history-summary" aria-label="Summary of these runs, one per job" data-testid="history-summary">
      {item('Jobs', summary.outcomes)}
      {item('Passed', summary.flaky > 0 ? `${summary.passed + summary.flaky} (flaky ${summary.flaky})` : summary.passed)}
      {item('Failed', summary.failed)}
      {summary.broken > 0 ? item('Broken', summary.broken) : null}
      {summary.skipped > 0 ? item('Skipped', summary.skipped) : null}
      {item('Pass rate', summary.passRate === null ? '—' : `${Math.round(summary.passRate * 100)} %`)}
    </dl>
  );
}

/** Each job's outcome with its attempts inside it, newest first: attempts stay visible (TRIAGE-14). */
function OutcomeList({ history }: { history: History }) {
  const attempt = new Map(history.runs.map(({ id, attempt, verdict, status }) => [id, { attempt, verdict, status }]));
  return (
    <ol class="outcome-list" aria-label="Outcomes, one per job, newest first" data-testid="outcomes">
      {history.outcomes.map((outcome) => (
        <li key={outcome.runId}>
          <Badge value={outcome.verdict ?? 'unfinished'} />{' '}
          {outcome.jobId ? <a href={`/jobs/${outcome.jobId}`}>Job</a> : 'Run without a job'}
          {outcome.branch ? ` on ${outcome.branch}` : ''}, {outcome.attempts} {outcome.attempts === 1 ? 'attempt' : 'attempts'}:{' '}
          {outcome.runIds.map((runId, i) => {
            const run = attempt.get(runId);
            return (
              <span key={runId}>
                {i > 0 ? ', ' : ''}
                <a href={`/runs/${runId}`}>
                  attempt {(run?.attempt ?? i) + 1} {run ? (run.status === 'completed' ? (run.verdict ?? run.status) : run.status) : ''}
                </a>
              </span>
            );
          })}
        </li>
      ))}
    </ol>
  );
}

/** A run's verdict, with a mark when it flipped from the run before. */
function Outcome({ run, flaky }: { run: TestRun; flaky: boolean }) {
  return (
    <>
      <Badge value={run.status === 'completed' ? (run.verdict ?? 'completed') : run.status} />
      {flaky ? (
        <span class="flake-mark" title="The verdict flipped from the run before">
          {' '}
          ⚡ <span class="visually-hidden">flipped</span>
        </span>
      ) : null}
    </>
  );
}

/** The table's columns; the flaky marks are the history's, for the runs it holds. */
const runColumns = (flaky: ReadonlySet<string>): Column<TestRun>[] => [
  {
    header: 'Run',
    cell: (run) => (
      <>
        <a href={`/runs/${run.id}`}>{run.name}</a>
        {run.jobId ? (
          <>
            {' '}
            <a class="muted" href={`/jobs/${run.jobId}`}>
              (job)
            </a>
          </>
        ) : null}
      </>
    ),
  },
  { header: 'Attempt', class: 'num', cell: (run) => run.attempt + 1 },
  { header: 'Verdict', cell: (run) => <Outcome run={run} flaky={flaky.has(run.id)} /> },
  { header: 'Branch', cell: (run) => run.branch ?? '' },
  { header: 'Build', cell: (run) => run.build ?? '' },
  { header: 'Environment', cell: (run) => run.environment ?? '' },
  { header: 'Device', cell: (run) => run.deviceId ?? '' },
  { header: 'Started', cell: (run) => formatTime(run.startedAt ?? run.createdAt) },
  { header: 'Duration', cell: (run) => formatDuration(between(run.startedAt, run.finishedAt)) },
];

/**
 * Every run of the test, newest first, a page at a time through the API's cursor as the list's
 * end comes into view (a test with 10,000 runs reads 200 at first: docs/web.md, "Pages at scale");
 * long lists draw only the rows in view.
 */
function AllRuns({ projectId, testId, flaky }: { projectId: string; testId: string; flaky: ReadonlySet<string> }) {
  const runs = usePages(
    (client: AttestClient, cursor) =>
      client.call(v1.runs.listRuns, { query: { projectId, testId, limit: 200, ...(cursor ? { cursor } : {}) } }),
    [projectId, testId],
  );
  const columns = runColumns(flaky);
  return (
    <>
      <h3 id="all-runs-heading">Every run, newest first</h3>
      <ListTable
        label="Runs of this test, newest first"
        rows={runs.items}
        error={runs.error}
        empty="This test has not run yet."
        columns={columns}
        rowKey={(run) => run.id}
      />
      <LoadMore
        more={runs.more}
        loading={runs.loading && runs.items !== undefined}
        label={`Load older runs (${runs.items?.length ?? 0} shown)`}
      />
    </>
  );
}

function HistorySection({ projectId, testId }: { projectId: string; testId: string }) {
  const { query, path } = useLocation();
  const asked = Number(query.limit);
  const limit = LIMITS.includes(asked) ? asked : DEFAULT_LIMIT;
  const history = useApi(
    (client: AttestClient) => client.call(v1.tests.getTestHistory, { params: { testId }, query: { limit } }),
    [testId, limit],
    // Live while a run of the test is still going.
    { refreshMs: 3000, refreshWhile: unfinished },
  );
  const flaky = useMemo(() => new Set(history.data?.runs.filter((run) => run.flaky).map((run) => run.id)), [history.data]);
  return (
    <section class="panel" aria-labelledby="history-heading">
      <h2 id="history-heading">History</h2>
      <nav class="pager" aria-label="How many runs">
        {LIMITS.map((n) =>
          n === limit ? (
            <span key={n} aria-current="true">
              Last {n}
            </span>
          ) : (
            <a key={n} href={n === DEFAULT_LIMIT ? path : `${path}?limit=${n}`}>
              Last {n}
            </a>
          ),
        )}
      </nav>
      <ListStates data={history.data} error={history.error} isEmpty={(data) => data.runs.length === 0} empty="This test has not run yet.">
        {(data) => (
          <>
            <HistorySummary summary={data.outcomeSummary} />
            <HistoryStrip history={data} />
            <OutcomeList history={data} />
          </>
        )}
      </ListStates>
      <AllRuns projectId={projectId} testId={testId} flaky={flaky} />
    </section>
  );
}

/** A test: its definition (steps, tags, Gherkin source) and its latest runs with flaky flips marked. */
export function TestPage({ testId }: { testId: string }) {
  const test = useApiUntilDeleted((client) => client.call(v1.tests.getTest, { params: { testId } }), [testId]);
  const { deleted } = test;
  const me = useMe();
  if (deleted) {
    const tests = `/projects/${deleted.projectId}/tests`;
    return <DeletedPage freed={deleted} links={[{ href: tests, label: 'The project’s tests' }]} />;
  }
  if (test.data === undefined) return <PageWaiting title="Test" error={test.error} />;
  const t = test.data;
  return (
    <Page
      title={t.name}
      actions={
        <>
          <ExecuteTestButton test={t} /> <a href={`/projects/${t.projectId}`}>Project</a>
          {atLeast(me.data?.role, 'manager') ? <DeleteTest test={t} onDeleted={test.onDeleted} /> : null}
        </>
      }
    >
      {t.tags.length > 0 ? (
        <ul class="chips test-tags" aria-label="Tags">
          {t.tags.map((tag) => (
            <li key={tag} class="chip">
              @{tag}
            </li>
          ))}
        </ul>
      ) : null}
      {t.description ? <p>{t.description}</p> : null}
      <TestAuthoring test={t} />
      <HistorySection projectId={t.projectId} testId={testId} />
      <section class="panel" aria-labelledby="steps-heading">
        <h2 id="steps-heading">Steps</h2>
        {t.steps.length === 0 ? (
          <p class="muted">No steps: this test was named by a report or reporter, which sends its steps with each run.</p>
        ) : (
          <StepList steps={t.steps} />
        )}
      </section>
      {t.source ? (
        <section class="panel" aria-labelledby="source-heading">
          <h2 id="source-heading">Gherkin source</h2>
          <Preformatted label="Gherkin source">{t.source}</Preformatted>
        </section>
      ) : null}
      <p class="muted">
        Created {formatTime(t.createdAt)}, from {t.sourceFormat === 'gherkin' ? 'a Gherkin feature' : 'JSON'}.
      </p>
    </Page>
  );
}
