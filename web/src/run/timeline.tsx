import { useMemo, useRef, useState } from 'preact/hooks';
import { formatDuration } from '../format.ts';
import { type StepNode, type StepTree, tickLabel, tickStep } from './steps.ts';

const LANE = 22;
const AXIS = 22;
/** Narrowest bar drawn, in percent of the width, so instant steps still show. */
const MIN_WIDTH = 0.25;

/**
 * Up to this many steps every bar is a button of its own. Beyond, the bars are plain shapes and only
 * the bar in the tab order is a button (drawn over its shape): a 5,000-step run drew 20,000 SVG
 * elements, and its page stalled for half a second (docs/performance.md, "W1, the web pages at
 * scale").
 */
const DRAWN_AS_BUTTONS_UP_TO = 1000;

/** Drawing order: where narrow bars overlap, a failure is drawn last, on top, and never hidden. */
const LAYER: Record<string, number> = { passed: 0, skipped: 1, running: 2, broken: 3, failed: 4 };

const pct = (value: number) => `${Math.min(100, Math.max(0, value)).toFixed(3)}%`;

/** How long a step took and when it started, from the run's start. */
const timingOf = (node: StepNode) =>
  `${formatDuration(node.step.durationMs)} from +${formatDuration(Math.round(node.startMs))}${node.estimated ? ' (start estimated)' : ''}`;

export function stepTooltip(node: StepNode): string {
  const { step } = node;
  return `${step.title}\n${step.status} · ${timingOf(node)}${step.error ? `\n${step.error.slice(0, 300)}` : ''}`;
}

/** A bar's accessible name: the step, its status and time, and the first line of its error. */
export function stepLabel(node: StepNode): string {
  const { step } = node;
  const timing = timingOf(node);
  const error = step.error?.split('\n')[0]?.slice(0, 200);
  return `${step.title}: ${step.status}, ${timing}${error ? `; ${error}` : ''}`;
}

/**
 * The bars' one stop in the tab order (a roving tabindex): the step last moved to, or the first.
 * The arrow keys move between the steps in results order, Home and End go to the first and last,
 * and Enter or Space picks the step as a click does.
 */
function useRovingStep(tree: StepTree, onSelect: (node: StepNode) => void) {
  const [current, setCurrent] = useState<string | undefined>();
  const svg = useRef<SVGSVGElement>(null);
  const tabStop = current !== undefined && tree.byId.has(current) ? current : tree.all[0]?.step.id;
  const pick = (node: StepNode) => {
    setCurrent(node.step.id);
    onSelect(node);
  };
  const moveTo = (node: StepNode | undefined) => {
    if (!node) return;
    setCurrent(node.step.id);
    svg.current?.querySelector<SVGElement>(`[data-step="${CSS.escape(node.step.id)}"]`)?.focus();
  };
  const onKey = (event: KeyboardEvent, node: StepNode) => {
    const at = tree.all.indexOf(node);
    const to: Record<string, StepNode | undefined> = {
      ArrowRight: tree.all[at + 1],
      ArrowDown: tree.all[at + 1],
      ArrowLeft: tree.all[at - 1],
      ArrowUp: tree.all[at - 1],
      Home: tree.all[0],
      End: tree.all[tree.all.length - 1],
    };
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      pick(node);
    } else if (event.key in to) {
      event.preventDefault();
      moveTo(to[event.key]);
    }
  };
  return { svg, tabStop, pick, onKey };
}

/**
 * The run at a glance: one lane per nesting depth, every step a bar from its start to its end,
 * coloured by status, its title written in it where it fits. A click shows the step in the tree.
 *
 * By keyboard the bars are one stop in the tab order (a roving tabindex: a 1,000-step run is not
 * 1,000 stops): the arrow keys move between the steps in results order, Home and End go to the
 * first and last, and Enter or Space does what a click does.
 */
