import type { ServiceContext } from '../../context.ts';
import { deleteQuarantine } from '../../db/repositories/health.ts';
import { healthStatesOfTests, lifecyclesOfTests, quarantinesOfTests, upsertLifecycle } from '../../db/repositories/lifecycle.ts';
import { findTest } from '../../db/repositories/tests.ts';
import type { Executor, ProjectsTable, TestLifecyclesTable, TestQuarantinesTable, TestRunsTable } from '../../db/types.ts';
import { audit } from '../access/audit.ts';
import { AUTOMATIC_OWNER, inForce, lifecycleStateOf, queueTransitions, type Transition } from './lifecycle-events.ts';
import { putQuarantine } from './quarantine-lifecycle.ts';
import { triageSettingsOf } from './settings.ts';

// What completed runs do to the quarantine lifecycle (TRIAGE-13, docs/triage.md), in the
// transaction that completes them, after their tests' health is kept (refreshHealth): they count
// for pending fix attempts, and with `autoQuarantine` a failure of a test now flaky quarantines it.

/** How long an automatic quarantine lasts: the default of one set by hand (TRIAGE-6). */
const AUTOMATIC_DAYS = 14;
const DAY_MS = 86_400_000;

const failing = (run: Pick<TestRunsTable, 'verdict'>) => run.verdict === 'failed' || run.verdict === 'broken';
const counts = (run: Pick<TestRunsTable, 'verdict' | 'status'>) => run.status === 'completed' && (run.verdict === 'passed' || failing(run));

/**
 * A pending attempt's runs among these, in the order they were made: completed, passed, failed or
 * broken (a skipped run says nothing of the fix), made at or after the attempt started, on its
 * branch when it names one.
 */
function runsOfAttempt(row: TestLifecyclesTable, runs: readonly TestRunsTable[]): TestRunsTable[] {
  const started = row.attempt_started_at ?? '';
  return runs
    .filter((run) => run.test_id === row.test_id && counts(run) && run.created_at >= started)
    .filter((run) => row.attempt_branch === null || run.branch === row.attempt_branch)
    .sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.attempt - b.attempt || (a.id < b.id ? -1 : 1)));
}

/**
 * A pending fix attempt after these runs of it, in order: ended by the first failure, fixed once
 * it has passed as often as required, else still pending with its passes counted.
 */
function judgeAttempt(
  row: TestLifecyclesTable,
  ours: readonly TestRunsTable[],
  now: string,
): { next: TestLifecyclesTable; outcome: { type: 'test.fixed' | 'test.quarantined'; runId: string } | undefined } {
  const required = row.attempt_required ?? 1;
  let next: TestLifecyclesTable = { ...row, updated_at: now };
  for (const run of ours) {
    if (failing(run)) {
      next = { ...next, state: 'ended', attempt_ended_at: now, attempt_failed_run_id: run.id };
      return { next, outcome: { type: 'test.quarantined', runId: run.id } };
    }
    next = { ...next, attempt_passes: next.attempt_passes + 1 };
    if (next.attempt_passes >= required) {
      next = { ...next, state: 'fixed', attempt_ended_at: now };
      return { next, outcome: { type: 'test.fixed', runId: run.id } };
    }
  }
  return { next, outcome: undefined };
}

/**
 * Advances the pending fix attempts of these runs' tests, then quarantines the flaky ones that
 * failed when their project asks for it; each transition audited and announced. True when any
 * webhook delivery was queued (the caller wakes the runners after its commit).
 */
