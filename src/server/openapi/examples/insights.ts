import { compareJobs } from '../../../api/v1/comparison.ts';
import { getDashboard } from '../../../api/v1/dashboard.ts';
import { getFlakyCost } from '../../../api/v1/flaky-cost.ts';
import { GROUP } from './failures.ts';
import { IDS, TESTER_EMAIL } from './samples.ts';
import { JOB, LAUNCH } from './testing.ts';
import type { OperationExamples } from './types.ts';
import { examplesOf } from './types.ts';

// Answers across runs that only read (TRIAGE-7, TRIAGE-8): the example project's dashboard on main,
// and its latest launch compared with the nightly job before it.

const DAYS = ['2026-02-28', '2026-03-01', '2026-03-02'];
const BASE_JOB = { ...JOB, status: 'completed' as const, finishedAt: '2026-03-02T09:41:12.007Z' };

export const insightExamples: [string, OperationExamples][] = [
  examplesOf(getDashboard, {
    responses: {
      200: {
        branch: 'main',
        days: 3,
        since: '2026-02-28T00:00:00.000Z',
        daily: [
          { day: DAYS[0] as string, runs: 0, tests: 0, passed: 0, failed: 0, skipped: 0, passRate: null, meanDurationMs: null },
          { day: DAYS[1] as string, runs: 2, tests: 2, passed: 1, failed: 1, skipped: 0, passRate: 0.5, meanDurationMs: 48_211 },
          { day: DAYS[2] as string, runs: 4, tests: 4, passed: 3, failed: 1, skipped: 0, passRate: 0.75, meanDurationMs: 51_037 },
        ],
        jobs: [{ job: LAUNCH, passRate: 2 / 3, durationMs: 226_714 }],
        topGroups: [
          {
            id: GROUP.id,
            title: GROUP.title,
            category: GROUP.category,
            rule: GROUP.rule,
            status: GROUP.status,
            defectType: GROUP.defectType,
            issueUrl: GROUP.issueUrl,
            assignee: TESTER_EMAIL,
            occurrences: 2,
            totalOccurrences: GROUP.occurrences,
            trend: DAYS.map((day, i) => ({ day, occurrences: i === 0 ? 0 : 1 })),
          },
        ],
        flaky: [
          {
            testId: IDS.testLogin,
            name: 'Log in with a valid account',
            fullName: 'login.spec.ts › Log in with a valid account',
            state: 'flaky',
            flakyScore: 0.2,
            runsConsidered: 10,
            failingStreak: 0,
          },
        ],
        broken: [],
        quarantined: [
          {
            testId: IDS.testLogin,
            name: 'Log in with a valid account',
            fullName: 'login.spec.ts › Log in with a valid account',
            owner: TESTER_EMAIL,
            reason: 'The staging identity provider times out at night (SHOP-31).',
            expiresAt: '2026-03-16T09:00:00.000Z',
            expired: false,
          },
        ],
        flakyCost: { retriedFailures: { attempts: 3, durationMs: 14_220 }, flakyOnlyJobs: { jobs: 1, durationMs: 226_714 } },
      },
    },
  }),
  examplesOf(getFlakyCost, {
    responses: {
      200: {
        days: 30,
        since: '2026-02-01T00:00:00.000Z',
        testId: null,
        retriedFailures: { attempts: 1, durationMs: 4_120 },
        flakyOnlyJobs: { jobs: 1, durationMs: 226_714 },
        tests: [{ testId: IDS.testLogin, name: 'Log in with a valid account', attempts: 1, durationMs: 4_120 }],
        attempts: [
          {
            runId: IDS.run,
            jobId: LAUNCH.id,
            testId: IDS.testLogin,
            name: 'Log in with a valid account',
            attempt: 0,
            verdict: 'failed',
            durationMs: 4_120,
          },
        ],
        jobs: [{ jobId: LAUNCH.id, name: LAUNCH.name, flakyTests: 1, durationMs: 226_714 }],
        truncated: false,
      },
    },
  }),
  examplesOf(compareJobs, {
    responses: {
      200: {
        job: LAUNCH,
        base: BASE_JOB,
        counts: { tests: 3, newFailures: 1, fixed: 0, stillFailing: 0, newErrorGroups: 1, flaky: 0, quarantined: 0 },
        newFailures: [
          {
            testKey: IDS.testCheckout,
            testId: IDS.testCheckout,
            deviceId: null,
            name: 'Checkout with a saved card',
            verdict: 'failed',
            baseVerdict: 'passed',
            attempts: 1,
            runId: IDS.olderRun,
            baseRunId: IDS.jobRun,
            failureGroupId: GROUP.id,
            quarantined: false,
            health: 'stable',
            counted: true,
            reason: 'new-failure',
          },
        ],
        fixed: [],
        stillFailing: [],
        flaky: [],
        quarantined: [],
        newErrorGroups: [
          {
            id: GROUP.id,
            title: GROUP.title,
            category: GROUP.category,
            status: 'new',
            defectType: 'to_investigate',
            issueUrl: null,
            tests: 1,
            flakyOnly: false,
            counted: true,
            reason: 'new-group',
          },
        ],
        allowFlaky: false,
        counted: { tests: 1, errorGroups: 1 },
        pass: false,
      },
    },
  }),
];
