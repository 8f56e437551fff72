import { useMemo, useState } from 'preact/hooks';
import { type AttestClient, v1 } from '../../../src/client/index.ts';
import { CiLink } from '../ci-link.tsx';
import { Badge, ErrorBox, LiveStatus, Loading, Page } from '../components.tsx';
import { useApi } from '../data.ts';
import { between, formatDuration, formatTime } from '../format.ts';
import { ArtifactGroup, type LightboxApi, LightboxContext, type LightboxItem, loadArtifacts, screenshotItems } from '../run/artifacts.tsx';
import { Cells } from '../run/cells.tsx';
import { ExportButtons } from '../run/export.tsx';
import { Lightbox } from '../run/lightbox.tsx';
import { StepList } from '../run/step-tree.tsx';
import { type ArtifactDetails, buildStepTree, type RunResults, type StepNode, type TestRun } from '../run/steps.ts';
import { Timeline } from '../run/timeline.tsx';
import '../run/run.css';

interface RunData {
  run: TestRun;
  results: RunResults;
  artifacts: ArtifactDetails[];
}

const unfinished = (run: TestRun) => run.status === 'running' || run.status === 'queued';

/** While a run is queued or running, the page looks again every 3 seconds. */
const LIVE = { refreshMs: 3000, refreshWhile: (data: RunData) => unfinished(data.run) };

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
  const { data, error } = useApi((client) => loadRun(client, testRunId), [testRunId], LIVE);
  if (error && !data) {
    return (
      <Page title="Run">
        <ErrorBox error={error} />
      </Page>
    );
  }
  if (!data) {
    return (
      <Page title="Run">
        <Loading />
      </Page>
    );
  }
  return <RunView data={data} refreshError={error} />;
}

