import type { ServiceContext } from '../../context.ts';
import { groupsOfJob, latestJobsBefore, quarantinedAmong } from '../../db/repositories/comparison.ts';
import { findFailureGroups } from '../../db/repositories/failure-groups.ts';
import { findJob } from '../../db/repositories/jobs.ts';
import { healthRunsOfTests } from '../../db/repositories/outcomes.ts';
import { findProject } from '../../db/repositories/projects.ts';
import type { FailureGroupsTable, JobsTable, TestHealthTable } from '../../db/types.ts';
import { found, invalid } from '../../errors.ts';
import { type JobView, jobClock, viewJobs } from '../records/jobs.ts';
import { defaultBranchOfRow } from './default-branch.ts';
import { RUNS_MARGIN, scoreHealth, widestWindow } from './health.ts';
import { healthOutcomes, type TestOutcome, testOutcomesOfJobs } from './outcomes.ts';
import { triageSettingsOf } from './settings.ts';

// Two jobs compared test by test (TRIAGE-7): what GET /testmgmt/jobs/{jobId}/comparison answers
// and `attest gate` decides on, and what `job.completed` carries. Each side is folded per test
// first (TRIAGE-5); the base, unless named, is that of the job's pull request or the project's
// default branch (TRIAGE-16).

export type ComparedVerdict = NonNullable<TestOutcome['verdict']>;

/**
 * Why a test counts against the job or not (docs/triage.md): `new-failure` and, without
 * allowFlaky, `passed-on-retry` count; `flaky-health` is a failure of a test that was flaky before
 * the job, let through with allowFlaky only; `broken` is a failure of a test broken before the job,
 * which is still failing, not new.
 */
export type CountReason =
  | 'new-failure'
  | 'flaky-health'
  | 'passed-on-retry'
  | 'still-failing'
  | 'broken'
  | 'quarantined'
  | 'fixed'
  | 'passed'
  | 'skipped'
  | 'unfinished';

export interface ComparedTest {
  testKey: string;
  testId: string | null;
  /** A job that runs a test on several devices has one outcome per device: they are compared device by device. */
  deviceId: string | null;
  name: string;
  verdict: ComparedVerdict | null;
  baseVerdict: ComparedVerdict | null;
  attempts: number;
  runId: string | null;
  baseRunId: string | null;
  failureGroupId: string | null;
  quarantined: boolean;
  /** Its health as it stood before the job: its outcomes before the job scored as TRIAGE-6 scores them. */
  health: TestHealthTable['state'];
  counted: boolean;
  reason: CountReason;
}

export interface NewErrorGroup {
  group: FailureGroupsTable;
  tests: number;
  flakyOnly: boolean;
  counted: boolean;
  reason: 'new-group' | 'tests-let-through';
}

export interface Comparison {
  job: JobView;
  base: JobView | null;
  tests: number;
  newFailures: ComparedTest[];
  fixed: ComparedTest[];
  stillFailing: ComparedTest[];
  flaky: ComparedTest[];
  quarantined: ComparedTest[];
  newErrorGroups: NewErrorGroup[];
  allowFlaky: boolean;
  /** Counted tests and groups: the job passes with none. */
  counted: { tests: number; errorGroups: number };
}

/** How many of the latest jobs before the head are looked at for a completed one on the base branch. */
const BASE_CANDIDATES = 50;

const failing = (verdict: ComparedVerdict | null | undefined) => verdict === 'failed' || verdict === 'broken';
const passing = (verdict: ComparedVerdict | null | undefined) => verdict === 'passed' || verdict === 'flaky';

/** The job's branch: the one it was created with, else the one its runs carry. */
function branchOf(view: JobView, outcomes: readonly TestOutcome[]): string | null {
  return view.request.branch ?? outcomes.find((outcome) => outcome.branch !== null)?.branch ?? null;
}

