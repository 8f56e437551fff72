import { useMemo, useState } from 'preact/hooks';
import { type AttestClient, v1 } from '../../../src/client/index.ts';
import { atLeast, useMe } from '../admin/me.ts';
import { Breadcrumb } from '../breadcrumb.tsx';
import { Page, PageWaiting } from '../components.tsx';
import { DeletedPage, type Freed, useApiUntilDeleted } from '../deletion.tsx';
import { IDLE_NOTE_CELL } from '../execute/execution.ts';
import { ArtifactList } from '../run/artifact-list.tsx';
import { ArtifactGroup, loadArtifacts } from '../run/artifacts.tsx';
import { groupEvidence } from '../run/evidence.ts';
import { ExportButtons } from '../run/export.tsx';
import { FailurePanel } from '../run/failure-panel.tsx';
import { LightboxHost } from '../run/lightbox.tsx';
import { RunActions } from '../run/run-actions.tsx';
import { RunSteps } from '../run/run-steps.tsx';
import { RunSummary } from '../run/run-summary.tsx';
import { type ArtifactDetails, buildStepTree, errorsShownOnce, type RunResults, type TestRun } from '../run/steps.ts';
import '../run/run.css';
import { IssueLinks } from '../triage/issue-links.tsx';

interface RunData {
  run: TestRun;
  results: RunResults;
  artifacts: ArtifactDetails[];
}

const unfinished = (run: TestRun) => run.status === 'running' || run.status === 'queued';

/** While a run is queued or running, the page looks again every 3 seconds. */
const LIVE_OR_NOT = { refreshMs: 3000, refreshWhile: (data: RunData | undefined) => data !== undefined && unfinished(data.run) };

async function loadRun(client: AttestClient, testRunId: string): Promise<RunData> {
  const run = await client.call(v1.runs.getRun, { params: { testRunId } });
  const [results, artifacts] = await Promise.all([
    client.call(v1.results.getResults, {
      params: { testRunId },
      query: run.status === 'completed' ? {} : { partial: true },
    }),
    loadArtifacts(client, run.projectId, testRunId),
  ]);
  return { run, results, artifacts };
}

export function RunPage({ testRunId }: { testRunId: string }) {
  const { data, error, reload, deleted, onDeleted } = useApiUntilDeleted((client) => loadRun(client, testRunId), [testRunId], LIVE_OR_NOT);
  if (deleted) return <DeletedPage freed={deleted} links={[{ href: `/projects/${deleted.projectId}`, label: 'Back to the project' }]} />;
  if (!data) return <PageWaiting title="Run" error={error} />;
  return <RunView data={data} refreshError={error} reload={reload} onDeleted={onDeleted} />;
}

/** The evidence that belongs to no step: the run's own. */
function RunEvidence({ runLevel, total }: { runLevel: ArtifactDetails[]; total: number }) {
  return (
    <section class="panel" aria-labelledby="evidence-heading">
      <h2 id="evidence-heading">Run evidence</h2>
      {runLevel.length > 0 ? (
        <ArtifactGroup artifacts={runLevel} />
      ) : (
        <p class="muted">{total > 0 ? `All ${total} artifacts belong to steps; they are shown with them.` : 'No artifacts.'}</p>
      )}
    </section>
  );
}

function RunView({
  data,
  refreshError,
  reload,
  onDeleted,
}: {
  data: RunData;
  refreshError: Error | undefined;
  reload: () => void;
  onDeleted: (freed: Freed) => void;
}) {
  const { run, results } = data;
  const me = useMe();
  // Artifacts deleted from this page are hidden at once, everywhere on it (back if the API refuses).
  const [removed, setRemoved] = useState<ReadonlySet<string>>(new Set());
  const artifacts = useMemo(() => data.artifacts.filter((a) => !removed.has(a.id)), [data.artifacts, removed]);
  const remove = (id: string) => setRemoved((ids) => new Set([...ids, id]));
  const restore = (id: string) => setRemoved((ids) => new Set([...ids].filter((other) => other !== id)));
  // The tree is rebuilt when the results change (or, while running, with every refresh).
  const tree = useMemo(() => buildStepTree(run, results.steps), [run, results]);
  // A manual run the server ended idle (TCM-9): its note is said at the top, not again among the notes.
  const idleNote = run.status === 'aborted' ? results.cells.find((cell) => cell.name === IDLE_NOTE_CELL) : undefined;
  const errors = useMemo(
    () =>
      errorsShownOnce(
        tree,
        results.cells.filter((cell) => cell !== idleNote),
      ),
    [tree, results.cells, idleNote],
  );
  const { byStep, runLevel, screenshots } = useMemo(() => groupEvidence(artifacts, tree), [artifacts, tree]);
  return (
    <LightboxHost screenshots={screenshots}>
      <Page
        title={run.name}
        actions={
          <>
            <RunActions run={run} artifacts={artifacts} onChanged={reload} onDeleted={onDeleted} />
            <ExportButtons testRunId={run.id} completed={run.status === 'completed'} />
          </>
        }
      >
        <Breadcrumb projectId={run.projectId} jobId={run.jobId} here="Run" />
        <RunSummary run={run} live={unfinished(run)} refreshError={refreshError} note={idleNote} />
        <FailurePanel run={run} steps={results.steps} />
        {run.verdict === 'failed' || run.verdict === 'broken' ? <IssueLinks projectId={run.projectId} testRunId={run.id} /> : null}
        <RunSteps run={run} tree={tree} errors={errors} artifactsByStep={byStep} />
        <RunEvidence runLevel={runLevel} total={artifacts.length} />
        {atLeast(me.data?.role, 'manager') && (artifacts.length > 0 || removed.size > 0) ? (
          <ArtifactList artifacts={artifacts} onRemove={remove} onRestore={restore} />
        ) : null}
      </Page>
    </LightboxHost>
  );
}
