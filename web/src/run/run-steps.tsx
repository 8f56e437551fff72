import { useState } from 'preact/hooks';
import { formatDuration } from '../format.ts';
import { Cells } from './cells.tsx';
import { StepList } from './step-tree.tsx';
import type { ArtifactDetails, ErrorPlaces, StepNode, StepTree, TestRun } from './steps.ts';
import { Timeline } from './timeline.tsx';

/** The timeline's section: the bars, and the choice to fit them to the steps when the run went on long after. */
function TimelineSection({
  tree,
  span,
  fit,
  onFit,
  running,
  onSelect,
}: {
  tree: StepTree;
  span: number;
  /** Whether the bars fit the steps; undefined where the steps fill most of the run anyway. */
  fit: boolean | undefined;
  onFit: (fit: boolean) => void;
  running: boolean;
  onSelect: (node: StepNode) => void;
}) {
  return (
    <section class="panel" aria-labelledby="timeline-heading">
      <h2 id="timeline-heading">Timeline</h2>
      {tree.all.length > 0 ? (
        <>
          {fit !== undefined ? (
            <label class="inline-check timeline-fit">
              <input type="checkbox" checked={fit} onChange={(e) => onFit((e.currentTarget as HTMLInputElement).checked)} />
              Fit to the steps (they end at {formatDuration(Math.round(tree.stepsEndMs))} of {formatDuration(Math.round(tree.spanMs))})
            </label>
          ) : null}
          <Timeline tree={tree} span={span} running={running && !fit} onSelect={onSelect} />
        </>
      ) : (
        <p class="muted">No steps yet.</p>
      )}
    </section>
  );
}

/**
 * A run's steps: the timeline, the run's notes, then the step list. The timeline and the list
 * share their time span and the step last chosen on the timeline.
 */
export function RunSteps({
  run,
  tree,
  errors,
  artifactsByStep,
}: {
  run: TestRun;
  tree: StepTree;
  /** Where each error shows, once; its `runCells` are the run's notes. */
  errors: ErrorPlaces;
  artifactsByStep: Map<string, ArtifactDetails[]>;
}) {
  // A run that went on long after its last step: the steps can fill the width instead.
  const [fit, setFit] = useState(false);
  const canFit = tree.stepsEndMs < tree.spanMs * 0.6;
  const span = fit && canFit ? tree.stepsEndMs : tree.spanMs;
  const [selected, setSelected] = useState<{ id: string; seq: number } | undefined>();
  const select = (node: StepNode) => setSelected((old) => ({ id: node.step.id, seq: (old?.seq ?? 0) + 1 }));
  return (
    <>
      <TimelineSection
        tree={tree}
        span={span}
        fit={canFit ? fit : undefined}
        onFit={setFit}
        running={run.status === 'running'}
        onSelect={select}
      />
      {errors.runCells.length > 0 ? (
        <section class="panel" aria-labelledby="cells-heading">
          <h2 id="cells-heading">Notes</h2>
          <Cells cells={errors.runCells} />
        </section>
      ) : null}
      <section class="panel" aria-labelledby="steps-heading">
        <h2 id="steps-heading">Steps</h2>
        <StepList tree={tree} span={span} artifactsByStep={artifactsByStep} errors={errors} selected={selected} />
      </section>
    </>
  );
}
