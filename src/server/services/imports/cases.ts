import { randomUUID } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { TEXT_MAX } from '../../../api/common.ts';
import { RUN_RESULT_ITEMS_MAX, STEP_DEPTH_MAX, STEP_TITLE_MAX } from '../../../api/v1/results.ts';
import type { ImportedCase, ImportedCell, ImportedReport, ImportedStep } from '../../../import/model.ts';
import type { TaskHold } from '../../background.ts';
import type { ServiceContext } from '../../context.ts';
import { insertCells, insertSteps } from '../../db/repositories/results.ts';
import { insertRuns, newRunRow } from '../../db/repositories/runs.ts';
import { assertTaskHeld } from '../../db/repositories/tasks.ts';
import { inDeferredTransaction } from '../../db/repositories/transaction.ts';
import type { Executor, ImportsTable, StepsTable, TestRunsTable, TextCellsTable } from '../../db/types.ts';
import { sanitizeArtifactName } from '../../media/file-names.ts';
import { writeArtifact } from '../evidence/writer.ts';
import { fitsQuota, hasQuota } from '../operations/usage.ts';
import { onRunsCompleted } from '../records/run-completion.ts';
import { suitesOfCases } from '../tests/content.ts';
import { ensureTestsByFullName } from '../tests/tests.ts';
import {
  filesOf,
  type PendingAttachment,
  type Problems,
  releaseAttachments,
  type StoredAttachment,
  storeAttachments,
} from './attachments.ts';

// Turns imported cases into rows (IMP-1, IMP-2): one completed run per case, its step tree,
// cells and artifacts, written a batch of cases per transaction after their blobs are durable.

/** What every run of an import shares. */
export interface ImportTarget {
  importId: string;
  projectId: string;
  jobId: string;
  actorId: string | null;
  now: string;
  /** Labels the import was given (they win over a report's own properties), and its CI build's link. */
  labels: { environment?: string; branch?: string; build?: string; commit?: string };
  ciUrl: string | null;
  testIds: Map<string, string>;
  /** The current version of each of those tests, by test id (TCM-3). */
  testVersions: Map<string, number>;
}

/** One case, where it came from, and its place in the import (its run's idempotency key). */
export interface PlacedCase {
  report: ImportedReport;
  testCase: ImportedCase;
  index: number;
}

export interface BatchOutcome {
  steps: number;
  cells: number;
  attachments: number;
  /** Per report file: what could not be stored (attachments, items past a run's limit), and why. */
  problems: Problems;
  /** Attachments among them. */
  attachmentsMissing: number;
}

/** Text as a column holds it: no NUL (PostgreSQL refuses it), at most `max` characters. */
function clean(text: string, max = TEXT_MAX): string {
  const plain = text.includes('\0') ? text.replaceAll('\0', '') : text;
  return plain.length > max ? `${plain.slice(0, max - 20)}… (truncated)` : plain;
}

/** A time a report gave, as stored (ISO 8601 in UTC), or undefined when it is none. */
function storedTime(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const time = Date.parse(value);
  return Number.isFinite(time) && Math.abs(time) < 8.64e15 ? new Date(time).toISOString() : undefined;
}

/** A duration as the results contract takes it: whole milliseconds, 0 to 2^31 − 1. */
function storedDuration(value: number | undefined): number | undefined {
  if (value === undefined || !Number.isFinite(value)) return undefined;
  return Math.min(2_147_483_647, Math.max(0, Math.round(value)));
}

const LABEL_FIELDS = ['environment', 'branch', 'build', 'commit'] as const;

/** The case's run labels: the import's own, else the report's properties of those names. */
function runLabels(target: ImportTarget, testCase: ImportedCase): Record<(typeof LABEL_FIELDS)[number], string | null> {
  const pick = (field: (typeof LABEL_FIELDS)[number]) => {
    const value = target.labels[field] ?? testCase.labels[field];
    return value === undefined || value === '' ? null : clean(value, 256);
  };
  return { environment: pick('environment'), branch: pick('branch'), build: pick('build'), commit: pick('commit') };
}

/** Properties that are not run labels, as one `labels` cell of `name: value` lines. */
function labelsCell(testCase: ImportedCase): ImportedCell[] {
  const rest = Object.entries(testCase.labels).filter(([name]) => !(LABEL_FIELDS as readonly string[]).includes(name));
  return rest.length === 0 ? [] : [{ name: 'labels', text: rest.map(([name, value]) => `${name}: ${value}`).join('\n') }];
}

interface Sink {
  steps: StepsTable[];
  cells: TextCellsTable[];
  attachments: PendingAttachment[];
  problems: Problems;
}