/**
 * The health of each test as it stood before the job: its latest completed outcomes on the
 * project's default branch (TRIAGE-16) before the job's creation, its own runs left out. The stored health already holds this job's failures (a
 * test that passed once and fails now scores a flip in two outcomes, flaky), so it would let a
 * plain new failure pass as flakiness.
 */
async function healthBeforeJob(
  ctx: ServiceContext,
  job: JobsTable,
  outcomes: readonly TestOutcome[],
  project: { settings: ReturnType<typeof triageSettingsOf>; defaultBranch: string | null },
): Promise<Map<string, TestHealthTable['state']>> {
  const runsInJob = new Map<string, number>();
  for (const outcome of outcomes)
    if (outcome.testId !== null) runsInJob.set(outcome.testId, (runsInJob.get(outcome.testId) ?? 0) + outcome.attempts);
  const states = new Map<string, TestHealthTable['state']>();
  if (runsInJob.size === 0) return states;
  const { settings, defaultBranch } = project;
  // Scored as the stored health is: on the project's default branch (every branch while none is
  // known), over the monitors' widest window, read past this job's own runs, which are then left out.
  const perTest = widestWindow(settings) + RUNS_MARGIN + Math.max(...runsInJob.values());
  const runsOfTest = await healthRunsOfTests(ctx.db, [...runsInJob.keys()], perTest, defaultBranch ?? undefined);
  for (const testId of runsInJob.keys()) {
    const before = (runsOfTest.get(testId) ?? []).filter((run) => run.job_id !== job.id && run.created_at < job.created_at);
    states.set(testId, scoreHealth(healthOutcomes(before), settings).state);
  }
  return states;
}

/** The reasons of failing tests that do not count: a new error group only of such tests does not count either. */
const LET_THROUGH: ReadonlySet<CountReason> = new Set(['passed-on-retry', 'flaky-health', 'broken']);

/** Whether a test of the job counts against it, and why (docs/triage.md, "what counts"). */
function countTest(
  test: Pick<ComparedTest, 'verdict' | 'baseVerdict' | 'quarantined' | 'health'>,
  allowFlaky: boolean,
): { counted: boolean; reason: CountReason } {
  const { verdict } = test;
  if (test.quarantined && (failing(verdict) || verdict === 'flaky')) return { counted: false, reason: 'quarantined' };
  if (failing(verdict)) {
    if (failing(test.baseVerdict)) return { counted: false, reason: 'still-failing' };
    if (test.health === 'broken') return { counted: false, reason: 'broken' };
    if (test.health === 'flaky' && allowFlaky) return { counted: false, reason: 'flaky-health' };
    return { counted: true, reason: 'new-failure' };
  }
  if (verdict === 'flaky') return { counted: !allowFlaky, reason: 'passed-on-retry' };
  if (verdict === 'passed') return { counted: false, reason: failing(test.baseVerdict) ? 'fixed' : 'passed' };
  return { counted: false, reason: verdict === 'skipped' ? 'skipped' : 'unfinished' };
}

/**
 * The branch a job is compared with when none is asked for (TRIAGE-16): the branch its pull request
 * merges into when its CI named one, else the project's default branch when the job ran on another
 * branch, else its own branch (a job without a branch: the project's jobs).
 */
function defaultBaseBranch(head: JobView, headOutcomes: readonly TestOutcome[], defaultBranch: string | null): string | null {
  if (head.request.targetBranch) return head.request.targetBranch;
  const own = branchOf(head, headOutcomes);
  if (own === null) return null;
  return defaultBranch ?? own;
}