export async function advanceLifecycles(
  ctx: ServiceContext,
  trx: Executor,
  runs: readonly TestRunsTable[],
  projects: ReadonlyMap<string, Pick<ProjectsTable, 'triage_settings'>>,
): Promise<boolean> {
  const tested = runs.filter((run) => run.test_id !== null && counts(run));
  if (tested.length === 0) return false;
  const now = ctx.clock().toISOString();
  const testIds = [...new Set(tested.map((run) => run.test_id as string))];
  // Locked (PostgreSQL) in test id order: two transactions counting runs of one attempt take turns.
  const rows = await lifecyclesOfTests(trx, testIds, { lock: true });
  const transitions: Transition[] = [];
  const decided = new Set<string>();

  for (const row of rows.values()) {
    if (row.state !== 'fix-pending') continue;
    const ours = runsOfAttempt(row, tested);
    if (ours.length === 0) continue;
    const required = row.attempt_required ?? 1;
    const { next, outcome } = judgeAttempt(row, ours, now);
    await upsertLifecycle(trx, next);
    if (!outcome) continue;
    decided.add(row.test_id);
    const test = await findTest(trx, row.test_id);
    if (!test) continue;
    const quarantine = (await quarantinesOfTests(trx, [row.test_id])).get(row.test_id);
    if (outcome.type === 'test.fixed') await deleteQuarantine(trx, row.test_id);
    await audit(ctx, trx, {
      actorUserId: null,
      action: outcome.type === 'test.fixed' ? 'test.fixed' : 'test.fix-failed',
      targetType: 'test',
      targetId: row.test_id,
      details: { runId: outcome.runId, passes: next.attempt_passes, required, branch: next.attempt_branch },
    });
    transitions.push({
      type: outcome.type,
      test,
      previousState: 'fix-pending',
      row: next,
      quarantine,
      runId: outcome.runId,
      actorUserId: null,
    });
  }

  const queued = await queueTransitions(ctx, trx, transitions);
  const automatic = await quarantineFlakyFailures(ctx, trx, tested, rows, decided, projects);
  return queued || automatic;
}

/**
 * `autoQuarantine`: a test of such a project that failed in these runs and whose health is now
 * flaky (never broken: a test failing every time is broken, not flaky) is quarantined, owner
 * `attest`, for 14 days, unless a quarantine is in force, a fix attempt was just decided, or it is
 * disabled. Audited as `test.quarantine` (no actor, `automatic: true`).
 */
async function quarantineFlakyFailures(
  ctx: ServiceContext,
  trx: Executor,
  runs: readonly TestRunsTable[],
  rows: ReadonlyMap<string, TestLifecyclesTable>,
  decided: ReadonlySet<string>,
  projects: ReadonlyMap<string, Pick<ProjectsTable, 'triage_settings'>>,
): Promise<boolean> {
  const auto = (projectId: string) => triageSettingsOf(projects.get(projectId) ?? { triage_settings: null }).autoQuarantine;
  const candidates = [
    ...new Set(
      runs.filter((run) => failing(run) && auto(run.project_id) && !decided.has(run.test_id as string)).map((run) => run.test_id as string),
    ),
  ];
  if (candidates.length === 0) return false;
  const now = ctx.clock();
  const nowText = now.toISOString();
  const health = await healthStatesOfTests(trx, candidates);
  const flaky = candidates.filter((testId) => health.get(testId)?.state === 'flaky');
  if (flaky.length === 0) return false;
  const quarantines = await quarantinesOfTests(trx, flaky);
  let queued = false;
  for (const testId of flaky.sort()) {
    const state = lifecycleStateOf(rows.get(testId), quarantines.get(testId), nowText);
    if (state === 'disabled' || state === 'fix-pending' || inForce(quarantines.get(testId), nowText)) continue;
    const test = await findTest(trx, testId);
    if (!test) continue;
    const score = health.get(testId)?.flaky_score ?? 0;
    const quarantine: TestQuarantinesTable = {
      test_id: testId,
      project_id: test.project_id,
      owner: AUTOMATIC_OWNER,
      reason: `Flaky (score ${score}): quarantined automatically when it failed`,
      expires_at: new Date(now.getTime() + AUTOMATIC_DAYS * DAY_MS).toISOString(),
      created_at: nowText,
      created_by: null,
    };
    queued = (await putQuarantine(ctx, trx, test, quarantine, null)) || queued;
    await audit(ctx, trx, {
      actorUserId: null,
      action: 'test.quarantine',
      targetType: 'test',
      targetId: testId,
      details: { owner: quarantine.owner, reason: quarantine.reason, expiresAt: quarantine.expires_at, automatic: true },
    });
  }
  return queued;
}
