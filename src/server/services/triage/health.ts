import type { ServiceContext } from '../../context.ts';
import { healthOfTests, type QuarantineRow, quarantinesOfProject, upsertTestHealth } from '../../db/repositories/health.ts';
import { lifecyclesOfTests } from '../../db/repositories/lifecycle.ts';
import { healthRunsOfTests } from '../../db/repositories/outcomes.ts';
import { findProject } from '../../db/repositories/projects.ts';
import { findTest } from '../../db/repositories/tests.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { Executor, ProjectsTable, TestHealthTable, TestQuarantinesTable, TestRunsTable, TestsTable } from '../../db/types.ts';
import { found, invalid } from '../../errors.ts';
import { auditBy } from '../access/audit.ts';
import type { Actor } from '../access/users.ts';
import { deliverSoon } from '../webhooks/outbox.ts';
import { defaultBranchNameOf, defaultBranchOfRow } from './default-branch.ts';
import { type LifecycleStateName, type LifecycleView, lifecycleStateOf, lifecycleView } from './lifecycle-events.ts';
import { failingStreakOf, type MonitorEvidence, type MonitorName, type MonitorSettings, runMonitors } from './monitors.ts';
import { healthOutcomes, type TestOutcome } from './outcomes.ts';
import { dropQuarantine, putQuarantine } from './quarantine-lifecycle.ts';
import { type TriageSettings, triageSettingsOf } from './settings.ts';

// A test's health (TRIAGE-6, docs/triage.md): stable, flaky or broken over its latest outcomes,
// kept in test_health as its runs complete; and its quarantine.

/** The health thresholds of a project: the monitors' (TRIAGE-11) and the score's window. */
export type HealthSettings = MonitorSettings & Pick<TriageSettings, 'healthWindow'>;

/** The health thresholds of a project, the defaults where it has none (the project may be gone meanwhile). */
function healthSettingsOf(row: Pick<ProjectsTable, 'triage_settings'> | undefined): HealthSettings {
  return triageSettingsOf(row ?? { triage_settings: null });
}

export interface HealthScore {
  state: TestHealthTable['state'];
  flakyScore: number;
  runsConsidered: number;
  failingStreak: number;
  /** The monitor that decided the state, and what it saw (TRIAGE-11); null when stable. */
  monitor: MonitorName | null;
  evidence: MonitorEvidence | null;
}

type Side = 'pass' | 'fail';
const sideOf = (verdict: TestOutcome['verdict']): Side | undefined =>
  verdict === 'passed' || verdict === 'flaky' ? 'pass' : verdict === 'failed' || verdict === 'broken' ? 'fail' : undefined;

/** The most outcomes any part of health reads. */
export const widestWindow = (settings: HealthSettings) => Math.max(settings.healthWindow, settings.retryWindow, settings.rateWindow);

/**
 * The health of a test from its outcomes on one branch, newest first (docs/triage.md). Only outcomes
 * that passed, failed, broke or were flaky count (a skipped or unfinished one says nothing about the
 * test), the newest of them up to the widest window. The state is the monitors' (TRIAGE-11); the
 * score orders tests by flakiness. A broken test scores 0: it fails every time, which is not flakiness.
 */
export function scoreHealth(
  outcomes: readonly Pick<TestOutcome, 'verdict' | 'branch' | 'commit' | 'runId' | 'jobId'>[],
  settings: HealthSettings,
): HealthScore {
  const considered = outcomes.filter((outcome) => sideOf(outcome.verdict) !== undefined).slice(0, widestWindow(settings));
  const failingStreak = failingStreakOf(considered);
  const runsConsidered = considered.length;
  const { state, monitor, evidence } = runMonitors(considered, settings);
  if (state === 'broken') return { state, flakyScore: 0, runsConsidered, failingStreak, monitor, evidence };
  const flakyScore = scoreOf(considered, settings.brokenAfter);
  return { state, flakyScore, runsConsidered, failingStreak, monitor, evidence };
}

/**
 * The flaky score (TRIAGE-6): (flaky outcomes + pass↔fail flips within a branch + commits with both
 * verdicts) / outcomes, capped at 1, 3 decimals; flips into or out of a break are not counted.
 */
