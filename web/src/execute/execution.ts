import type { Static } from 'typebox';
import type { v1 } from '../../../src/client/index.ts';
import type { ArtifactDetails, ResultStep, RunResults, TestRun } from '../run/steps.ts';

// Manual execution (UI-10) keeps no state of its own: what a tester did is in the run, as the API
// stores it, by the recipe of docs/test-management.md ("Manual execution, step by step"). Each step
// of the version the run executes is one result step with the key `step-<n>`; its actual result is
// an inline text cell named `actual` (key `step-<n>-actual`); a blocked step is `broken` with a
// `blocked` cell; its screenshots are artifacts uploaded with the step's key. Every post carries an idempotency key derived from what it records, so a retry after
// a lost answer, or the same click again after a reload, stores nothing twice. On load the page
// reads the run's results and artifacts and continues from there.

/** The test as the run executes it: the version the run records, or the test as it is for a run without one. */
export interface TestDefinition {
  id: string;
  name: string;
  version: number | null;
  steps: DefinedStep[];
}
/** A step of a test: action, optional data, expected result. */
export type DefinedStep = Static<typeof v1.tests.TestStep>;

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
export const stepKey = (index: number) => `step-${index + 1}`;

/** The name of the text cell that holds what the tester saw. */
export const ACTUAL_CELL = 'actual';
/** The run-level note the server ends a manual run left idle with (TCM-9), the run `aborted`. */
export const IDLE_NOTE_CELL = 'aborted';
/** The cell that tells a blocked step from a broken one (the results have no `blocked` status). */
export const BLOCKED_CELL = 'blocked';

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
function definitionCells(key: string, defined: DefinedStep) {
  return [
    ...(defined.data ? [{ key: `${key}-data`, name: 'data', text: defined.data }] : []),
    ...(defined.expected ? [{ key: `${key}-expected`, name: 'expected', text: defined.expected }] : []),
  ];
}

type AppendBody = Static<typeof v1.results.AppendResultsBody>;

/** The post that starts a step (so screenshots can attach to it before it has a mark). */
export function startBody(state: StepState, now: string): AppendBody {
  return {
    idempotencyKey: `${state.key}:start`,
    steps: [
      { key: state.key, title: state.defined.action, status: 'running', startedAt: now, cells: definitionCells(state.key, state.defined) },
    ],
  };
}

/**
 * The post that marks a step. A started step is finished by its key (the API takes the status, the
 * duration, the error and the cells then); one never started is stored with its mark at once. A
 * failed step carries the actual result as its error, so failures group by it; a blocked one is
 * `broken` with a `blocked` cell and no error: being blocked is not a cause of failure to group.
 */
export function markBody(state: StepState, mark: Mark, actual: string, now: string): AppendBody {
  const text = actual.trim();
  const started = state.stored?.startedAt ?? undefined;
  const error = mark === 'failed' ? text || `Failed by hand: ${state.defined.action}` : undefined;
  const cells = [
    ...(state.stored ? [] : definitionCells(state.key, state.defined)),
    ...(text ? [{ key: `${state.key}-actual`, name: ACTUAL_CELL, text }] : []),
    ...(mark === 'broken' ? [{ key: `${state.key}-blocked`, name: BLOCKED_CELL, text: text || 'blocked' }] : []),
  ];
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