async function baseJob(
  ctx: ServiceContext,
  head: JobView,
  headOutcomes: readonly TestOutcome[],
  options: { baseJobId?: string; baseBranch?: string },
  defaultBranch: string | null,
): Promise<JobView | null> {
  if (options.baseJobId !== undefined) {
    if (options.baseBranch !== undefined) throw invalid('/query/baseBranch', 'cannot be combined with base');
    if (options.baseJobId === head.row.id) throw invalid('/query/base', 'is the job itself; name another job to compare against');
    const row = await findJob(ctx.db, options.baseJobId);
    // Another project's job answers like an unknown one.
    if (!row || row.project_id !== head.row.project_id) throw invalid('/query/base', 'names no job of this project');
    const [view] = await viewJobs(ctx.db, [row], jobClock(ctx));
    return view ?? null;
  }
  const branch = options.baseBranch ?? defaultBaseBranch(head, headOutcomes, defaultBranch);
  const candidates = await latestJobsBefore(ctx.db, head.row, branch, BASE_CANDIDATES);
  // One at a time, newest first: the latest job is nearly always completed, and a job's view reads its runs.
  for (const candidate of candidates) {
    const [view] = await viewJobs(ctx.db, [candidate], jobClock(ctx));
    if (view?.state.status === 'completed') return view;
  }
  return null;
}

/** Each outcome of the head job beside the base's outcome of the same test on the same device, counted or not. */
async function comparedTests(
  ctx: ServiceContext,
  row: JobsTable,
  headOutcomes: readonly TestOutcome[],
  baseOutcomes: readonly TestOutcome[],
  scoring: { settings: ReturnType<typeof triageSettingsOf>; defaultBranch: string | null; allowFlaky: boolean },
): Promise<ComparedTest[]> {
  const matchKey = (outcome: TestOutcome) => `${outcome.testKey}\u0000${outcome.deviceId ?? ''}`;
  const baseByKey = new Map(baseOutcomes.map((outcome) => [matchKey(outcome), outcome]));
  const testIds = headOutcomes.map((outcome) => outcome.testId).filter((id): id is string => id !== null);
  const quarantinedIds = await quarantinedAmong(ctx.db, row.project_id, testIds, ctx.clock().toISOString());
  // Health decides and shows only where a test failed, passed on retry, or was fixed: it is read for
  // those tests alone (every outcome of each, so the job's own runs of it are all read past), not
  // for the thousands of a big job that passed as before (TRIAGE-7).
  const shown = new Set(
    headOutcomes
      .filter((outcome) => failing(outcome.verdict) || outcome.verdict === 'flaky' || failing(baseByKey.get(matchKey(outcome))?.verdict))
      .map((outcome) => outcome.testId),
  );
  const healthOf = await healthBeforeJob(
    ctx,
    row,
    headOutcomes.filter((outcome) => shown.has(outcome.testId)),
    { settings: scoring.settings, defaultBranch: scoring.defaultBranch },
  );
  return headOutcomes.map((outcome): ComparedTest => {
    const before = baseByKey.get(matchKey(outcome));
    const test = {
      testKey: outcome.testKey,
      testId: outcome.testId,
      deviceId: outcome.deviceId,
      name: outcome.name,
      verdict: outcome.verdict,
      baseVerdict: before?.verdict ?? null,
      attempts: outcome.attempts,
      runId: outcome.runId,
      baseRunId: before?.runId ?? null,
      failureGroupId: outcome.failureGroupId,
      quarantined: outcome.testId !== null && quarantinedIds.has(outcome.testId),
      health: (outcome.testId === null ? undefined : healthOf.get(outcome.testId)) ?? 'stable',
    };
    return { ...test, ...countTest(test, scoring.allowFlaky) };
  });
}

