import type { ServiceContext } from '../../context.ts';
import { deleteQuarantine, findQuarantine, upsertQuarantine } from '../../db/repositories/health.ts';
import { deleteLifecycle, lifecyclesOfTests, upsertLifecycle } from '../../db/repositories/lifecycle.ts';
import { findProject } from '../../db/repositories/projects.ts';
import { findTest } from '../../db/repositories/tests.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { Executor, TestLifecyclesTable, TestQuarantinesTable, TestsTable } from '../../db/types.ts';
import { AppError, found } from '../../errors.ts';
import { type AuditAction, auditBy } from '../access/audit.ts';
import type { Actor } from '../actor.ts';
import { deliverSoon } from '../webhooks/outbox.ts';
import { defaultBranchNameOf } from './default-branch.ts';
import {
  type LifecycleStateName,
  type LifecycleView,
  lifecycleStateOf,
  lifecycleView,
  queueTransitions,
  type Transition,
} from './lifecycle-events.ts';
import { triageSettingsOf } from './settings.ts';

// The quarantine lifecycle of a test (TRIAGE-13, docs/triage.md): the transitions made by hand
// (a fix attempt, disable, enable) and what a quarantine set or released does to it. The runs that
// verify a fix attempt are counted as they complete (fix-verification.ts).

/** A test's lifecycle row and quarantine, the row locked on PostgreSQL for the caller's transaction. */
async function standing(trx: Executor, testId: string) {
  const row = (await lifecyclesOfTests(trx, [testId], { lock: true })).get(testId);
  return { row, quarantine: await findQuarantine(trx, testId) };
}

const conflict = (state: string, wanted: string) => new AppError('STATE_CONFLICT', `The test is ${state}: ${wanted}.`);

/** The test's standing a transition by hand starts from, its row locked for the transaction. */
interface Standing {
  row: TestLifecyclesTable | undefined;
  quarantine: TestQuarantinesTable | undefined;
  previousState: LifecycleStateName;
  now: string;
}

/** What a transition by hand makes: its event, the lifecycle row it writes, and its audit entry. */
interface HandTransition extends Pick<Transition, 'type' | 'reason'> {
  next: TestLifecyclesTable;
  action: AuditAction;
  details?: Record<string, unknown>;
}

/**
 * Runs a transition by hand in one transaction: checked against the test's standing by `change`,
 * written, audited and announced; answers the test's lifecycle after it.
 */
async function transition(
  ctx: ServiceContext,
  testId: string,
  actor: Actor,
  change: (trx: Executor, test: TestsTable, before: Standing) => Promise<HandTransition>,
): Promise<LifecycleView> {
  const test = found(await findTest(ctx.db, testId), 'The test');
  let view: LifecycleView | undefined;
  const queued = await inTransaction(ctx.db, async (trx) => {
    const now = ctx.clock().toISOString();
    const { row, quarantine } = await standing(trx, testId);
    const previousState = lifecycleStateOf(row, quarantine, now);
    const { next, action, details, ...event } = await change(trx, test, { row, quarantine, previousState, now });
    await upsertLifecycle(trx, next);
    await auditBy(ctx, trx, actor, { action, targetType: 'test', targetId: testId, details });
    view = lifecycleView(next, quarantine, now);
    return queueTransitions(ctx, trx, [{ ...event, test, previousState, row: next, quarantine, actorUserId: actor.userId }]);
  });
  if (queued) deliverSoon(ctx);
  return view as LifecycleView;
}

const emptyRow = (test: Pick<TestsTable, 'id' | 'project_id'>, now: string): TestLifecyclesTable => ({
  test_id: test.id,
  project_id: test.project_id,
  state: 'ended',
  attempt_started_at: null,
  attempt_started_by: null,
  attempt_commit: null,
  attempt_note: null,
  attempt_branch: null,
  attempt_required: null,
  attempt_passes: 0,
  attempt_ended_at: null,
  attempt_failed_run_id: null,
  disabled_at: null,
  disabled_by: null,
  disabled_reason: null,
  updated_at: now,
});

/** `POST /testmgmt/tests/{testId}/fix-attempt`: a quarantined test becomes `fix-pending`; any other state is a 409. */
export function startFixAttempt(
  ctx: ServiceContext,
  testId: string,
  input: { commit?: string; note?: string; branch?: string },
  actor: Actor,
): Promise<LifecycleView> {
  return transition(ctx, testId, actor, async (trx, test, { previousState, now }) => {
    if (previousState !== 'quarantined') throw conflict(previousState, 'only a quarantined test takes a fix attempt');
    const { fixPasses } = triageSettingsOf((await findProject(trx, test.project_id)) ?? { triage_settings: null });
    const next: TestLifecyclesTable = {
      ...emptyRow(test, now),
      state: 'fix-pending',
      attempt_started_at: now,
      attempt_started_by: actor.userId,
      attempt_commit: input.commit ?? null,
      attempt_note: input.note ?? null,
      attempt_branch: input.branch ?? (await defaultBranchNameOf(ctx, test.project_id, trx)),
      attempt_required: fixPasses,
    };
    const details = { commit: next.attempt_commit, note: next.attempt_note, branch: next.attempt_branch, required: fixPasses };
    return { type: 'test.fix_pending', next, action: 'test.fix-attempt', details };
  });
}