export function Timeline({
  tree,
  span,
  running,
  onSelect,
}: {
  tree: StepTree;
  /** The time the width stands for: the whole run, or up to the last step's end. */
  span: number;
  running: boolean;
  onSelect: (node: StepNode) => void;
}) {
  const lanes = tree.maxDepth + 1;
  const height = AXIS + lanes * LANE + 4;
  const counts = new Map<string, number>();
  for (const node of tree.all) counts.set(node.step.status, (counts.get(node.step.status) ?? 0) + 1);
  const summary = [...counts].map(([status, n]) => `${n} ${status}`).join(', ');
  const drawn = useMemo(() => [...tree.all].sort((a, b) => (LAYER[a.step.status] ?? 0) - (LAYER[b.step.status] ?? 0)), [tree]);
  const { svg, tabStop, pick, onKey } = useRovingStep(tree, onSelect);
  return (
    <figure class="timeline">
      {/* biome-ignore lint/a11y/useSemanticElements: an SVG drawing cannot be a fieldset; the group names the bars inside */}
      <svg
        ref={svg}
        class="timeline-svg"
        width="100%"
        height={height}
        role="group"
        aria-label={`Timeline of ${tree.all.length} steps over ${formatDuration(Math.round(span))}: ${summary}`}
      >
        <TimelineAxis span={span} height={height} />
        {tree.all.length > DRAWN_AS_BUTTONS_UP_TO ? (
          <CompactBars drawn={drawn} span={span} current={tree.byId.get(tabStop ?? '')} onPick={pick} onKey={onKey} />
        ) : (
          drawn.map((node) => <Bar key={node.step.id} node={node} span={span} tabStop={tabStop} onPick={pick} onKey={onKey} />)
        )}
        {running ? <line class="timeline-now" x1="100%" x2="100%" y1={AXIS - 4} y2={height} /> : null}
      </svg>
      <TimelineLegend counts={counts} spanMs={tree.spanMs} />
    </figure>
  );
}

/** The time axis: a grid line and a label at every tick, for the eye only. */
function TimelineAxis({ span, height }: { span: number; height: number }) {
  const step = tickStep(span);
  const ticks: number[] = [];
  for (let t = 0; t <= span; t += step) ticks.push(t);
  return (
    // biome-ignore lint/a11y/noAriaHiddenOnFocusable: nothing in the axis takes focus; its tick labels are only for the eye
    <g class="timeline-axis" aria-hidden="true">
      {ticks.map((t) => (
        <g key={t}>
          <line x1={pct((t / span) * 100)} x2={pct((t / span) * 100)} y1={AXIS - 4} y2={height} class="timeline-grid" />
          <text x={pct((t / span) * 100)} y={12} class="timeline-tick" text-anchor={t === 0 ? 'start' : t / span > 0.95 ? 'end' : 'middle'}>
            {tickLabel(t)}
          </text>
        </g>
      ))}
    </g>
  );
}

/** How many steps ended each way, the run's total time, and how to use the drawing. */
function TimelineLegend({ counts, spanMs }: { counts: Map<string, number>; spanMs: number }) {
  return (
    <figcaption class="timeline-legend">
      {(['passed', 'failed', 'broken', 'skipped', 'running'] as const).map((status) =>
        counts.get(status) ? (
          <span key={status} class="legend-item">
            <span class={`legend-swatch status-${status}`} aria-hidden="true" />
            {counts.get(status)} {status}
          </span>
        ) : null,
      )}
      <span class="muted">
        Total {formatDuration(Math.round(spanMs))}. Select a bar to find its step (by keyboard: Tab to the timeline, the arrow keys, then
        Enter).
      </span>
    </figcaption>
  );
}

/** Where a step's bar is, in percent of the width (x, width) and pixels (y). */
function placeOf(node: StepNode, span: number) {
  // A step at the very end (or past a fitted width) still shows, at the right edge.
  const x = Math.min(100 - MIN_WIDTH, (node.startMs / span) * 100);
  const width = Math.min(Math.max(MIN_WIDTH, ((node.endMs - node.startMs) / span) * 100), 100 - x);
  return { x, width, y: AXIS + node.depth * LANE };
}