/** The error groups the head job met and the base did not, oldest first, with the tests in force that met them. */
async function newErrorGroupsOf(
  ctx: ServiceContext,
  row: JobsTable,
  base: JobView | null,
  compared: readonly ComparedTest[],
): Promise<NewErrorGroup[]> {
  // Occurrences name the test, not the device: a group is new for each outcome of that test.
  const outcomesOfTest = new Map<string, ComparedTest[]>();
  for (const test of compared) outcomesOfTest.set(test.testKey, [...(outcomesOfTest.get(test.testKey) ?? []), test]);
  const headGroups = await groupsOfJob(ctx.db, row.id);
  const baseGroups = new Set(base === null ? [] : (await groupsOfJob(ctx.db, base.row.id)).map((occurrence) => occurrence.group_id));
  const testsOfNewGroup = new Map<string, ComparedTest[]>();
  for (const occurrence of headGroups) {
    if (baseGroups.has(occurrence.group_id)) continue;
    const tests = (outcomesOfTest.get(occurrence.test_key) ?? []).filter((test) => !test.quarantined);
    if (tests.length === 0) continue;
    testsOfNewGroup.set(occurrence.group_id, [...(testsOfNewGroup.get(occurrence.group_id) ?? []), ...tests]);
  }
  const groupRows = (await findFailureGroups(ctx.db, row.project_id, [...testsOfNewGroup.keys()])).sort(
    (a, b) => a.first_seen_at.localeCompare(b.first_seen_at) || a.id.localeCompare(b.id),
  );
  return groupRows.map((group): NewErrorGroup => {
    const tests = testsOfNewGroup.get(group.id) ?? [];
    const flakyOnly = tests.every((test) => test.verdict === 'flaky');
    // A group only of tests let through (as flaky, with allowFlaky; or broken before the job) is let through too.
    const excused = tests.every((test) => LET_THROUGH.has(test.reason) && !test.counted);
    return { group, tests: tests.length, flakyOnly, counted: !excused, reason: excused ? 'tests-let-through' : 'new-group' };
  });
}

export async function compareJobs(
  ctx: ServiceContext,
  jobId: string,
  options: { baseJobId?: string; baseBranch?: string; allowFlaky?: boolean },
): Promise<Comparison> {
  const allowFlaky = options.allowFlaky === true;
  const row = found(await findJob(ctx.db, jobId), 'The job');
  const [head] = await viewJobs(ctx.db, [row], jobClock(ctx));
  if (!head) throw new Error('a job read has no view');
  const headOutcomes = (await testOutcomesOfJobs(ctx.db, [jobId])).get(jobId) ?? [];
  // The project, read once: its default branch is the base when the job names none, and where health
  // stood before the job, scored with its triage settings.
  const projectRow = await findProject(ctx.db, row.project_id);
  const defaultBranch = projectRow ? (await defaultBranchOfRow(ctx.db, projectRow)).name : null;
  const settings = triageSettingsOf(projectRow ?? { triage_settings: null });
  const base = await baseJob(ctx, head, headOutcomes, options, defaultBranch);
  const baseOutcomes = base === null ? [] : ((await testOutcomesOfJobs(ctx.db, [base.row.id])).get(base.row.id) ?? []);
  const compared = await comparedTests(ctx, row, headOutcomes, baseOutcomes, { settings, defaultBranch, allowFlaky });
  const inForce = compared.filter((test) => !test.quarantined);
  const byName = (a: ComparedTest, b: ComparedTest) =>
    a.name.localeCompare(b.name) || a.testKey.localeCompare(b.testKey) || (a.deviceId ?? '').localeCompare(b.deviceId ?? '');
  const newErrorGroups = await newErrorGroupsOf(ctx, row, base, compared);

  return {
    job: head,
    base,
    tests: compared.length,
    newFailures: inForce.filter((test) => test.reason === 'new-failure' || test.reason === 'flaky-health').sort(byName),
    fixed: compared.filter((test) => failing(test.baseVerdict) && passing(test.verdict)).sort(byName),
    stillFailing: inForce.filter((test) => test.reason === 'still-failing' || test.reason === 'broken').sort(byName),
    flaky: inForce.filter((test) => test.verdict === 'flaky').sort(byName),
    quarantined: compared.filter((test) => test.quarantined && (failing(test.verdict) || test.verdict === 'flaky')).sort(byName),
    newErrorGroups,
    allowFlaky,
    counted: {
      tests: compared.filter((test) => test.counted).length,
      errorGroups: newErrorGroups.filter((group) => group.counted).length,
    },
  };
}