/** One case's walk: where its rows go, and how many more steps and cells its run holds. */
interface CaseWalk {
  target: ImportTarget;
  placed: PlacedCase;
  sink: Sink;
  runId: string;
  position: number;
  /** A run holds at most RUN_RESULT_ITEMS_MAX steps and cells, as through the results API. */
  room: number;
  byId: Map<string, StepsTable>;
}

/** Takes room for one more step or cell; past the run's limit the rest is left out, and said once. */
function take(walk: CaseWalk): boolean {
  walk.room--;
  if (walk.room === -1) {
    const { testCase, report } = walk.placed;
    const message = `"${testCase.name}": more steps and cells than a run holds (${RUN_RESULT_ITEMS_MAX}); the rest left out`;
    walk.sink.problems.push({ file: report.file, message });
  }
  return walk.room >= 0;
}

function addCell(walk: CaseWalk, cell: ImportedCell, stepId: string | null): void {
  if (cell.text === '' || !take(walk)) return;
  walk.sink.cells.push({
    id: randomUUID(),
    run_id: walk.runId,
    step_id: stepId,
    client_key: null,
    position: walk.position++,
    name: clean(cell.name, 256) || 'text',
    media_type: cell.mediaType ?? 'text/plain',
    text: clean(cell.text),
    created_at: walk.target.now,
  });
}

/** A step, then its cells, attachments and children, depth first. */
function addStep(walk: CaseWalk, step: ImportedStep, parent: StepsTable | undefined): void {
  if (!take(walk)) return;
  // Deeper than the results contract allows: kept, beside its parent (under the deepest step it may hang from).
  const under = parent && parent.depth >= STEP_DEPTH_MAX ? walk.byId.get(parent.parent_id ?? '') : parent;
  const row: StepsTable = {
    id: randomUUID(),
    run_id: walk.runId,
    parent_id: under?.id ?? null,
    depth: (under?.depth ?? 0) + 1,
    client_key: null,
    position: walk.position++,
    title: clean(step.title, STEP_TITLE_MAX) || '(untitled step)',
    status: step.status,
    started_at: storedTime(step.startedAt) ?? null,
    duration_ms: storedDuration(step.durationMs) ?? null,
    error_message: step.error === undefined ? null : clean(step.error),
    created_at: walk.target.now,
    failure_group_id: null, // set once the batch's failures are recorded
  };
  walk.sink.steps.push(row);
  walk.byId.set(row.id, row);
  for (const cell of step.cells) addCell(walk, cell, row.id);
  const file = walk.placed.report.file;
  for (const attachment of step.attachments) walk.sink.attachments.push({ attachment, stepId: row.id, runId: walk.runId, file });
  for (const child of step.steps) addStep(walk, child, row);
}

/** The run row of one case. */
function runRow(target: ImportTarget, placed: PlacedCase, runId: string): TestRunsTable {
  const { testCase, report } = placed;
  const started = storedTime(testCase.startedAt) ?? storedTime(report.startedAt) ?? target.now;
  const finishedAt = Date.parse(started) + (storedDuration(testCase.durationMs) ?? 0);
  const finished = new Date(Math.min(finishedAt, 8.64e15)).toISOString();
  const labels = runLabels(target, testCase);
  const testId = target.testIds.get(testCase.fullName) ?? null;
  return newRunRow({
    id: runId,
    project_id: target.projectId,
    test_id: testId,
    job_id: target.jobId,
    name: clean(testCase.name, 256) || '(unnamed)',
    status: 'completed',
    verdict: testCase.verdict,
    environment: labels.environment,
    branch: labels.branch,
    build: labels.build,
    commit_sha: labels.commit,
    created_at: target.now,
    started_at: started,
    finished_at: finished,
    created_by: target.actorId,
    idempotency_key: `import:${target.importId}:${placed.index}`,
    ci_url: target.ciUrl,
    attempt: testCase.attempt,
    test_version: testId === null ? null : (target.testVersions.get(testId) ?? 1),
  });
}

/** Rows of one case: the run, its steps depth first (each followed by its cells), then run-level cells. */
function caseRows(target: ImportTarget, placed: PlacedCase, sink: Sink): TestRunsTable {
  const { testCase, report } = placed;
  const runId = randomUUID();
  const walk: CaseWalk = { target, placed, sink, runId, position: 0, room: RUN_RESULT_ITEMS_MAX, byId: new Map() };
  for (const step of testCase.steps) addStep(walk, step, undefined);
  for (const cell of [...testCase.cells, ...labelsCell(testCase)]) addCell(walk, cell, null);
  for (const attachment of testCase.attachments) sink.attachments.push({ attachment, stepId: null, runId, file: report.file });
  return runRow(target, placed, runId);
}