function scoreOf(considered: readonly Pick<TestOutcome, 'verdict' | 'branch' | 'commit'>[], brokenAfter: number): number {
  if (considered.length < 2) return 0;
  let flaky = 0;
  // Oldest to newest: each branch's outcomes as runs of one side (null is a branch of its own), and each commit's sides.
  const runsOfBranch = new Map<string | null, { side: Side; length: number }[]>();
  const sidesOfCommit = new Map<string, Set<Side>>();
  for (let i = considered.length - 1; i >= 0; i--) {
    const outcome = considered[i] as (typeof considered)[number];
    const side = sideOf(outcome.verdict) as Side;
    if (outcome.verdict === 'flaky') flaky++;
    const runs = runsOfBranch.get(outcome.branch) ?? [];
    const last = runs[runs.length - 1];
    if (last?.side === side) last.length++;
    else runs.push({ side, length: 1 });
    runsOfBranch.set(outcome.branch, runs);
    if (outcome.commit !== null) {
      const sides = sidesOfCommit.get(outcome.commit) ?? new Set<Side>();
      sides.add(side);
      sidesOfCommit.set(outcome.commit, sides);
    }
  }
  // A flip is a boundary between two runs of one branch; one into or out of a failing run long
  // enough to be broken is a break and its fix, not flakiness.
  const breaks = (run: { side: Side; length: number }) => run.side === 'fail' && run.length >= brokenAfter;
  let flips = 0;
  for (const runs of runsOfBranch.values()) {
    for (let i = 1; i < runs.length; i++)
      if (!breaks(runs[i - 1] as (typeof runs)[number]) && !breaks(runs[i] as (typeof runs)[number])) flips++;
  }
  const splitCommits = [...sidesOfCommit.values()].filter((sides) => sides.size > 1).length;
  return Math.min(1, Math.round(((flaky + flips + splitCommits) / considered.length) * 1000) / 1000);
}

/**
 * Recomputes the health of the tests of runs just completed, inside their transaction: one read of
 * the tests' latest runs and one write for the whole batch, whatever its size (an import's batch
 * completes hundreds of runs of distinct tests).
 */
export async function refreshHealth(
  ctx: ServiceContext,
  trx: Executor,
  runs: readonly Pick<TestRunsTable, 'test_id' | 'project_id'>[],
  projects: ReadonlyMap<string, Pick<ProjectsTable, 'id' | 'triage_settings' | 'default_branch'>>,
): Promise<void> {
  const projectOfTest = new Map<string, string>();
  for (const run of runs) if (run.test_id !== null) projectOfTest.set(run.test_id, run.project_id);
  if (projectOfTest.size === 0) return;
  const testsOfProject = new Map<string, string[]>();
  for (const [testId, projectId] of projectOfTest) testsOfProject.set(projectId, [...(testsOfProject.get(projectId) ?? []), testId]);
  const now = ctx.clock().toISOString();
  const rows: TestHealthTable[] = [];
  for (const [projectId, testIds] of testsOfProject) {
    const settings = healthSettingsOf(projects.get(projectId));
    // Scored on the project's default branch (TRIAGE-11); every branch while none is known.
    const project = projects.get(projectId);
    const branch = project ? (await defaultBranchOfRow(trx, project)).name : await defaultBranchNameOf(ctx, projectId, trx);
    const runsOfTest = await healthRunsOfTests(trx, testIds, widestWindow(settings) + RUNS_MARGIN, branch ?? undefined);
    for (const testId of testIds) {
      const score = scoreHealth(healthOutcomes(runsOfTest.get(testId) ?? []), settings);
      rows.push(healthRow(testId, projectId, branch, score, now));
    }
  }
  await upsertTestHealth(trx, rows);
}

/** Runs read beyond the health window, so a few retries do not shorten the window of outcomes. */
export const RUNS_MARGIN = 10;

const healthRow = (testId: string, projectId: string, branch: string | null, score: HealthScore, now: string): TestHealthTable => ({
  test_id: testId,
  project_id: projectId,
  state: score.state,
  flaky_score: score.flakyScore,
  runs_considered: score.runsConsidered,
  failing_streak: score.failingStreak,
  updated_at: now,
  monitor: score.monitor,
  branch,
  evidence: score.evidence === null ? null : JSON.stringify(score.evidence),
});

/** A test's health as answers show it: stable with no runs considered until one completes. */
export interface TestHealthView {
  state: TestHealthTable['state'];
  flakyScore: number;
  runsConsidered: number;
  quarantine: { owner: string; reason: string; expiresAt: string; expired: boolean } | null;
  /** Where it stands in the quarantine lifecycle (TRIAGE-13). */
  lifecycle: LifecycleView;
  monitor: MonitorName | null;
  branch: string | null;
  evidence: { events: number; samples: number; runs: { runId: string; jobId: string | null; url: string }[] } | null;
}

/** The evidence as answers show it: each run with the link to its page (TRIAGE-11). */
function evidenceView(ctx: ServiceContext, evidence: MonitorEvidence | null): TestHealthView['evidence'] {
  if (evidence === null) return null;
  const base = ctx.config.publicUrl ?? '';
  return { ...evidence, runs: evidence.runs.map((run) => ({ ...run, url: `${base}/runs/${run.runId}` })) };
}

const storedEvidence = (text: string | null | undefined): MonitorEvidence | null => (text ? (JSON.parse(text) as MonitorEvidence) : null);

export const quarantineView = (row: TestQuarantinesTable, now: string) => ({
  owner: row.owner,
  reason: row.reason,
  expiresAt: row.expires_at,
  expired: row.expires_at <= now,
});

