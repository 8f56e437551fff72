import { randomUUID } from 'node:crypto';
import type { Static } from 'typebox';
import {
  type AppendResultsBody,
  type AppendResultsReply,
  RESULT_ITEMS_MAX,
  RUN_RESULT_ITEMS_MAX,
  STEP_DEPTH_MAX,
} from '../../api/v1/results.ts';
import type { AppContext } from '../context.ts';
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
} from '../db/repositories/results.ts';
import { findRun, lockRunStatus } from '../db/repositories/runs.ts';
import { inTransaction } from '../db/repositories/transaction.ts';
import type { Executor, StepsTable, TestRunsTable, TextCellsTable } from '../db/types.ts';
import { AppError, found, invalid } from '../errors.ts';
import { bodyFingerprint, fingerprintMatches } from './fingerprint.ts';

export type ResultsInput = Static<typeof AppendResultsBody>;
export type ResultsReceipt = Static<typeof AppendResultsReply>;
type StepInput = NonNullable<ResultsInput['steps']>[number];
type CellInput = Omit<NonNullable<ResultsInput['cells']>[number], 'stepId' | 'stepKey'>;

function assertTakesResults(run: Pick<TestRunsTable, 'status'>): void {
  if (run.status === 'queued')
    throw new AppError('STATE_CONFLICT', 'The run is queued; start it (status running) before appending results.');
  if (run.status !== 'running') throw new AppError('RUN_FROZEN', `The run is ${run.status}; its results are frozen.`);
}

/** The receipt of an earlier post with this key (the same body), or undefined; 409 for another body. */
async function replayedPost(trx: Executor, runId: string, key: string, body: unknown): Promise<ResultsReceipt | undefined> {
  const earlier = await findResultPost(trx, runId, key);
  if (!earlier) return undefined;
  if (!fingerprintMatches(earlier.fingerprint, body)) {
    throw new AppError('STATE_CONFLICT', 'This idempotencyKey was already used in the run with another body.');
  }
  return JSON.parse(earlier.receipt) as ResultsReceipt;
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
 * Appends steps and text cells to a running run in one transaction (all or nothing).
 *
 * Items take the run's next positions in the order posted (each step, then its inline
 * cells; then the run-level cells), so reading them back by position replays the stream. Keyed
 * items already stored are not stored again; a stored step still `running` is finished by a
 * post of its key with another status. Inserts go in chunks that respect each dialect's limit
 * on bound parameters, so one post of 10 000 steps is a handful of statements.
 */