/** `POST …/disable`: ends a pending fix attempt; its quarantine stays. A disabled test is a 409. */
export function disableTest(ctx: ServiceContext, testId: string, input: { reason: string }, actor: Actor): Promise<LifecycleView> {
  return transition(ctx, testId, actor, async (_trx, test, { row, previousState, now }) => {
    if (previousState === 'disabled') throw conflict(previousState, 'it is disabled already');
    const base = row ?? emptyRow(test, now);
    const next: TestLifecyclesTable = {
      ...base,
      state: 'disabled',
      attempt_ended_at: base.attempt_started_at !== null && base.attempt_ended_at === null ? now : base.attempt_ended_at,
      disabled_at: now,
      disabled_by: actor.userId,
      disabled_reason: input.reason,
      updated_at: now,
    };
    return { type: 'test.disabled', next, action: 'test.disable', details: { reason: input.reason, previousState }, reason: input.reason };
  });
}

/** `POST …/enable`: a disabled test returns to what its quarantine makes it; any other state is a 409. */
export function enableTest(ctx: ServiceContext, testId: string, actor: Actor): Promise<LifecycleView> {
  return transition(ctx, testId, actor, async (_trx, _test, { row, previousState, now }) => {
    if (previousState !== 'disabled' || row === undefined) throw conflict(previousState, 'only a disabled test is enabled');
    const fixed =
      row.attempt_started_at !== null && row.attempt_failed_run_id === null && row.attempt_passes >= (row.attempt_required ?? 1);
    const next: TestLifecyclesTable = {
      ...row,
      state: fixed ? 'fixed' : 'ended',
      disabled_at: null,
      disabled_by: null,
      disabled_reason: null,
      updated_at: now,
    };
    return { type: 'test.enabled', next, action: 'test.enable' };
  });
}

/**
 * Writes a quarantine (a new one or a renewal, by hand or automatic) inside the caller's
 * transaction: a test that was `fixed` starts over (its verified attempt is history), and a
 * quarantine that was not in force is announced as `test.quarantined` (a renewal is no transition).
 */
export async function putQuarantine(
  ctx: ServiceContext,
  trx: Executor,
  test: Pick<TestsTable, 'id' | 'project_id' | 'name'>,
  quarantine: TestQuarantinesTable,
  actorUserId: string | null,
): Promise<boolean> {
  const now = ctx.clock().toISOString();
  const { row, quarantine: before } = await standing(trx, test.id);
  const previousState = lifecycleStateOf(row, before, now);
  await upsertQuarantine(trx, quarantine);
  let after = row;
  if (row?.state === 'fixed') {
    await deleteLifecycle(trx, test.id);
    after = undefined;
  }
  if (previousState === 'quarantined' || previousState === 'fix-pending' || previousState === 'disabled') return false;
  return queueTransitions(ctx, trx, [{ type: 'test.quarantined', test, previousState, row: after, quarantine, actorUserId }]);
}

/**
 * Releases a test's quarantine inside the caller's transaction: a pending fix attempt is cancelled
 * (a disabled test stays disabled). False when it had none; else the release is announced as
 * `test.unquarantined`, and `queued` says whether a delivery was queued.
 */
export async function dropQuarantine(
  ctx: ServiceContext,
  trx: Executor,
  test: Pick<TestsTable, 'id' | 'project_id' | 'name'>,
  actorUserId: string | null,
): Promise<{ released: boolean; queued: boolean }> {
  const now = ctx.clock().toISOString();
  const { row, quarantine } = await standing(trx, test.id);
  if (!(await deleteQuarantine(trx, test.id))) return { released: false, queued: false };
  const previousState = lifecycleStateOf(row, quarantine, now);
  let after = row;
  if (row?.state === 'fix-pending') {
    after = { ...row, state: 'ended', attempt_ended_at: now, updated_at: now };
    await upsertLifecycle(trx, after);
  }
  const queued = await queueTransitions(ctx, trx, [
    { type: 'test.unquarantined', test, previousState, row: after, quarantine, actorUserId },
  ]);
  return { released: true, queued };
}