/** The health of each test given, by id (every test given has one). */
export async function healthViewsOf(ctx: ServiceContext, testIds: readonly string[]): Promise<Map<string, TestHealthView>> {
  const now = ctx.clock().toISOString();
  const stored = await healthOfTests(ctx.db, testIds);
  const lifecycles = await lifecyclesOfTests(ctx.db, testIds);
  const views = new Map<string, TestHealthView>();
  for (const testId of testIds) {
    const { health, quarantine } = stored.get(testId) ?? {};
    views.set(testId, {
      state: health?.state ?? 'stable',
      flakyScore: health?.flaky_score ?? 0,
      runsConsidered: health?.runs_considered ?? 0,
      quarantine: quarantine ? quarantineView(quarantine, now) : null,
      lifecycle: lifecycleView(lifecycles.get(testId), quarantine, now),
      monitor: health?.monitor ?? null,
      branch: health?.branch ?? null,
      evidence: evidenceView(ctx, storedEvidence(health?.evidence)),
    });
  }
  return views;
}

/**
 * A test's health on another branch than the stored one's (`?branch=`, TRIAGE-11): scored from its
 * runs on that branch when asked, not stored; its quarantine as stored.
 */
export async function healthOnBranch(ctx: ServiceContext, test: TestsTable, branch: string): Promise<TestHealthView> {
  const stored = (await healthViewsOf(ctx, [test.id])).get(test.id) as TestHealthView;
  const settings = healthSettingsOf(await findProject(ctx.db, test.project_id));
  const runs = (await healthRunsOfTests(ctx.db, [test.id], widestWindow(settings) + RUNS_MARGIN, branch)).get(test.id) ?? [];
  const score = scoreHealth(healthOutcomes(runs), settings);
  return {
    state: score.state,
    flakyScore: score.flakyScore,
    runsConsidered: score.runsConsidered,
    quarantine: stored.quarantine,
    monitor: score.monitor,
    branch,
    evidence: evidenceView(ctx, score.evidence),
    lifecycle: stored.lifecycle,
  };
}

export const QUARANTINE_DEFAULT_DAYS = 14;
export const QUARANTINE_MAX_DAYS = 365;
const DAY_MS = 86_400_000;

/**
 * Quarantines a test (or renews its quarantine) until `expiresAt`, 14 days from now when not given;
 * an expiry in the past or more than 365 days ahead is refused. Audited as `test.quarantine`.
 */
export async function quarantineTest(
  ctx: ServiceContext,
  testId: string,
  input: { owner: string; reason: string; expiresAt?: string },
  actor: Actor,
): Promise<{ test: TestsTable; quarantine: TestQuarantinesTable; state: LifecycleStateName }> {
  const test = found(await findTest(ctx.db, testId), 'The test');
  const now = ctx.clock();
  const expires = input.expiresAt === undefined ? new Date(now.getTime() + QUARANTINE_DEFAULT_DAYS * DAY_MS) : new Date(input.expiresAt);
  if (expires.getTime() <= now.getTime()) throw invalid('/body/expiresAt', 'must be in the future');
  if (expires.getTime() > now.getTime() + QUARANTINE_MAX_DAYS * DAY_MS) {
    throw invalid('/body/expiresAt', `must be at most ${QUARANTINE_MAX_DAYS} days from now`);
  }
  const row: TestQuarantinesTable = {
    test_id: testId,
    project_id: test.project_id,
    owner: input.owner,
    reason: input.reason,
    expires_at: expires.toISOString(),
    created_at: now.toISOString(),
    created_by: actor.userId,
  };
  const { queued, state } = await inTransaction(ctx.db, async (trx) => {
    const queued = await putQuarantine(ctx, trx, test, row, actor.userId);
    const lifecycle = (await lifecyclesOfTests(trx, [testId])).get(testId);
    await auditBy(ctx, trx, actor, {
      action: 'test.quarantine',
      targetType: 'test',
      targetId: testId,
      details: { owner: row.owner, reason: row.reason, expiresAt: row.expires_at },
    });
    return { queued, state: lifecycleStateOf(lifecycle, row, now.toISOString()) };
  });
  if (queued) deliverSoon(ctx);
  return { test, quarantine: row, state };
}

/** Releases a test's quarantine; a test without one answers 404 (nothing to release). Audited as `test.release`. */
export async function releaseQuarantine(ctx: ServiceContext, testId: string, actor: Actor): Promise<void> {
  const test = found(await findTest(ctx.db, testId), 'The test');
  const queued = await inTransaction(ctx.db, async (trx) => {
    const { released, queued } = await dropQuarantine(ctx, trx, test, actor.userId);
    found(released || undefined, "The test's quarantine");
    await auditBy(ctx, trx, actor, {
      action: 'test.release',
      targetType: 'test',
      targetId: testId,
    });
    return queued;
  });
  if (queued) deliverSoon(ctx);
}

/** A project's quarantined tests, active ones first (latest expiry first), then expired ones, with their lifecycle states. */
export async function listQuarantines(
  ctx: ServiceContext,
  projectId: string,
): Promise<{ row: QuarantineRow; expired: boolean; state: LifecycleStateName }[]> {
  const now = ctx.clock().toISOString();
  const rows = await quarantinesOfProject(ctx.db, projectId);
  const lifecycles = await lifecyclesOfTests(
    ctx.db,
    rows.map((row) => row.test_id),
  );
  return rows.map((row) => ({ row, expired: row.expires_at <= now, state: lifecycleStateOf(lifecycles.get(row.test_id), row, now) }));
}