function RunView({ data, refreshError }: { data: RunData; refreshError: Error | undefined }) {
  const { run, results, artifacts } = data;
  const test = useApi(
    (client) => (run.testId ? client.call(v1.tests.getTest, { params: { testId: run.testId } }) : Promise.resolve(undefined)),
    [run.testId],
  );
  const project = useApi((client) => client.call(v1.projects.getProject, { params: { projectId: run.projectId } }), [run.projectId]);

  // The tree is rebuilt when the results change (or, while running, with every refresh).
  const tree = useMemo(() => buildStepTree(run, results.steps), [run, results]);
  const { byStep, runLevel, screenshots } = useMemo(() => {
    const byStep = new Map<string, ArtifactDetails[]>();
    const runLevel: ArtifactDetails[] = [];
    for (const artifact of artifacts) {
      if (artifact.stepId && tree.byId.has(artifact.stepId)) {
        const list = byStep.get(artifact.stepId) ?? [];
        list.push(artifact);
        byStep.set(artifact.stepId, list);
      } else runLevel.push(artifact);
    }
    // The lightbox walks the screenshots in the order the page shows them: by step, then the run's own.
    const ordered = [...artifacts].sort(
      (a, b) =>
        (a.stepId ? (tree.byId.get(a.stepId)?.index ?? Number.MAX_SAFE_INTEGER) : Number.MAX_SAFE_INTEGER) -
        (b.stepId ? (tree.byId.get(b.stepId)?.index ?? Number.MAX_SAFE_INTEGER) : Number.MAX_SAFE_INTEGER),
    );
    const screenshots = screenshotItems(ordered, (artifact) => {
      const step = artifact.stepId ? tree.byId.get(artifact.stepId) : undefined;
      return step ? `${step.step.title}: ${artifact.name}` : artifact.name;
    });
    return { byStep, runLevel, screenshots };
  }, [artifacts, tree]);

  const [lightbox, setLightbox] = useState<{ items: LightboxItem[]; index: number } | undefined>();
  const lightboxApi = useMemo<LightboxApi>(
    () => ({
      open(imageId, items) {
        const list = items ?? screenshots;
        const index = list.findIndex((item) => item.imageId === imageId);
        if (index >= 0) setLightbox({ items: list, index });
      },
    }),
    [screenshots],
  );
  // A run that went on long after its last step: the steps can fill the width instead.
  const [fit, setFit] = useState(false);
  const canFit = tree.stepsEndMs < tree.spanMs * 0.6;
  const span = fit && canFit ? tree.stepsEndMs : tree.spanMs;
  const [selected, setSelected] = useState<{ id: string; seq: number } | undefined>();
  const select = (node: StepNode) => setSelected((old) => ({ id: node.step.id, seq: (old?.seq ?? 0) + 1 }));

  const live = unfinished(run);
  const duration =
    between(run.startedAt, run.finishedAt) ??
    (run.status === 'running' && run.startedAt ? between(run.startedAt, new Date().toISOString()) : null);
  const labels = (['environment', 'branch', 'build', 'commit'] as const).filter((label) => run[label]);
  return (
    <LightboxContext.Provider value={lightboxApi}>
      <Page title={run.name} actions={<ExportButtons testRunId={run.id} completed={run.status === 'completed'} />}>
        <nav class="crumbs" aria-label="Breadcrumb">
          <a href={`/projects/${project.data?.key ?? run.projectId}`}>{project.data ? project.data.name : 'Project'}</a>
          {run.jobId ? (
            <>
              {' › '}
              <a href={`/jobs/${run.jobId}`}>Job</a>
            </>
          ) : null}
          {' › '}
          <span aria-current="page">Run</span>
        </nav>
        <div class="run-status panel">
          <div class="run-badges">
            <Badge value={run.verdict ?? run.status} />
            {run.verdict ? <Badge value={run.status} /> : null}
            <LiveStatus live={live} error={refreshError} />
          </div>
          <dl class="facts">
            <div>
              <dt>Test</dt>
              <dd>{run.testId ? <a href={`/tests/${run.testId}`}>{test.data?.name ?? 'Open test'}</a> : '—'}</dd>
            </div>
            <div>
              <dt>Job</dt>
              <dd>{run.jobId ? <a href={`/jobs/${run.jobId}`}>Open job</a> : '—'}</dd>
            </div>
            <div>
              <dt>Device</dt>
              <dd>{run.deviceId ?? '—'}</dd>
            </div>
            {run.ciUrl ? (
              <div>
                <dt>CI build</dt>
                <dd>
                  <CiLink url={run.ciUrl} />
                </dd>
              </div>
            ) : null}
            {labels.map((label) => (
              <div key={label}>
                <dt>{label[0]?.toUpperCase() + label.slice(1)}</dt>
                <dd class={label === 'commit' ? 'mono' : undefined}>{run[label]}</dd>
              </div>
            ))}
            <div>
              <dt>Created</dt>
              <dd>{formatTime(run.createdAt)}</dd>
            </div>
            <div>
              <dt>Started</dt>
              <dd>{formatTime(run.startedAt)}</dd>
            </div>
            <div>
              <dt>Finished</dt>
              <dd>{formatTime(run.finishedAt)}</dd>
            </div>
            <div>
              <dt>Duration</dt>
              <dd>{formatDuration(duration)}</dd>
            </div>
          </dl>
        </div>

        <section class="panel" aria-labelledby="timeline-heading">
          <h2 id="timeline-heading">Timeline</h2>
          {tree.all.length > 0 ? (
            <>
              {canFit ? (
                <label class="inline-check timeline-fit">
                  <input type="checkbox" checked={fit} onChange={(e) => setFit((e.currentTarget as HTMLInputElement).checked)} />
                  Fit to the steps (they end at {formatDuration(Math.round(tree.stepsEndMs))} of {formatDuration(Math.round(tree.spanMs))})
                </label>
              ) : null}
              <Timeline tree={tree} span={span} running={run.status === 'running' && !(fit && canFit)} onSelect={select} />
            </>
          ) : (
            <p class="muted">No steps yet.</p>
          )}
        </section>

        {results.cells.length > 0 ? (
          <section class="panel" aria-labelledby="cells-heading">
            <h2 id="cells-heading">Notes</h2>
            <Cells cells={results.cells} />
          </section>
        ) : null}

        <section class="panel" aria-labelledby="steps-heading">
          <h2 id="steps-heading">Steps</h2>
          <StepList tree={tree} span={span} artifactsByStep={byStep} selected={selected} />
        </section>

        <section class="panel" aria-labelledby="evidence-heading">
          <h2 id="evidence-heading">Run evidence</h2>
          {runLevel.length > 0 ? (
            <ArtifactGroup artifacts={runLevel} />
          ) : (
            <p class="muted">
              {artifacts.length > 0 ? `All ${artifacts.length} artifacts belong to steps; they are shown with them.` : 'No artifacts.'}
            </p>
          )}
        </section>
      </Page>
      {lightbox ? (
        <Lightbox
          items={lightbox.items}
          index={lightbox.index}
          onMove={(index) => setLightbox((old) => (old ? { ...old, index } : old))}
          onClose={() => setLightbox(undefined)}
        />
      ) : null}
    </LightboxContext.Provider>
  );
}
