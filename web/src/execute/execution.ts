import type { Static } from 'typebox';
import type { v1 } from '../../../src/client/index.ts';
import type { ArtifactDetails, ResultStep, RunResults, TestRun } from '../run/steps.ts';

// Manual execution (UI-6) keeps no state of its own: what a tester did is in the run, as the API
// stores it. Each step of the test is one result step with the key `manual-step-<n>`; its actual
// result is an inline text cell named `actual`; its screenshots are artifacts uploaded with the
// step's key. Every post carries an idempotency key derived from what it records, so a retry after
// a lost answer, or the same click again after a reload, stores nothing twice. On load the page
// reads the run's results and artifacts and continues from there.

export type TestDefinition = Static<typeof v1.tests.TestDefinition>;
/** A step of a test as the page shows it; `data` is there once tests carry it. */
export type DefinedStep = TestDefinition['steps'][number] & { data?: string | null };

/** The statuses a tester gives a step; `broken` is shown as "Blocked" (docs/web.md). */
export type Mark = 'passed' | 'failed' | 'broken' | 'skipped';

/** The mark buttons, in the order they are shown, with their keyboard shortcut. */
export const MARKS: readonly { mark: Mark; label: string; shortcut: string; done: string }[] = [
  { mark: 'passed', label: 'Pass', shortcut: 'p', done: 'Passed' },
  { mark: 'failed', label: 'Fail', shortcut: 'f', done: 'Failed' },
  { mark: 'broken', label: 'Blocked', shortcut: 'b', done: 'Blocked' },
  { mark: 'skipped', label: 'Skip', shortcut: 's', done: 'Skipped' },
];

/** The word for a step's or run's status on this page: `broken` reads "Blocked". */
export function statusWord(status: string): string {
  return MARKS.find((m) => m.mark === status)?.done ?? (status === 'running' ? 'Started' : status);
}

/** The key of the n-th step of the test (0-based index), unique within the run. */
export const stepKey = (index: number) => `manual-step-${index + 1}`;

/** The name of the text cell that holds what the tester saw. */
export const ACTUAL_CELL = 'actual';

/** One step of the test with what the run holds of it. */
export interface StepState {
  index: number;
  key: string;
  defined: DefinedStep;
  /** The stored step, once it was started or marked. */
  stored: ResultStep | undefined;
  /** Its mark, once it has one (a stored step no longer `running`). */
  mark: Mark | undefined;
  actual: string;
  screenshots: ArtifactDetails[];
}

/** The test's steps with the run's results and screenshots laid over them. */
export function stepStates(test: TestDefinition, results: RunResults, artifacts: ArtifactDetails[]): StepState[] {
  const byKey = new Map(results.steps.filter((s) => s.key).map((s) => [s.key as string, s] as const));
  const shotsByStep = new Map<string, ArtifactDetails[]>();
  for (const artifact of artifacts) {
    if (!artifact.stepId) continue;
    const list = shotsByStep.get(artifact.stepId) ?? [];
    list.push(artifact);
    shotsByStep.set(artifact.stepId, list);
  }
  return test.steps.map((defined, index) => {
    const key = stepKey(index);
    const stored = byKey.get(key);
    const mark = stored && stored.status !== 'running' ? (stored.status as Mark) : undefined;
    const actual =
      stored?.cells
        .filter((c) => c.name === ACTUAL_CELL)
        .map((c) => c.text)
        .join('\n') ?? '';
    return { index, key, defined, stored, mark, actual, screenshots: stored ? (shotsByStep.get(stored.id) ?? []) : [] };
  });
}

/** Where to continue: the first step without a mark (the last step when all have one). */
export function resumeIndex(states: StepState[]): number {
  const open = states.findIndex((s) => s.mark === undefined);
  return open === -1 ? Math.max(0, states.length - 1) : open;
}

/** The verdict the marks suggest: any failed step fails the run, else any blocked one breaks it; all skipped skips it. */
export function suggestedVerdict(states: StepState[]): Mark {
  const marks = states.map((s) => s.mark);
  if (marks.includes('failed')) return 'failed';
  if (marks.includes('broken')) return 'broken';
  if (marks.length > 0 && marks.every((m) => m === 'skipped')) return 'skipped';
  return 'passed';
}

/** The cells a step is started with: what the test says to use and to expect, for the run page to show. */
function definitionCells(defined: DefinedStep) {
  return [
    ...(defined.data ? [{ name: 'data', text: defined.data }] : []),
    ...(defined.expected ? [{ name: 'expected', text: defined.expected }] : []),
  ];
}

type AppendBody = Static<typeof v1.results.AppendResultsBody>;

/** The post that starts a step (so screenshots can attach to it before it has a mark). */
export function startBody(state: StepState, now: string): AppendBody {
  return {
    idempotencyKey: `${state.key}:start`,
    steps: [{ key: state.key, title: state.defined.action, status: 'running', startedAt: now, cells: definitionCells(state.defined) }],
  };
}

/**
 * The post that marks a step. A started step is finished by its key (the API takes the status, the
 * duration, the error and the cells then); one never started is stored with its mark at once. A
 * failed or blocked step carries the actual result as its error, so failures group by it.
 */
export function markBody(state: StepState, mark: Mark, actual: string, now: string): AppendBody {
  const text = actual.trim();
  const started = state.stored?.startedAt ?? undefined;
  const error = mark === 'failed' || mark === 'broken' ? text || `${statusWord(mark)} by hand: ${state.defined.action}` : undefined;
  const cells = [...(state.stored ? [] : definitionCells(state.defined)), ...(text ? [{ name: ACTUAL_CELL, text }] : [])];
  return {
    // The mark and the text make the key: the same click retried is one post, a different one is refused by the step's key.
    idempotencyKey: `${state.key}:${mark}:${hashText(text)}`,
    steps: [
      {
        key: state.key,
        title: state.defined.action,
        status: mark,
        startedAt: started ?? now,
        durationMs: started ? Math.max(0, Date.parse(now) - Date.parse(started)) : 0,
        ...(error ? { error } : {}),
        ...(cells.length > 0 ? { cells } : {}),
      },
    ],
  };
}

/** A short hash of a text (FNV-1a), for an idempotency key that changes with it. */
function hashText(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return `${h.toString(16)}-${text.length}`;
}

/** Whether the page can record on the run: only a running run takes results and uploads. */
export const recording = (run: TestRun) => run.status === 'running';
