import { Type } from 'typebox';
import { NAME_MAX, Nullable, Timestamp, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { FlakyCostSummary } from './flaky-cost.ts';
import { Job } from './jobs.ts';
import { ProjectParams } from './projects.ts';
import { RunLabel } from './runs.ts';

/** Most days a dashboard looks back. */
export const DASHBOARD_DAYS_MAX = 90;

const Count = Type.Integer({ minimum: 0 });
const Rate = Nullable(Type.Number({ minimum: 0, maximum: 1 }));
const Day = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', maxLength: 10, description: 'A UTC day, `YYYY-MM-DD`.' });

export const DailyPoint = Type.Object(
  {
    day: Day,
    runs: { ...Count, description: 'Completed runs that finished that day: every attempt, retries included.' },
    tests: {
      ...Count,
      description:
        'Tests that finished that day, retries folded (TRIAGE-14): passed + failed + skipped, so `runs` less the failed ' +
        'attempts a later attempt of the same test in the same job superseded.',
    },
    passed: Count,
    failed: {
      ...Count,
      description: 'Runs failed or broken, not counting a failed attempt that a later attempt of its test in the same job superseded.',
    },
    skipped: Count,
    passRate: { ...Rate, description: 'passed / (passed + failed); null on a day with neither.' },
    meanDurationMs: Nullable(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);

export const JobPoint = Type.Object(
  {
    job: Job,
    passRate: { ...Rate, description: 'Its tests (retries folded) that passed, flaky ones included, of those that passed or failed.' },
    durationMs: Nullable(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);

const GroupCategory = Type.String({ maxLength: 20 });

export const TopGroup = Type.Object(
  {
    id: Uuid,
    title: Type.String(),
    category: GroupCategory,
    rule: Nullable(Type.String()),
    status: Type.String({ maxLength: 20 }),
    defectType: Type.String({ maxLength: 20 }),
    issueUrl: Nullable(Type.String()),
    assignee: Nullable(Type.String()),
    occurrences: { ...Count, description: 'Failed runs of this cause within the window (on the branch, if one was asked for).' },
    totalOccurrences: { ...Count, description: 'Failed runs of this cause ever recorded.' },
    trend: Type.Array(Type.Object({ day: Day, occurrences: Count }, { additionalProperties: false }), {
      description: 'Occurrences per day of the window, oldest first: the sparkline.',
    }),
  },
  { additionalProperties: false },
);

export const HealthEntry = Type.Object(
  {
    testId: Uuid,
    name: Type.String({ maxLength: NAME_MAX }),
    fullName: Nullable(Type.String()),
    state: Type.Union([Type.Literal('stable'), Type.Literal('flaky'), Type.Literal('broken')]),
    flakyScore: Type.Number({ minimum: 0, maximum: 1 }),
    runsConsidered: Count,
    failingStreak: Count,
  },
  { additionalProperties: false },
);

export const QuarantineEntry = Type.Object(
  {
    testId: Uuid,
    name: Type.String({ maxLength: NAME_MAX }),
    fullName: Nullable(Type.String()),
    owner: Type.String(),
    reason: Type.String(),
    expiresAt: Timestamp,
    expired: Type.Boolean(),
  },
  { additionalProperties: false },
);

export const Dashboard = Type.Object(
  {
    branch: Nullable(RunLabel),
    days: Type.Integer({ minimum: 1, maximum: DASHBOARD_DAYS_MAX }),
    since: { ...Timestamp, description: 'The start of the window: midnight UTC, `days − 1` days before today.' },
    daily: Type.Array(DailyPoint, { description: 'Every day of the window, oldest first, days without runs included.' }),
    jobs: Type.Array(JobPoint, { description: 'The latest 20 jobs (on the branch: with a run on it), newest first.' }),
    topGroups: Type.Array(TopGroup, { description: 'The 5 error groups that failed most runs in the window.' }),
    flaky: Type.Array(HealthEntry, { description: 'The 10 flakiest tests, highest score first.' }),
    broken: Type.Array(HealthEntry, { description: 'Up to 10 broken tests, longest failing streak first.' }),
    quarantined: Type.Array(QuarantineEntry, { description: 'Up to 10 quarantined tests: those in force first, then expired ones.' }),
    flakyCost: {
      ...FlakyCostSummary,
      description:
        'What flakiness cost in CI time over the window, on every branch (TRIAGE-15); `GET /projects/{projectId}/flaky-cost` ' +
        'lists the attempts and jobs behind it.',
    },
  },
  { additionalProperties: false },
);

export const getDashboard = endpoint({
  operationId: 'getDashboard',
  method: 'GET',
  path: '/projects/{projectId}/dashboard',
  summary: "A project's health at a glance: daily and per-job trends, top error groups, flaky, broken and quarantined tests.",
  description:
    'Everything counts a test once per job (retries folded: the final attempt decides, a failure then a pass is flaky). ' +
    '`days` (1 to 90, default 14) sets the window of the daily trend and the top groups; `branch` narrows the trends, ' +
    'jobs and groups to runs on that branch (health is over every branch). The trend, groups and health lists are each ' +
    "one indexed, grouped query whose cost follows the window; a settled job's per-test counts are folded once and kept " +
    '(docs/triage.md).',
  tag: 'Triage',
  access: { scope: 'project', role: 'viewer' },
  params: ProjectParams,
  querystring: Type.Object(
    {
      branch: Type.Optional(RunLabel),
      days: Type.Optional(Type.Integer({ minimum: 1, maximum: DASHBOARD_DAYS_MAX, default: 14 })),
    },
    { additionalProperties: false },
  ),
  responses: { 200: Dashboard },
});