interface BarProps {
  node: StepNode;
  span: number;
  onPick: (node: StepNode) => void;
  onKey: (event: KeyboardEvent, node: StepNode) => void;
}

/** A step's bar as a button: named by its step, status, time and error; the tab stop when it is `tabStop`. */
function Bar({ node, span, tabStop, onPick, onKey, extraClass = '' }: BarProps & { tabStop: string | undefined; extraClass?: string }) {
  const { x, width, y } = placeOf(node, span);
  return (
    // The tooltip is the group's, not the bar's: the bar's name must hold all the text inside it
    // (axe's label-content-name-mismatch), and a <title> in it would be text inside it.
    <g>
      <title>{stepTooltip(node)}</title>
      {/* biome-ignore lint/a11y/useSemanticElements lint/a11y/useFocusableInteractive: an HTML button cannot sit inside an SVG drawing; it is focusable by its SVG `tabindex` */}
      <svg
        x={pct(x)}
        y={y}
        width={pct(width)}
        height={LANE - 3}
        class={`timeline-bar status-${node.step.status}${node.estimated ? ' estimated' : ''}${extraClass}`}
        // biome-ignore lint/a11y/noNoninteractiveElementToInteractiveRole: the bar acts as a button (role, tab stop, Enter and Space)
        role="button"
        // Lower case: on an SVG element Preact sets the attribute as written, and SVG's is `tabindex`.
        tabindex={node.step.id === tabStop ? 0 : -1}
        aria-label={stepLabel(node)}
        data-step={node.step.id}
        onClick={() => onPick(node)}
        onKeyDown={(event) => onKey(event, node)}
      >
        <rect width="100%" height="100%" rx="3" />
        {width > 4 ? (
          <text x="4" y={LANE - 9} class="timeline-label">
            {node.step.title}
          </text>
        ) : null}
      </svg>
    </g>
  );
}

/**
 * A long run's bars: each a plain shape (a click still picks its step, a hover still names it in
 * the drawing's one tooltip), and over them the one bar in the tab order, as a button, which the
 * arrow keys move from step to step.
 */
function CompactBars({
  drawn,
  span,
  current,
  onPick,
  onKey,
}: {
  drawn: StepNode[];
  span: number;
  current: StepNode | undefined;
  onPick: (node: StepNode) => void;
  onKey: (event: KeyboardEvent, node: StepNode) => void;
}) {
  const tooltip = useRef<HTMLTitleElement>(null);
  const nodeAt = (target: EventTarget | null) => {
    const index = (target as Element | null)?.getAttribute?.('data-index');
    return index ? drawn[Number(index)] : undefined;
  };
  return (
    <>
      {/* biome-ignore lint/a11y/noAriaHiddenOnFocusable lint/a11y/useKeyWithMouseEvents: the shapes are for the mouse (none takes the focus); the keyboard has the button drawn over them */}
      <g
        class="timeline-marks"
        aria-hidden="true"
        onClick={(event) => {
          const node = nodeAt(event.target);
          if (node) onPick(node);
        }}
        onMouseOver={(event) => {
          const node = nodeAt(event.target);
          if (node && tooltip.current) tooltip.current.textContent = stepTooltip(node);
        }}
      >
        <title ref={tooltip} />
        {drawn.map((node, index) => {
          const { x, width, y } = placeOf(node, span);
          return (
            <rect
              key={node.step.id}
              data-index={index}
              x={pct(x)}
              y={y}
              width={pct(width)}
              height={LANE - 3}
              class={`timeline-mark status-${node.step.status}${node.estimated ? ' estimated' : ''}`}
            />
          );
        })}
      </g>
      {current ? (
        <Bar key="tab-stop" node={current} span={span} tabStop={current.step.id} onPick={onPick} onKey={onKey} extraClass=" tab-stop" />
      ) : null}
    </>
  );
}
