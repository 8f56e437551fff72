import type { Static } from 'typebox';
import type { v1 } from '../../../src/client/index.ts';
import { type ErrorPlaces as SharedErrorPlaces, errorsShownOnce as sharedErrorsShownOnce } from '../../../src/export/errors-once.ts';

export type TestRun = Static<typeof v1.runs.TestRun>;
export type RunResults = Static<typeof v1.results.RunResults>;
export type ResultStep = Static<typeof v1.results.ResultStep>;
export type TextCell = Static<typeof v1.results.TextCell>;
export type ArtifactDetails = Static<typeof v1.artifacts.ArtifactDetails>;
export type ArtifactImage = Static<typeof v1.artifacts.ArtifactImage>;

/** Each text of a step once, its error first (the rule is src/export/errors-once.ts's). */
export { cellsNotRepeating } from '../../../src/export/errors-once.ts';

/** Where each of a run's errors is shown, once (src/export/errors-once.ts, the HTML export's rule too). */
export type ErrorPlaces = SharedErrorPlaces<StepNode, TextCell>;

/** Each error of a run once, over the run page's tree (the rule is src/export/errors-once.ts's). */
export const errorsShownOnce = (tree: StepTree, runCells: readonly TextCell[]): ErrorPlaces => sharedErrorsShownOnce(tree.roots, runCells);

/** A step in the tree: its place (depth, children) and its time relative to the run's start. */
export interface StepNode {
  step: ResultStep;
  /** Position in the results order: a stable index for rows and bars. */
  index: number;
  depth: number;
  parent: StepNode | undefined;
  children: StepNode[];
  /** Milliseconds from the run's start; estimated when the step has no start time of its own. */
  startMs: number;
  endMs: number;
  estimated: boolean;
  /** The number of steps below it, at any depth. */
  descendants: number;
  /** Whether it or a step below it failed or broke. */
  troubled: boolean;
}

export interface StepTree {
  roots: StepNode[];
  all: StepNode[];
  byId: Map<string, StepNode>;
  /** The run's time span in milliseconds (at least 1). */
  spanMs: number;
  /** Where the last step ends, in milliseconds from the start (at least 1). */
  stepsEndMs: number;
  /** The run's start, epoch milliseconds. */
  originMs: number;
  maxDepth: number;
}

const parse = (iso: string | null | undefined): number | undefined => {
  if (!iso) return undefined;
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? ms : undefined;
};

/**
 * Builds the step tree from the results order (a parent always comes before its children) and
 * places every step in time. A step without a start begins where the step before it at its level
 * ended (or its parent began); a running step without a duration lasts until now.
 */
export function buildStepTree(run: TestRun, steps: ResultStep[], now = Date.now()): StepTree {
  const starts = steps.map((s) => parse(s.startedAt)).filter((n): n is number => n !== undefined);
  const originMs = parse(run.startedAt) ?? (starts.length > 0 ? Math.min(...starts) : undefined) ?? parse(run.createdAt) ?? now;
  const byId = new Map<string, StepNode>();
  const roots: StepNode[] = [];
  const all: StepNode[] = [];
  let maxDepth = 0;
  steps.forEach((step, index) => {
    const parent = step.parentId ? byId.get(step.parentId) : undefined;
    const siblings = parent ? parent.children : roots;
    const previous = siblings[siblings.length - 1];
    const ownStart = parse(step.startedAt);
    const startMs = ownStart !== undefined ? ownStart - originMs : (previous?.endMs ?? parent?.startMs ?? 0);
    const duration = step.durationMs ?? (step.status === 'running' && ownStart !== undefined ? Math.max(0, now - ownStart) : 0);
    const node: StepNode = {
      step,
      index,
      depth: parent ? parent.depth + 1 : 0,
      parent,
      children: [],
      startMs,
      endMs: startMs + duration,
      estimated: ownStart === undefined,
      descendants: 0,
      troubled: step.status === 'failed' || step.status === 'broken',
    };
    siblings.push(node);
    all.push(node);
    byId.set(step.id, node);
    maxDepth = Math.max(maxDepth, node.depth);
  });
  // Counts and trouble flow up: children come after parents, so walk backwards.
  for (let i = all.length - 1; i >= 0; i--) {
    const node = all[i] as StepNode;
    if (node.parent) {
      node.parent.descendants += node.descendants + 1;
      if (node.troubled) node.parent.troubled = true;
      if (node.estimated && node.parent.estimated) node.parent.endMs = Math.max(node.parent.endMs, node.endMs);
    }
  }
  const finished = parse(run.finishedAt);
  const lastEnd = all.reduce((max, n) => Math.max(max, n.endMs), 0);
  const runEnd = finished !== undefined ? finished - originMs : run.status === 'running' ? now - originMs : 0;
  const spanMs = Math.max(1, lastEnd, runEnd);
  return { roots, all, byId, spanMs, stepsEndMs: Math.max(1, lastEnd), originMs, maxDepth };
}

/** The steps shown, depth first, skipping the children of collapsed steps. */
export function visibleSteps(tree: StepTree, expanded: (node: StepNode) => boolean): StepNode[] {
  const out: StepNode[] = [];
  const walk = (nodes: StepNode[]) => {
    for (const node of nodes) {
      out.push(node);
      if (node.children.length > 0 && expanded(node)) walk(node.children);
    }
  };
  walk(tree.roots);
  return out;
}

/** Round tick spacing for a time axis of `spanMs` with about `count` ticks. */
export function tickStep(spanMs: number, count = 6): number {
  const raw = spanMs / count;
  const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000];
  for (const s of steps) if (s >= raw) return s;
  return Math.ceil(raw / 600_000) * 600_000;
}

/** A short axis label: `0`, `250 ms`, `1.5 s`, `2 min`. */
export function tickLabel(ms: number): string {
  if (ms === 0) return '0';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(1))} s`;
  return `${Number((ms / 60_000).toFixed(1))} min`;
}
