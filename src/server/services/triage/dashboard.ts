import type { ServiceContext } from '../../context.ts';
import {
  dailyOutcomes,
  groupTrends,
  type HealthRow,
  latestJobs,
  type QuarantineRow,
  quarantinedTests,
  testsInState,
  topGroupsSince,
} from '../../db/repositories/dashboard.ts';
import { findFailureGroups } from '../../db/repositories/failure-groups.ts';
import type { FailureGroupsTable } from '../../db/types.ts';
import { type JobView, jobClock, viewJobs } from '../records/jobs.ts';
import { type FlakyCost, flakyCost } from './flaky-cost.ts';

export type { HealthRow, QuarantineRow };

// A project's health at a glance (TRIAGE-8): what GET /projects/{projectId}/dashboard answers.

const DAY_MS = 86_400_000;
export const DASHBOARD_JOBS = 20;
export const DASHBOARD_GROUPS = 5;
export const DASHBOARD_TESTS = 10;

export interface DailyPoint {
  day: string;
  runs: number;
  /** passed + failed + skipped: the day's tests, retries folded (TRIAGE-14). */
  tests: number;
  passed: number;
  failed: number;
  skipped: number;
  /** passed / (passed + failed); null on a day without either. */
  passRate: number | null;
  meanDurationMs: number | null;
}

export interface JobPoint {
  view: JobView;
  /** Its tests (retries folded, TRIAGE-5) that passed, flaky ones included, of those that passed or failed. */
  passRate: number | null;
  /** From the first start of its runs to the last finish; null until one has finished. */
  durationMs: number | null;
}

export interface TopGroup {
  group: FailureGroupsTable;
  /** Failed runs of this cause within the window (on the branch, if one was asked for). */
  occurrences: number;
  trend: { day: string; occurrences: number }[];
}

export interface Dashboard {
  branch: string | null;
  days: number;
  since: string;
  daily: DailyPoint[];
  jobs: JobPoint[];
  topGroups: TopGroup[];
  flaky: HealthRow[];
  broken: HealthRow[];
  quarantined: QuarantineRow[];
  /** Over the window, every branch (TRIAGE-15). */
  flakyCost: Pick<FlakyCost, 'retriedFailures' | 'flakyOnlyJobs'>;
  now: string;
}

/** Every UTC day from `since` to `now`, oldest first, as `YYYY-MM-DD`. */
export function daysBetween(since: string, now: string): string[] {
  const days: string[] = [];
  for (let t = Date.parse(`${since.slice(0, 10)}T00:00:00Z`); t <= Date.parse(now); t += DAY_MS) {
    days.push(new Date(t).toISOString().slice(0, 10));
  }
  return days;
}

const ratio = (part: number, whole: number) => (whole === 0 ? null : part / whole);

/** A job's pass rate and length, from its state (its tests counted once, TRIAGE-5). */
export function jobPoint(view: JobView): JobPoint {
  const { tests } = view.state.progress;
  const { startedAt, finishedAt } = view.state;
  return {
    view,
    // A flaky test passed in the end: it counts as passed, as the history does.
    passRate: ratio(tests.passed + tests.flaky, tests.passed + tests.flaky + tests.failed + tests.broken),
    durationMs: startedAt === null || finishedAt === null ? null : Math.max(0, Date.parse(finishedAt) - Date.parse(startedAt)),
  };
}

/** One point per day of the window, days without runs included. */
function dailyPoints(dailyRows: Awaited<ReturnType<typeof dailyOutcomes>>, since: string, now: string): DailyPoint[] {
  const byDay = new Map(dailyRows.map((row) => [row.day, row]));
  return daysBetween(since, now).map((day): DailyPoint => {
    const row = byDay.get(day);
    const passed = Number(row?.passed ?? 0);
    const failed = Number(row?.failed ?? 0);
    const mean = row?.duration_ms;
    const skipped = Number(row?.skipped ?? 0);
    return {
      day,
      runs: Number(row?.runs ?? 0),
      tests: passed + failed + skipped,
      passed,
      failed,
      skipped,
      passRate: ratio(passed, passed + failed),
      meanDurationMs: mean === null || mean === undefined ? null : Math.round(Number(mean)),
    };
  });
}

/** The top groups of the window, each with its occurrences per day. */
async function topGroupsWithTrends(
  db: ServiceContext['db'],
  projectId: string,
  topRows: Awaited<ReturnType<typeof topGroupsSince>>,
  window: { since: string; now: string; branch: string | null },
): Promise<TopGroup[]> {
  const { since, now, branch } = window;
  const groupIds = topRows.map((row) => row.group_id);
  const groups = await findFailureGroups(db, projectId, groupIds);
  const trends = await groupTrends(db, projectId, groupIds, since, branch);
  const windowDays = daysBetween(since, now);
  return topRows.flatMap((row): TopGroup[] => {
    const group = groups.find((g) => g.id === row.group_id);
    if (!group) return [];
    const perDay = new Map(trends.filter((t) => t.group_id === row.group_id).map((t) => [t.day, Number(t.occurrences)]));
    return [
      {
        group,
        occurrences: Number(row.occurrences),
        trend: windowDays.map((day) => ({ day, occurrences: perDay.get(day) ?? 0 })),
      },
    ];
  });
}

export async function projectDashboard(
  ctx: ServiceContext,
  projectId: string,
  options: { branch: string | null; days: number },
): Promise<Dashboard> {
  const now = ctx.clock().toISOString();
  const since = new Date(Date.parse(`${now.slice(0, 10)}T00:00:00Z`) - (options.days - 1) * DAY_MS).toISOString();
  const { branch } = options;
  const db = ctx.db;

  const [dailyRows, jobs, topRows, flaky, broken, quarantined, cost] = await Promise.all([
    dailyOutcomes(db, projectId, since, branch),
    latestJobs(db, projectId, branch, DASHBOARD_JOBS),
    topGroupsSince(db, projectId, since, branch, DASHBOARD_GROUPS),
    testsInState(db, projectId, 'flaky', DASHBOARD_TESTS),
    testsInState(db, projectId, 'broken', DASHBOARD_TESTS),
    quarantinedTests(db, projectId, now, DASHBOARD_TESTS),
    flakyCost(ctx, projectId, { days: options.days }),
  ]);

  const daily = dailyPoints(dailyRows, since, now);

  const jobPoints = (await viewJobs(db, jobs, jobClock(ctx))).map(jobPoint);

  const topGroups = await topGroupsWithTrends(db, projectId, topRows, { since, now, branch });

  return {
    branch,
    days: options.days,
    since,
    daily,
    jobs: jobPoints,
    topGroups,
    flaky,
    broken,
    quarantined,
    flakyCost: { retriedFailures: cost.retriedFailures, flakyOnlyJobs: cost.flakyOnlyJobs },
    now,
  };
}
