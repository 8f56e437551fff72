import { v1 } from '../../../src/client/index.ts';
import { CiLink } from '../ci-link.tsx';
import { Badge, LiveStatus } from '../components.tsx';
import { useApi } from '../data.ts';
import { Fact, LabelFacts, TimeFacts } from '../facts.tsx';
import { between } from '../format.ts';
import type { TestRun, TextCell } from './steps.ts';

/** How long a run took, or, while it runs, has taken so far. */
function durationOf(run: TestRun): number | null {
  const sofar = run.status === 'running' && run.startedAt ? between(run.startedAt, new Date().toISOString()) : null;
  return between(run.startedAt, run.finishedAt) ?? sofar;
}

/** A run's verdict and state, whether the page is live, and what the run is: test, job, device, CI build, labels and times. */
export function RunSummary({
  run,
  live,
  refreshError,
  note,
}: {
  run: TestRun;
  live: boolean;
  refreshError: Error | undefined;
  /** Why the server ended the run (a manual run left idle, TCM-9). */
  note?: TextCell;
}) {
  const test = useApi(
    (client) => (run.testId ? client.call(v1.tests.getTest, { params: { testId: run.testId } }) : Promise.resolve(undefined)),
    [run.testId],
  );
  return (
    <div class="run-status panel">
      <div class="run-badges">
        <Badge value={run.verdict ?? run.status} />
        {run.verdict ? <Badge value={run.status} /> : null}
        <LiveStatus live={live} error={refreshError} />
      </div>
      {note ? (
        <p class="idle-note" role="status" data-testid="idle-note">
          {note.text}
        </p>
      ) : null}
      <dl class="facts">
        <Fact term="Test">{run.testId ? <a href={`/tests/${run.testId}`}>{test.data?.name ?? 'Open test'}</a> : '—'}</Fact>
        {run.testId && run.testVersion ? (
          // The version the run executed (TCM-4): its steps as they were, even after later edits.
          <Fact term="Test version">
            <a href={`/tests/${run.testId}?version=${run.testVersion}`} data-testid="run-test-version">
              Version {run.testVersion}
              {test.data && test.data.version !== run.testVersion ? ` (the test is now at version ${test.data.version})` : ''}
            </a>
          </Fact>
        ) : null}
        <Fact term="Job">{run.jobId ? <a href={`/jobs/${run.jobId}`}>Open job</a> : '—'}</Fact>
        <Fact term="Device">{run.deviceId ?? '—'}</Fact>
        {run.ciUrl ? (
          <Fact term="CI build">
            <CiLink url={run.ciUrl} />
          </Fact>
        ) : null}
        <LabelFacts labels={run} />
        <TimeFacts createdAt={run.createdAt} startedAt={run.startedAt} endedAt={run.finishedAt} durationMs={durationOf(run)} />
      </dl>
    </div>
  );
}
