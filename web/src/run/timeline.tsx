import { useMemo } from 'preact/hooks';
import { formatDuration } from '../format.ts';
import { type StepNode, type StepTree, tickLabel, tickStep } from './steps.ts';

const LANE = 22;
const AXIS = 22;
/** Narrowest bar drawn, in percent of the width, so instant steps still show. */
const MIN_WIDTH = 0.25;

/** Drawing order: where narrow bars overlap, a failure is drawn last, on top, and never hidden. */
const LAYER: Record<string, number> = { passed: 0, skipped: 1, running: 2, broken: 3, failed: 4 };

const pct = (value: number) => `${Math.min(100, Math.max(0, value)).toFixed(3)}%`;

export function stepTooltip(node: StepNode): string {
  const { step } = node;
  const timing = `${formatDuration(step.durationMs)} from +${formatDuration(Math.round(node.startMs))}${node.estimated ? ' (start estimated)' : ''}`;
  return `${step.title}\n${step.status} · ${timing}${step.error ? `\n${step.error.slice(0, 300)}` : ''}`;
}

/**
 * The run at a glance: one lane per nesting depth, every step a bar from its start to its end,
 * coloured by status, its title written in it where it fits. A click shows the step in the tree.
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
  const step = tickStep(span);
  const ticks: number[] = [];
  for (let t = 0; t <= span; t += step) ticks.push(t);
  const counts = new Map<string, number>();
  for (const node of tree.all) counts.set(node.step.status, (counts.get(node.step.status) ?? 0) + 1);
  const summary = [...counts].map(([status, n]) => `${n} ${status}`).join(', ');
  const drawn = useMemo(() => [...tree.all].sort((a, b) => (LAYER[a.step.status] ?? 0) - (LAYER[b.step.status] ?? 0)), [tree]);
  return (
    <figure class="timeline">
      <svg
        class="timeline-svg"
        width="100%"
        height={height}
        role="img"
        aria-label={`Timeline of ${tree.all.length} steps over ${formatDuration(Math.round(span))}: ${summary}`}
      >
        <g class="timeline-axis">
          {ticks.map((t) => (
            <g key={t}>
              <line x1={pct((t / span) * 100)} x2={pct((t / span) * 100)} y1={AXIS - 4} y2={height} class="timeline-grid" />
              <text
                x={pct((t / span) * 100)}
                y={12}
                class="timeline-tick"
                text-anchor={t === 0 ? 'start' : t / span > 0.95 ? 'end' : 'middle'}
              >
                {tickLabel(t)}
              </text>
            </g>
          ))}
        </g>
        {drawn.map((node) => {
          // A step at the very end (or past a fitted width) still shows, at the right edge.
          const x = Math.min(100 - MIN_WIDTH, (node.startMs / span) * 100);
          const width = Math.max(MIN_WIDTH, ((node.endMs - node.startMs) / span) * 100);
          return (
            // biome-ignore lint/a11y/useKeyWithClickEvents: a shortcut for the eye; the step list below is the keyboard's way to every step
            <svg
              key={node.step.id}
              x={pct(x)}
              y={AXIS + node.depth * LANE}
              width={pct(Math.min(width, 100 - x))}
              height={LANE - 3}
              class={`timeline-bar status-${node.step.status}${node.estimated ? ' estimated' : ''}`}
              onClick={() => onSelect(node)}
            >
              <title>{stepTooltip(node)}</title>
              <rect width="100%" height="100%" rx="3" />
              {width > 4 ? (
                <text x="4" y={LANE - 9} class="timeline-label">
                  {node.step.title}
                </text>
              ) : null}
            </svg>
          );
        })}
        {running ? <line class="timeline-now" x1="100%" x2="100%" y1={AXIS - 4} y2={height} /> : null}
      </svg>
      <figcaption class="timeline-legend">
        {(['passed', 'failed', 'broken', 'skipped', 'running'] as const).map((status) =>
          counts.get(status) ? (
            <span key={status} class="legend-item">
              <span class={`legend-swatch status-${status}`} aria-hidden="true" />
              {counts.get(status)} {status}
            </span>
          ) : null,
        )}
        <span class="muted">Total {formatDuration(Math.round(tree.spanMs))}. Select a bar to find its step.</span>
      </figcaption>
    </figure>
  );
}
