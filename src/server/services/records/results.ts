import { randomUUID } from 'node:crypto';
import type { Static } from 'typebox';
import { type AppendResultsBody, RESULT_ITEMS_MAX, RUN_RESULT_ITEMS_MAX, STEP_DEPTH_MAX } from '../../../api/v1/results.ts';
import type { ServiceContext } from '../../context.ts';
import {
  findCellsByKey,
  findResultPost,
  findSteps,
  finishStep,
  insertCells,
  insertResultPost,
  insertSteps,
  nextResultPosition,
  resultsOfRun,
  type StoredStep,
} from '../../db/repositories/results.ts';
import { findRun, lockRunStatus } from '../../db/repositories/runs.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { Executor, StepsTable, TestRunsTable, TextCellsTable } from '../../db/types.ts';
import { AppError, found, invalid } from '../../errors.ts';
import { bodyFingerprint, fingerprintMatches } from '../triage/fingerprint.ts';

export type ResultsInput = Static<typeof AppendResultsBody>;
type StepInput = NonNullable<ResultsInput['steps']>[number];
type PostedCell = NonNullable<ResultsInput['cells']>[number];
type CellInput = Omit<PostedCell, 'stepId' | 'stepKey'>;

/** What became of one posted item: its id and key, and whether this post stored it (else it was stored before). */
export interface AppendedItem {
  id: string;
  key: string | null;
  created: boolean;
}

/** What became of one posted step: whether this post finished a stored running step, and its inline cells. */
export interface AppendedStep extends AppendedItem {
  updated: boolean;
  cells: AppendedItem[];
}

/**
 * What a results post did, item by item in the order posted (presenters/results.ts makes it the
 * answer). A post with an idempotency key keeps it as JSON (`result_posts.receipt`) for its retries:
 * stored receipts hold these field names, so they stay.
 */
export interface AppendedResults {
  steps: AppendedStep[];
  cells: AppendedItem[];
}

function assertTakesResults(run: Pick<TestRunsTable, 'status'>): void {
  if (run.status === 'queued')
    throw new AppError('STATE_CONFLICT', 'The run is queued; start it (status running) before appending results.');
  if (run.status !== 'running') throw new AppError('RUN_FROZEN', `The run is ${run.status}; its results are frozen.`);
}

/** The outcome of an earlier post with this key (the same body), or undefined; 409 for another body. */
async function replayedPost(trx: Executor, runId: string, key: string, body: unknown): Promise<AppendedResults | undefined> {
  const earlier = await findResultPost(trx, runId, key);
  if (!earlier) return undefined;
  if (!fingerprintMatches(earlier.fingerprint, body)) {
    throw new AppError('STATE_CONFLICT', 'This idempotencyKey was already used in the run with another body.');
  }
  return JSON.parse(earlier.receipt) as AppendedResults;
}

/** Stored steps of the run with the given keys (client keys) or ids, by that key or id. */
async function storedSteps(
  trx: Executor,
  runId: string,
  column: 'client_key' | 'id',
  values: Set<string>,
): Promise<Map<string, StoredStep>> {
  const rows = await findSteps(trx, runId, column, [...values]);
  return new Map(rows.map((row) => [(column === 'id' ? row.id : row.client_key) as string, row]));
}

async function storedCellIds(trx: Executor, runId: string, keys: Set<string>): Promise<Map<string, string>> {
  const rows = await findCellsByKey(trx, runId, [...keys]);
  return new Map(rows.map((row) => [row.client_key as string, row.id]));
}

/** Refuses a key used twice in one post: a client bug that would otherwise silently drop an item. */
function collectKeys<T extends { key?: string }>(
  items: readonly T[],
  pointer: (i: number) => string,
  keys = new Map<string, string>(),
): Map<string, string> {
  items.forEach((item, i) => {
    if (item.key === undefined) return;
    const first = keys.get(item.key);
    if (first !== undefined) throw invalid(`${pointer(i)}/key`, `repeats the key of ${first}`);
    keys.set(item.key, pointer(i));
  });
  return keys;
}