/** The artifact rows of the stored attachments, within the batch's transaction; answers how many were written. */
async function writeAttachmentRows(
  trx: Executor,
  target: ImportTarget,
  stored: readonly StoredAttachment[],
  problems: Problems,
): Promise<number> {
  // Past the project's quota (RET-5) an attachment is left out, and said so; the run stays.
  // A project without a quota costs one lookup per batch, not one per attachment.
  const capped = stored.length > 0 && (await hasQuota(trx, target.projectId));
  let written = 0;
  for (const attachment of stored) {
    const { pending, content, images } = attachment;
    if (capped && !(await fitsQuota(trx, target.projectId, filesOf(attachment)))) {
      problems.push({
        file: pending.file,
        message: `attachment "${pending.attachment.name}" was left out: the project's quota is reached`,
      });
      continue;
    }
    await writeArtifact(trx, {
      projectId: target.projectId,
      runId: pending.runId,
      stepId: pending.stepId,
      kind: pending.attachment.kind,
      name: sanitizeArtifactName(pending.attachment.name) || 'attachment',
      idempotencyKey: null,
      createdAt: target.now,
      createdBy: target.actorId,
      content,
      images,
    });
    written++;
  }
  return written;
}

/**
 * Writes a batch of cases: attachment blobs first (durable before any row names them), then one
 * transaction for the runs, steps, cells, images and artifacts, while `lease` is still held, which
 * ends with `noted` given what the batch wrote (the import's progress, in the same commit). The
 * commit does not wait for PostgreSQL's log flush: nothing of an import is acknowledged before
 * the commit that completes it, which waits for it (inDeferredTransaction).
 */
export async function writeCases(
  ctx: ServiceContext,
  target: ImportTarget,
  batch: readonly PlacedCase[],
  files: ReadonlyMap<string, Uint8Array>,
  lease: TaskHold,
  noted: (trx: Executor, outcome: BatchOutcome) => Promise<unknown>,
  incidents: 'now' | 'when-the-job-ends',
): Promise<BatchOutcome> {
  const sink: Sink = { steps: [], cells: [], attachments: [], problems: [] };
  const runs = batch.map((placed) => caseRows(target, placed, sink));
  const { stored, expanded } = await storeAttachments(ctx, sink.attachments, files, sink.problems);
  try {
    return await inDeferredTransaction(ctx.db, async (trx) => {
      await assertTaskHeld(trx, lease, `import ${target.importId}`);
      await insertRuns(trx, runs);
      await insertSteps(trx, sink.steps);
      await insertCells(trx, sink.cells);
      const written = await writeAttachmentRows(trx, target, stored, sink.problems);
      // The runs' failures are found in the rows just written, not read back. The import announces
      // itself once, when it ends; its job's outage guard is looked at when `incidents` says so,
      // and when it ends (write.ts).
      await onRunsCompleted(ctx, trx, runs, { webhooks: false, written: { steps: sink.steps, cells: sink.cells }, incidents });
      const outcome: BatchOutcome = {
        steps: sink.steps.length,
        cells: sink.cells.length,
        attachments: written,
        problems: sink.problems,
        attachmentsMissing: sink.attachments.length + expanded - written,
      };
      await noted(trx, outcome);
      return outcome;
    });
  } finally {
    releaseAttachments(stored);
  }
}

/**
 * Tests found or created per transaction: on SQLite a hundred (all at once held its event loop for
 * 300 ms); on PostgreSQL, where the statements run in the database's process, a thousand (an IN
 * list's size), so a 5,000-case import looks its tests up in 5 round trips rather than 50.
 */
const TESTS_PER_TRANSACTION = { sqlite: 100, postgres: 1000 } as const;

/** The project's tests of the cases (new ones filed in the report's suites, TCM-6), found or created TESTS_PER_TRANSACTION names at a time. */
export async function ensureTests(
  ctx: ServiceContext,
  row: ImportsTable,
  placed: readonly PlacedCase[],
  now: string,
): Promise<{ ids: Map<string, string>; versions: Map<string, number>; created: number }> {
  const suites = suitesOfCases(placed.map((p) => p.testCase));
  const names = [...suites.keys()];
  const ids = new Map<string, string>();
  const versions = new Map<string, number>();
  let created = 0;
  const size = TESTS_PER_TRANSACTION[ctx.dialect];
  for (let at = 0; at < names.length; at += size) {
    if (at > 0) await nextTurn();
    const fullNames = names.slice(at, at + size);
    const found = await ensureTestsByFullName(ctx.db, { projectId: row.project_id, fullNames, actorId: row.created_by, now, suites });
    for (const [name, id] of found.ids) ids.set(name, id);
    for (const [id, version] of found.versions) versions.set(id, version);
    created += found.created;
  }
  return { ids, versions, created };
}
