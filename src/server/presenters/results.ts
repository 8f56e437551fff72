import type { Static } from 'typebox';
import type { AppendResultsReply, ResultStep, RunResults, TextCell } from '../../api/v1/results.ts';
import type { StepsTable, TextCellsTable } from '../db/types.ts';
import type { AppendedItem, AppendedResults, RunResultsContent } from '../services/records/results.ts';

export function presentTextCell(row: TextCellsTable): Static<typeof TextCell> {
  return {
    id: row.id,
    key: row.client_key,
    name: row.name,
    mediaType: row.media_type as Static<typeof TextCell>['mediaType'],
    text: row.text,
  };
}

function presentStep(row: StepsTable, cells: Static<typeof TextCell>[]): Static<typeof ResultStep> {
  return {
    id: row.id,
    key: row.client_key,
    parentId: row.parent_id,
    title: row.title,
    status: row.status,
    startedAt: row.started_at,
    durationMs: row.duration_ms,
    error: row.error_message,
    failureGroupId: row.failure_group_id,
    cells,
  };
}

/** Documented endpoint 2: run-level cells, then every step with its own cells, each list in position order. */
export function presentRunResults({ run, steps, cells }: RunResultsContent): Static<typeof RunResults> {
  const runCells: Static<typeof TextCell>[] = [];
  const stepCells = new Map<string, Static<typeof TextCell>[]>();
  for (const cell of cells) {
    if (cell.step_id === null) runCells.push(presentTextCell(cell));
    else {
      const list = stepCells.get(cell.step_id) ?? [];
      if (list.length === 0) stepCells.set(cell.step_id, list);
      list.push(presentTextCell(cell));
    }
  }
  return {
    testRunId: run.id,
    status: run.status,
    verdict: run.verdict,
    failureGroupId: run.failure_group_id,
    cells: runCells,
    steps: steps.map((step) => presentStep(step, stepCells.get(step.id) ?? [])),
  };
}

type AppendedReply = Static<typeof AppendResultsReply>;

function presentAppendedItem(item: AppendedItem): AppendedReply['cells'][number] {
  return { id: item.id, key: item.key, created: item.created };
}

/** The answer to a results post: what became of each posted step and cell, in the order posted. */
export function presentAppendedResults({ steps, cells }: AppendedResults): AppendedReply {
  return {
    steps: steps.map((step) => ({ ...presentAppendedItem(step), updated: step.updated, cells: step.cells.map(presentAppendedItem) })),
    cells: cells.map(presentAppendedItem),
  };
}
