import { useEffect, useMemo, useState } from 'preact/hooks';
import { Badge, Preformatted } from '../components.tsx';
import { formatDuration } from '../format.ts';
import { DRAW_WHOLE_UP_TO, useWindowList } from '../virtual.ts';
import { ArtifactGroup } from './artifacts.tsx';
import { Cells } from './cells.tsx';
import { type ArtifactDetails, cellsNotRepeating, type ErrorPlaces, type StepNode, type StepTree, visibleSteps } from './steps.ts';
import { stepTooltip } from './timeline.tsx';

/** A row's height before it is measured: its line, and its error, notes and screenshots. */
function estimateRow(node: StepNode, artifacts: ArtifactDetails[] | undefined): number {
  const { step } = node;
  return 34 + (step.error ? 90 : 0) + step.cells.length * 40 + (artifacts && artifacts.length > 0 ? 130 : 0);
}
/** Up to this many steps, the whole tree starts open; beyond it only the way to failures. */
const OPEN_ALL_UP_TO = 300;

type Mode = 'default' | 'all' | 'none';

/**
 * Which steps are open and shown: the whole tree up to OPEN_ALL_UP_TO steps, else the way to the
 * failures; Expand all and Collapse all; a row's own toggle over both; failures only.
 */
function useFolding(tree: StepTree) {
  const [mode, setMode] = useState<Mode>('default');
  const [overrides, setOverrides] = useState<Map<string, boolean>>(new Map());
  const [failuresOnly, setFailuresOnly] = useState(false);
  const isExpanded = (node: StepNode): boolean => {
    const own = overrides.get(node.step.id);
    if (own !== undefined) return own;
    if (mode === 'all') return true;
    if (mode === 'none') return false;
    return tree.all.length <= OPEN_ALL_UP_TO || node.troubled;
  };
  const rows = useMemo(() => {
    const shown = visibleSteps(tree, isExpanded);
    return failuresOnly ? shown.filter((n) => n.troubled) : shown;
  }, [tree, mode, overrides, failuresOnly]);
  return {
    rows,
    isExpanded,
    overrides,
    setOverrides,
    failuresOnly,
    setFailuresOnly,
    toggle: (node: StepNode) => setOverrides((old) => new Map(old).set(node.step.id, !isExpanded(node))),
    /** Expand all or Collapse all: every row's own choice is forgotten. */
    setAll: (all: Mode) => {
      setMode(all);
      setOverrides(new Map());
    },
  };
}

type Folding = ReturnType<typeof useFolding>;

/** Once the row is drawn (a long list: once scrolled to), it is brought into view and takes the focus. */
function bringIntoView(stepId: string) {
  let frames = 0;
  const attempt = () => {
    const row = document.getElementById(`step-${stepId}`);
    if (!row) {
      if (frames++ < 30) requestAnimationFrame(attempt);
      return;
    }
    row.scrollIntoView({ block: 'center' });
    row.querySelector<HTMLElement>('.step-title')?.focus({ preventScroll: true });
  };
  requestAnimationFrame(attempt);
}

/** A step chosen elsewhere (the timeline): open the way to it, draw it, bring it into view. */
function useReveal(
  selected: { id: string; seq: number } | undefined,
  tree: StepTree,
  folding: Folding,
  keep: (index: number) => void,
  scrollTo: (index: number) => void,
) {
  useEffect(() => {
    if (!selected) return;
    const node = tree.byId.get(selected.id);
    if (!node) return;
    const open = new Map(folding.overrides);
    for (let up = node.parent; up; up = up.parent) open.set(up.step.id, true);
    folding.setOverrides(open);
    if (folding.failuresOnly && !node.troubled) folding.setFailuresOnly(false);
    const position = visibleSteps(tree, (n) => open.get(n.step.id) ?? folding.isExpanded(n)).indexOf(node);
    keep(position);
    requestAnimationFrame(() => {
      if (position >= 0 && folding.rows.length > DRAW_WHOLE_UP_TO) scrollTo(position);
      bringIntoView(node.step.id);
    });
  }, [selected]);
}

