import type { ComponentChildren } from 'preact';
import { formatDuration, formatTime } from './format.ts';

/** One term of a `dl class="facts"` and its value. */
export function Fact({ term, class: className, children }: { term: string; class?: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd class={className}>{children}</dd>
    </div>
  );
}

const LABELS = ['environment', 'branch', 'build', 'commit'] as const;

/** The labels a run or a job carries, those it has, in this order (the commit in a fixed-width font). */
export function LabelFacts({ labels }: { labels: Record<(typeof LABELS)[number], string | null> }) {
  return (
    <>
      {LABELS.filter((label) => labels[label]).map((label) => (
        <Fact key={label} term={label[0]?.toUpperCase() + label.slice(1)} class={label === 'commit' ? 'mono' : undefined}>
          {labels[label]}
        </Fact>
      ))}
    </>
  );
}

/** When a run or a job was made, started and ended (finished, or as `ended` says), and how long it took. */
export function TimeFacts({
  createdAt,
  startedAt,
  endedAt,
  ended = 'Finished',
  durationMs,
}: {
  createdAt: string;
  startedAt: string | null;
  endedAt: string | null;
  ended?: string;
  durationMs: number | null;
}) {
  return (
    <>
      <Fact term="Created">{formatTime(createdAt)}</Fact>
      <Fact term="Started">{formatTime(startedAt)}</Fact>
      <Fact term={ended}>{formatTime(endedAt)}</Fact>
      <Fact term="Duration">{formatDuration(durationMs)}</Fact>
    </>
  );
}