const normaliseTime = (value: string | undefined) => (value === undefined ? null : new Date(value).toISOString());

/**
 * Checks what can be checked of a post without the run: its size, its keys (unique per run across
 * the whole post, inline cells included) and that no item names its step or parent twice. Answers
 * the step and cell keys it holds.
 */
function checkPost(
  steps: readonly StepInput[],
  cells: readonly PostedCell[],
): { stepKeys: Map<string, string>; cellKeys: Map<string, string> } {
  const inlineCells = steps.reduce((sum, step) => sum + (step.cells?.length ?? 0), 0);
  const items = steps.length + cells.length + inlineCells;
  if (items > RESULT_ITEMS_MAX) throw invalid('/body', `holds ${items} steps and cells; one post takes at most ${RESULT_ITEMS_MAX}`);
  const stepKeys = collectKeys(steps, (i) => `/body/steps/${i}`);
  const cellKeys = collectKeys(cells, (i) => `/body/cells/${i}`);
  for (const [i, step] of steps.entries()) collectKeys(step.cells ?? [], (j) => `/body/steps/${i}/cells/${j}`, cellKeys);
  steps.forEach((step, i) => {
    if (step.parentKey !== undefined && step.parentId !== undefined)
      throw invalid(`/body/steps/${i}/parentId`, 'cannot be combined with parentKey');
  });
  cells.forEach((cell, i) => {
    if (cell.stepKey !== undefined && cell.stepId !== undefined)
      throw invalid(`/body/cells/${i}/stepId`, 'cannot be combined with stepKey');
  });
  return { stepKeys, cellKeys };
}

/** Every stored step the post may name: by key (its own keys, parents, cell targets) or by id. */
function namedSteps(
  steps: readonly StepInput[],
  cells: readonly PostedCell[],
  stepKeys: Map<string, string>,
): { keys: Set<string>; ids: Set<string> } {
  const keys = new Set(stepKeys.keys());
  const ids = new Set<string>();
  for (const step of steps) {
    if (step.parentKey !== undefined) keys.add(step.parentKey);
    if (step.parentId !== undefined) ids.add(step.parentId);
  }
  for (const cell of cells) {
    if (cell.stepKey !== undefined) keys.add(cell.stepKey);
    if (cell.stepId !== undefined) ids.add(cell.stepId);
  }
  return { keys, ids };
}

/** The rows a post adds, each at the run's next position, and the stored running steps it finishes. */
interface Plan {
  runId: string;
  now: string;
  position: number;
  /** Stored steps the post names by key, then also this post's keyed steps as they are planned. */
  byKey: Map<string, StoredStep>;
  byId: Map<string, StoredStep>;
  storedCells: Map<string, string>;
  newSteps: StepsTable[];
  newCells: TextCellsTable[];
  finishes: { id: string; step: StepInput }[];
}

/**
 * A post's plan, started at the run's next position with the stored steps and cells the post names.
 * Every stored step and cell took a position in turn: at 0 the run holds none, so a run's first post
 * (a reporter's bulk post) looks nothing up.
 */
async function startPlan(
  trx: Executor,
  runId: string,
  now: string,
  named: { keys: Set<string>; ids: Set<string> },
  cellKeys: Set<string>,
): Promise<Plan> {
  const position = await nextResultPosition(trx, runId);
  const empty = position === 0;
  return {
    runId,
    now,
    position,
    byKey: empty ? new Map() : await storedSteps(trx, runId, 'client_key', named.keys),
    byId: empty ? new Map() : await storedSteps(trx, runId, 'id', named.ids),
    storedCells: empty ? new Map() : await storedCellIds(trx, runId, cellKeys),
    newSteps: [],
    newCells: [],
    finishes: [],
  };
}