/** Expand all, Collapse all, Failures only, and how many steps there are and are shown. */
function StepTools({ tree, folding }: { tree: StepTree; folding: Folding }) {
  const anyTrouble = tree.roots.some((n) => n.troubled);
  const { rows, failuresOnly } = folding;
  return (
    <div class="step-tools" role="toolbar" aria-label="Steps">
      <button type="button" class="secondary" onClick={() => folding.setAll('all')}>
        Expand all
      </button>
      <button type="button" class="secondary" onClick={() => folding.setAll('none')}>
        Collapse all
      </button>
      <label class="inline-check">
        <input
          type="checkbox"
          checked={failuresOnly}
          disabled={!anyTrouble && !failuresOnly}
          onChange={(e) => folding.setFailuresOnly((e.currentTarget as HTMLInputElement).checked)}
        />
        Failures only
      </label>
      <span class="muted">
        {tree.all.length} steps{rows.length !== tree.all.length ? `, ${rows.length} shown` : ''}
      </span>
    </div>
  );
}

const gapRow = (key: string, height: number) =>
  height > 0 ? <li key={key} class="virtual-gap" aria-hidden="true" style={{ height: `${height}px` }} /> : null;

interface StepListProps {
  tree: StepTree;
  span: number;
  artifactsByStep: Map<string, ArtifactDetails[]>;
  /** Where each error shows, once (errorsShownOnce). */
  errors: ErrorPlaces;
  selected: { id: string; seq: number } | undefined;
}

/**
 * The steps as an indented list in results order, each with its status, duration, a bar placing
 * it in the run's time, its error, text cells and evidence. Steps with children fold.
 */
export function StepList({ tree, span, artifactsByStep, errors, selected }: StepListProps) {
  const folding = useFolding(tree);
  const { rows } = folding;
  /** The row holding the focus (or last chosen on the timeline): drawn wherever the page is scrolled. */
  const [kept, setKept] = useState<number | undefined>();
  // A long list draws only the rows near the viewport (docs/web.md, "Pages at scale").
  const virtual = rows.length > DRAW_WHOLE_UP_TO;
  const list = useWindowList<HTMLOListElement>({
    count: virtual ? rows.length : 0,
    estimate: (index) => {
      const node = rows[index] as StepNode;
      return estimateRow(node, artifactsByStep.get(node.step.id));
    },
    key: (index) => (rows[index] as StepNode).step.id,
    keep: kept,
  });
  useReveal(selected, tree, folding, setKept, list.scrollTo);
  if (tree.all.length === 0) return <p class="muted">No steps recorded.</p>;
  // The rows drawn, each with the height of the rows not drawn above it.
  const drawn = virtual
    ? list.items.map((item) => ({ node: rows[item.index] as StepNode, ...item }))
    : rows.map((node, index) => ({ node, index, gap: 0 }));
  return (
    <div class="step-list">
      <StepTools tree={tree} folding={folding} />
      <div class="step-head" aria-hidden="true">
        <span>Step</span>
        <span>Duration</span>
        <span>Time in run</span>
      </div>
      <ol
        class="steps"
        ref={list.ref}
        onFocusIn={(event) => {
          const index = (event.target as Element).closest('li.step')?.getAttribute('data-index');
          if (index) setKept(Number(index));
        }}
      >
        {drawn.map(({ node, index, gap: before }) => [
          gapRow(`gap-${node.step.id}`, before),
          <StepRow
            key={node.step.id}
            node={node}
            index={index}
            total={rows.length}
            measure={virtual ? list.measure : undefined}
            span={span}
            expanded={folding.isExpanded(node)}
            onToggle={folding.toggle}
            artifacts={artifactsByStep.get(node.step.id)}
            error={errors.shown.get(node.step.id)}
            errorBelow={errors.shownBelow.get(node.step.id)}
            highlighted={selected?.id === node.step.id}
          />,
        ])}
        {virtual ? gapRow('gap-end', list.after) : null}
      </ol>
    </div>
  );
}

