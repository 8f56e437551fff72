import type { ServiceContext } from '../context.ts';
import { groupsOfJob, latestJobsBefore, quarantinedAmong } from '../db/repositories/comparison.ts';
import { findFailureGroups } from '../db/repositories/failure-groups.ts';
import { findJob } from '../db/repositories/jobs.ts';
import type { FailureGroupsTable } from '../db/types.ts';
import { found, invalid } from '../errors.ts';
import { type JobView, jobClock, viewJobs } from './jobs.ts';
import { type TestOutcome, testOutcomesOfJobs } from './outcomes.ts';

// Two jobs compared test by test (TRIAGE-7): what GET /testmgmt/jobs/{jobId}/comparison answers
// and `attest gate` decides on. Each side is folded per test first (TRIAGE-5).

export type ComparedVerdict = NonNullable<TestOutcome['verdict']>;

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
}

export interface NewErrorGroup {
  group: FailureGroupsTable;
  tests: number;
  flakyOnly: boolean;
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
}

/** How many of the latest jobs before the head are looked at for a completed one on the base branch. */
const BASE_CANDIDATES = 50;

const failing = (verdict: ComparedVerdict | null | undefined) => verdict === 'failed' || verdict === 'broken';
const passing = (verdict: ComparedVerdict | null | undefined) => verdict === 'passed' || verdict === 'flaky';

/** The job's branch: the one it was created with, else the one its runs carry. */
function branchOf(view: JobView, outcomes: readonly TestOutcome[]): string | null {
  return view.request.branch ?? outcomes.find((outcome) => outcome.branch !== null)?.branch ?? null;
}

async function baseJob(
  ctx: ServiceContext,
  head: JobView,
  headOutcomes: readonly TestOutcome[],
  options: { baseJobId?: string; baseBranch?: string },
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
  const branch = options.baseBranch ?? branchOf(head, headOutcomes);
  const candidates = await latestJobsBefore(ctx.db, head.row, branch, BASE_CANDIDATES);
  const views = await viewJobs(ctx.db, candidates, jobClock(ctx));
  return views.find((view) => view.state.status === 'completed') ?? null;
}

export async function compareJobs(
  ctx: ServiceContext,
  jobId: string,
  options: { baseJobId?: string; baseBranch?: string },
): Promise<Comparison> {
  const row = found(await findJob(ctx.db, jobId), 'The job');
  const [head] = await viewJobs(ctx.db, [row], jobClock(ctx));
  if (!head) throw new Error('a job read has no view');
  const headOutcomes = (await testOutcomesOfJobs(ctx.db, [jobId])).get(jobId) ?? [];
  const base = await baseJob(ctx, head, headOutcomes, options);
  const baseOutcomes = base === null ? [] : ((await testOutcomesOfJobs(ctx.db, [base.row.id])).get(base.row.id) ?? []);
  const matchKey = (outcome: TestOutcome) => `${outcome.testKey}\u0000${outcome.deviceId ?? ''}`;
  const baseByKey = new Map(baseOutcomes.map((outcome) => [matchKey(outcome), outcome]));

  const testIds = headOutcomes.map((outcome) => outcome.testId).filter((id): id is string => id !== null);
  const quarantinedIds = await quarantinedAmong(ctx.db, row.project_id, testIds, ctx.clock().toISOString());

  const compared = headOutcomes.map((outcome): ComparedTest => {
    const before = baseByKey.get(matchKey(outcome));
    return {
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
    };
  });
  const inForce = compared.filter((test) => !test.quarantined);
  const byName = (a: ComparedTest, b: ComparedTest) =>
    a.name.localeCompare(b.name) || a.testKey.localeCompare(b.testKey) || (a.deviceId ?? '').localeCompare(b.deviceId ?? '');

  // Occurrences name the test, not the device: a group is new for each outcome of that test.
  const outcomesOfTest = new Map<string, ComparedTest[]>();
  for (const test of compared) outcomesOfTest.set(test.testKey, [...(outcomesOfTest.get(test.testKey) ?? []), test]);
  const headGroups = await groupsOfJob(ctx.db, jobId);
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
  const newErrorGroups = groupRows.map((group): NewErrorGroup => {
    const tests = testsOfNewGroup.get(group.id) ?? [];
    return { group, tests: tests.length, flakyOnly: tests.every((test) => test.verdict === 'flaky') };
  });

  return {
    job: head,
    base,
    tests: compared.length,
    newFailures: inForce.filter((test) => failing(test.verdict) && !failing(test.baseVerdict)).sort(byName),
    fixed: compared.filter((test) => failing(test.baseVerdict) && passing(test.verdict)).sort(byName),
    stillFailing: inForce.filter((test) => failing(test.verdict) && failing(test.baseVerdict)).sort(byName),
    flaky: inForce.filter((test) => test.verdict === 'flaky').sort(byName),
    quarantined: compared.filter((test) => test.quarantined && (failing(test.verdict) || test.verdict === 'flaky')).sort(byName),
    newErrorGroups,
  };
}