/** A cell of the post at the next position; a keyed cell already stored is not stored again. */
function planCell(plan: Plan, cell: CellInput, stepId: string | null): AppendedItem {
  const stored = cell.key === undefined ? undefined : plan.storedCells.get(cell.key);
  if (stored !== undefined) return { id: stored, key: cell.key ?? null, created: false };
  const row: TextCellsTable = {
    id: randomUUID(),
    run_id: plan.runId,
    step_id: stepId,
    client_key: cell.key ?? null,
    position: plan.position++,
    name: cell.name,
    // The validator fills in the default; a caller that skipped it gets the same.
    media_type: cell.mediaType ?? 'text/plain',
    text: cell.text,
    created_at: plan.now,
  };
  plan.newCells.push(row);
  return { id: row.id, key: row.client_key, created: true };
}

/** The step a new step nests under, named by `parentKey` or `parentId`; undefined at the top. */
function parentOf(plan: Plan, step: StepInput, i: number): StoredStep | undefined {
  if (step.parentKey !== undefined) {
    const parent = plan.byKey.get(step.parentKey);
    if (!parent) throw invalid(`/body/steps/${i}/parentKey`, 'names no step of this run posted before it');
    return parent;
  }
  if (step.parentId === undefined) return undefined;
  const parent = plan.byId.get(step.parentId);
  if (!parent) throw invalid(`/body/steps/${i}/parentId`, 'names no step of this run');
  return parent;
}

/** A step new to the run at the next position, then its inline cells. */
function planNewStep(plan: Plan, step: StepInput, i: number): AppendedStep {
  const parent = parentOf(plan, step, i);
  const depth = (parent?.depth ?? 0) + 1;
  if (depth > STEP_DEPTH_MAX) throw invalid(`/body/steps/${i}`, `nests ${depth} levels deep; at most ${STEP_DEPTH_MAX}`);
  const row: StepsTable = {
    id: randomUUID(),
    run_id: plan.runId,
    parent_id: parent?.id ?? null,
    depth,
    client_key: step.key ?? null,
    position: plan.position++,
    title: step.title,
    status: step.status,
    started_at: normaliseTime(step.startedAt),
    duration_ms: step.durationMs ?? null,
    error_message: step.error ?? null,
    failure_group_id: null, // set when the run completes (docs/triage.md)
    created_at: plan.now,
  };
  plan.newSteps.push(row);
  // Later steps of this post may nest under it by key.
  if (step.key !== undefined) plan.byKey.set(step.key, { id: row.id, client_key: row.client_key, status: row.status, depth });
  const cells = (step.cells ?? []).map((cell) => planCell(plan, cell, row.id));
  return { id: row.id, key: row.client_key, created: true, updated: false, cells };
}

/**
 * A step of the post. A stored step changes only from running to finished: anything else repeats
 * a post already applied (a retry), so the step is skipped whole, inline cells included, keyed or not.
 */
function planStep(plan: Plan, step: StepInput, i: number): AppendedStep {
  const stored = step.key === undefined ? undefined : plan.byKey.get(step.key);
  if (!stored) return planNewStep(plan, step, i);
  const key = step.key ?? null;
  if (stored.status !== 'running' || step.status === 'running') return { id: stored.id, key, created: false, updated: false, cells: [] };
  plan.finishes.push({ id: stored.id, step });
  const cells = (step.cells ?? []).map((cell) => planCell(plan, cell, stored.id));
  return { id: stored.id, key, created: false, updated: true, cells };
}

/** The step a run-level cell attaches to, by `stepKey` or `stepId`; null for the run itself. */
function stepOfCell(plan: Plan, cell: PostedCell, i: number): string | null {
  if (cell.stepKey !== undefined) {
    const step = plan.byKey.get(cell.stepKey);
    if (!step) throw invalid(`/body/cells/${i}/stepKey`, 'names no step of this run');
    return step.id;
  }
  if (cell.stepId === undefined) return null;
  const step = plan.byId.get(cell.stepId);
  if (!step) throw invalid(`/body/cells/${i}/stepId`, 'names no step of this run');
  return step.id;
}