export async function appendResults(
  ctx: AppContext,
  runId: string,
  input: ResultsInput,
  /** An open transaction to append within (a run recorded in one call); else its own. */
  transaction?: Executor,
): Promise<ResultsReceipt> {
  const steps = input.steps ?? [];
  const cells = input.cells ?? [];
  const inlineCells = steps.reduce((sum, step) => sum + (step.cells?.length ?? 0), 0);
  if (steps.length + cells.length + inlineCells > RESULT_ITEMS_MAX) {
    throw invalid(
      '/body',
      `holds ${steps.length + cells.length + inlineCells} steps and cells; one post takes at most ${RESULT_ITEMS_MAX}`,
    );
  }

  // Keys are unique per run across the whole post, inline cells included.
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

  const now = ctx.clock().toISOString();
  const key = input.idempotencyKey;
  const fingerprint = key === undefined ? undefined : bodyFingerprint(input);
  const append = async (trx: Executor): Promise<ResultsReceipt> => {
    const run = found(await lockRunStatus(trx, runId), 'The test run');
    // A retry is answered before the status check: the run may have finished since the first post.
    if (key !== undefined && fingerprint !== undefined) {
      const replay = await replayedPost(trx, runId, key, input);
      if (replay) return replay;
    }
    assertTakesResults(run);

    // Every stored step the post may name: by key (its own keys, parents, cell targets) or by id.
    const namedKeys = new Set([...stepKeys.keys()]);
    const namedIds = new Set<string>();
    for (const step of steps) {
      if (step.parentKey !== undefined) namedKeys.add(step.parentKey);
      if (step.parentId !== undefined) namedIds.add(step.parentId);
    }
    for (const cell of cells) {
      if (cell.stepKey !== undefined) namedKeys.add(cell.stepKey);
      if (cell.stepId !== undefined) namedIds.add(cell.stepId);
    }
    // Every stored step and cell took a position in turn: at 0 the run holds none, so a run's
    // first post (a reporter's bulk post) looks nothing up.
    const firstPosition = await nextResultPosition(trx, runId);
    const empty = firstPosition === 0;
    const byKey = empty ? new Map<string, StoredStep>() : await storedSteps(trx, runId, 'client_key', namedKeys);
    const byId = empty ? new Map<string, StoredStep>() : await storedSteps(trx, runId, 'id', namedIds);
    const storedCells = empty ? new Map<string, string>() : await storedCellIds(trx, runId, new Set(cellKeys.keys()));

    let position = firstPosition;
    const newSteps: StepsTable[] = [];
    const newCells: TextCellsTable[] = [];
    const finishes: { id: string; step: StepInput }[] = [];

    const addCell = (cell: CellInput, stepId: string | null): { id: string; key: string | null; created: boolean } => {
      const stored = cell.key === undefined ? undefined : storedCells.get(cell.key);
      if (stored !== undefined) return { id: stored, key: cell.key ?? null, created: false };
      const row: TextCellsTable = {
        id: randomUUID(),
        run_id: runId,
        step_id: stepId,
        client_key: cell.key ?? null,
        position: position++,
        name: cell.name,
        // The validator fills in the default; a caller that skipped it gets the same.
        media_type: cell.mediaType ?? 'text/plain',
        text: cell.text,
        created_at: now,
      };
      newCells.push(row);
      return { id: row.id, key: row.client_key, created: true };
    };

    const stepReceipts = steps.map((step, i) => {
      const key = step.key ?? null;
      const stored = step.key === undefined ? undefined : byKey.get(step.key);
      if (stored) {
        // A stored step changes only from running to finished. Anything else repeats a post already
        // applied (a retry), so the step is skipped whole, inline cells included, keyed or not.
        if (stored.status !== 'running' || step.status === 'running')
          return { id: stored.id, key, created: false, updated: false, cells: [] };
        finishes.push({ id: stored.id, step });
        return { id: stored.id, key, created: false, updated: true, cells: (step.cells ?? []).map((cell) => addCell(cell, stored.id)) };
      }

      let parent: StoredStep | undefined;
      if (step.parentKey !== undefined) {
        parent = byKey.get(step.parentKey);
        if (!parent) throw invalid(`/body/steps/${i}/parentKey`, 'names no step of this run posted before it');
      } else if (step.parentId !== undefined) {
        parent = byId.get(step.parentId);
        if (!parent) throw invalid(`/body/steps/${i}/parentId`, 'names no step of this run');
      }
      const depth = (parent?.depth ?? 0) + 1;
      if (depth > STEP_DEPTH_MAX) throw invalid(`/body/steps/${i}`, `nests ${depth} levels deep; at most ${STEP_DEPTH_MAX}`);
      const row: StepsTable = {
        id: randomUUID(),
        run_id: runId,
        parent_id: parent?.id ?? null,
        depth,
        client_key: key,
        position: position++,
        title: step.title,
        status: step.status,
        started_at: normaliseTime(step.startedAt),
        duration_ms: step.durationMs ?? null,
        error_message: step.error ?? null,
        created_at: now,
      };
      newSteps.push(row);
      // Later steps of this post may nest under it by key.
      if (step.key !== undefined) byKey.set(step.key, { id: row.id, client_key: key, status: row.status, depth });
      return { id: row.id, key, created: true, updated: false, cells: (step.cells ?? []).map((cell) => addCell(cell, row.id)) };
    });

    const cellReceipts = cells.map((cell, i) => {
      let stepId: string | null = null;
      if (cell.stepKey !== undefined) {
        const step = byKey.get(cell.stepKey);
        if (!step) throw invalid(`/body/cells/${i}/stepKey`, 'names no step of this run');
        stepId = step.id;
      } else if (cell.stepId !== undefined) {
        const step = byId.get(cell.stepId);
        if (!step) throw invalid(`/body/cells/${i}/stepId`, 'names no step of this run');
        stepId = step.id;
      }
      return addCell(cell, stepId);
    });

    if (position > RUN_RESULT_ITEMS_MAX) {
      throw new AppError('UNPROCESSABLE', `The run would hold ${position} steps and cells; a run holds at most ${RUN_RESULT_ITEMS_MAX}.`);
    }
    // Steps first: cells and child steps reference them, and a parent precedes its children.
    await insertSteps(trx, newSteps);
    ctx.crashPoint('results-mid-transaction');
    await insertCells(trx, newCells);
    for (const { id, step } of finishes) {
      await finishStep(trx, id, {
        status: step.status,
        duration_ms: step.durationMs ?? null,
        error_message: step.error ?? null,
        ...(step.startedAt !== undefined ? { started_at: normaliseTime(step.startedAt) } : {}),
      });
    }
    const receipt = { steps: stepReceipts, cells: cellReceipts };
    if (key !== undefined && fingerprint !== undefined) {
      await insertResultPost(trx, { run_id: runId, idempotency_key: key, fingerprint, receipt: JSON.stringify(receipt), created_at: now });
    }
    return receipt;
  };
  return inTransaction(transaction ?? ctx.db, append);
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
export async function readResults(ctx: AppContext, runId: string, options: { partial: boolean }): Promise<RunResultsContent> {
  const run = found(await findRun(ctx.db, runId), 'The test run');
  if (run.status !== 'completed' && !options.partial) {
    throw new AppError(
      'RUN_NOT_COMPLETED',
      `The run is ${run.status}; its results are final once it is completed. Pass partial=true for what is stored so far.`,
    );
  }
  return { run, ...(await resultsOfRun(ctx.db, runId)) };
}