/** A step's line: its fold toggle, status, title, duration and its bar in the run's time. */
function StepLine({
  node,
  span,
  expanded,
  onToggle,
}: {
  node: StepNode;
  span: number;
  expanded: boolean;
  onToggle: (node: StepNode) => void;
}) {
  const { step } = node;
  const left = (node.startMs / span) * 100;
  const width = Math.max(0.4, ((node.endMs - node.startMs) / span) * 100);
  return (
    <div class="step-line">
      <div class="step-name" style={{ paddingLeft: `${node.depth * 1.4}rem` }}>
        {node.children.length > 0 ? (
          <button
            type="button"
            class="step-toggle"
            aria-expanded={expanded}
            aria-label={`${expanded ? 'Collapse' : 'Expand'} ${step.title} (${node.descendants} steps inside)`}
            onClick={() => onToggle(node)}
          >
            {expanded ? '▾' : '▸'}
          </button>
        ) : (
          <span class="step-toggle-space" aria-hidden="true" />
        )}
        {/* A blocked step is stored broken with a `blocked` cell (docs/test-management.md): it reads "blocked". */}
        <Badge
          value={step.status}
          label={step.status === 'broken' && step.cells.some((c) => c.name === 'blocked') ? 'blocked' : undefined}
        />
        <span class="step-title" tabIndex={-1}>
          {step.title}
        </span>
        {node.children.length > 0 && !expanded ? <span class="muted step-count">{node.descendants} inside</span> : null}
      </div>
      <span class="step-duration">{formatDuration(step.durationMs)}</span>
      <span class="wf-track" title={stepTooltip(node)} aria-hidden="true">
        <span
          class={`wf-bar status-${step.status}${node.estimated ? ' estimated' : ''}`}
          style={{ left: `${Math.min(left, 99.6)}%`, width: `${Math.min(width, 100 - Math.min(left, 99.6))}%` }}
        />
      </span>
    </div>
  );
}

/** Under a step's line: its error (or where it shows), the link to its error group, its text cells and evidence. */
function StepDetails({ node, artifacts, error, errorBelow }: Pick<StepRowProps, 'node' | 'artifacts' | 'error' | 'errorBelow'>) {
  const { step } = node;
  const cells = cellsNotRepeating(step);
  if (!error && !errorBelow && cells.length === 0 && !(artifacts && artifacts.length > 0)) return null;
  return (
    <div class="step-details" style={{ marginLeft: `${node.depth * 1.4 + 1.9}rem` }}>
      {error ? (
        <Preformatted class="step-error" label={`Error of ${step.title}`}>
          {error}
        </Preformatted>
      ) : errorBelow ? (
        <p class="muted step-error-below">Its error is shown under “{errorBelow.step.title}”.</p>
      ) : null}
      {step.failureGroupId ? (
        <a class="step-group-link" href={`#failure-group-${step.failureGroupId}`}>
          Its error group and triage
        </a>
      ) : null}
      <Cells cells={cells} />
      {artifacts ? <ArtifactGroup artifacts={artifacts} /> : null}
    </div>
  );
}

interface StepRowProps {
  node: StepNode;
  /** Its place in the list, and the list's length: said to assistive technologies when the list is drawn in part. */
  index: number;
  total: number;
  measure: ((element: Element | null) => void) | undefined;
  span: number;
  expanded: boolean;
  onToggle: (node: StepNode) => void;
  artifacts: ArtifactDetails[] | undefined;
  /** The error this step shows (its own, or the run's fuller text of it). */
  error: string | undefined;
  /** The step below that shows this step's error, the same one. */
  errorBelow: StepNode | undefined;
  highlighted: boolean;
}

function StepRow(props: StepRowProps) {
  const { node, index, total, measure, highlighted } = props;
  const { step } = node;
  return (
    <li
      id={`step-${step.id}`}
      class={`step status-${step.status}${highlighted ? ' highlighted' : ''}`}
      data-depth={node.depth}
      data-index={index}
      ref={measure}
      aria-posinset={measure ? index + 1 : undefined}
      aria-setsize={measure ? total : undefined}
    >
      <StepLine node={node} span={props.span} expanded={props.expanded} onToggle={props.onToggle} />
      <StepDetails node={node} artifacts={props.artifacts} error={props.error} errorBelow={props.errorBelow} />
    </li>
  );
}