/** Writes a plan: steps first (cells and child steps reference them, a parent precedes its children), then cells, then finished steps. */
async function writePlan(ctx: ServiceContext, trx: Executor, plan: Plan): Promise<void> {
  if (plan.position > RUN_RESULT_ITEMS_MAX) {
    throw new AppError(
      'UNPROCESSABLE',
      `The run would hold ${plan.position} steps and cells; a run holds at most ${RUN_RESULT_ITEMS_MAX}.`,
    );
  }
  await insertSteps(trx, plan.newSteps);
  ctx.crashPoint('results-mid-transaction');
  await insertCells(trx, plan.newCells);
  for (const { id, step } of plan.finishes) {
    await finishStep(trx, id, {
      status: step.status,
      duration_ms: step.durationMs ?? null,
      error_message: step.error ?? null,
      ...(step.startedAt !== undefined ? { started_at: normaliseTime(step.startedAt) } : {}),
    });
  }
}

/**
 * Appends steps and text cells to a running run in one transaction (all or nothing).
 *
 * Items take the run's next positions in the order posted (each step, then its inline
 * cells; then the run-level cells), so reading them back by position replays the stream. Keyed
 * items already stored are not stored again; a stored step still `running` is finished by a
 * post of its key with another status. Inserts go in chunks that respect each dialect's limit
 * on bound parameters, so one post of 10 000 steps is a handful of statements.
 */
export async function appendResults(
  ctx: ServiceContext,
  runId: string,
  input: ResultsInput,
  /** An open transaction to append within (a run recorded in one call); else its own. */
  transaction?: Executor,
): Promise<AppendedResults> {
  const steps = input.steps ?? [];
  const cells = input.cells ?? [];
  const { stepKeys, cellKeys } = checkPost(steps, cells);
  const now = ctx.clock().toISOString();
  const key = input.idempotencyKey;
  const fingerprint = key === undefined ? undefined : bodyFingerprint(input);
  return inTransaction(transaction ?? ctx.db, async (trx) => {
    const run = found(await lockRunStatus(trx, runId), 'The test run');
    // A retry is answered before the status check: the run may have finished since the first post.
    const replay = key === undefined ? undefined : await replayedPost(trx, runId, key, input);
    if (replay) return replay;
    assertTakesResults(run);
    const plan = await startPlan(trx, runId, now, namedSteps(steps, cells, stepKeys), new Set(cellKeys.keys()));
    const appended: AppendedResults = {
      steps: steps.map((step, i) => planStep(plan, step, i)),
      cells: cells.map((cell, i) => planCell(plan, cell, stepOfCell(plan, cell, i))),
    };
    await writePlan(ctx, trx, plan);
    if (key !== undefined && fingerprint !== undefined) {
      await insertResultPost(trx, { run_id: runId, idempotency_key: key, fingerprint, receipt: JSON.stringify(appended), created_at: now });
    }
    return appended;
  });
}

export interface RunResultsContent {
  run: TestRunsTable;
  steps: StepsTable[];
  cells: TextCellsTable[];
}

/**
 * The result content of a run, in position order. Only a completed run's results are final; any
 * other run is a 409 unless the caller asks for partial results.
 */
export async function readResults(ctx: ServiceContext, runId: string, options: { partial: boolean }): Promise<RunResultsContent> {
  const run = found(await findRun(ctx.db, runId), 'The test run');
  if (run.status !== 'completed' && !options.partial) {
    throw new AppError(
      'RUN_NOT_COMPLETED',
      `The run is ${run.status}; its results are final once it is completed. Pass partial=true for what is stored so far.`,
    );
  }
  return { run, ...(await resultsOfRun(ctx.db, runId)) };
}
