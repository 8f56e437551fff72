import type { Static } from 'typebox';
import { cancelJob, completeJob, createJob, exportJob, getJob, type Job, listJobs } from '../../../api/v1/jobs.ts';
import { appendResults, exportRun, getResults, type XrayExecution } from '../../../api/v1/results.ts';
import { claimRun, createRun, getRun, heartbeatRun, keepRun, listRuns, updateRun } from '../../../api/v1/runs.ts';
import { getTestHistory, listQuarantines, quarantineTest } from '../../../api/v1/tests.ts';
import {
  CI_URL,
  DEVICE_ID,
  IDS,
  JOB_RUN,
  LOGIN_HEALTH,
  LOGIN_TEST,
  RUN,
  RUN_LABELS,
  RUNNER,
  RUNNING_RUN,
  TESTER_EMAIL,
} from './samples.ts';
import type { OperationExamples } from './types.ts';
import { examplesOf } from './types.ts';

const idle = { queued: 0, running: 0, completed: 0, aborted: 0, passed: 0, failed: 0, broken: 0, skipped: 0 };
const noTests = { total: 0, passed: 0, failed: 0, broken: 0, skipped: 0, flaky: 0, unfinished: 0 };

/** The nightly job: the checkout test on both phones. */
export const JOB: Static<typeof Job> = {
  id: IDS.job,
  projectId: IDS.project,
  name: 'Nightly checkout on phones',
  status: 'running',
  progress: { ...idle, total: 2, running: 1, completed: 1, passed: 1, tests: { ...noTests, total: 2, passed: 1, unfinished: 1 } },
  testIds: [IDS.testCheckout],
  deviceIds: [],
  deviceLabels: ['phone'],
  ...RUN_LABELS,
  repository: 'acme/shop',
  targetBranch: null,
  createdAt: '2026-03-02T09:00:00.412Z',
  startedAt: '2026-03-02T09:05:31.220Z',
  finishedAt: null,
  cancelledAt: null,
  closedAt: null,
  ciUrl: CI_URL,
  incident: null,
};

/** A reporter's launch (created with no tests), closed by its reporter after its last run. */
export const LAUNCH: Static<typeof Job> = {
  ...JOB,
  id: IDS.launch,
  name: 'Playwright: shop e2e on main',
  status: 'completed',
  progress: { ...idle, total: 3, completed: 3, passed: 2, failed: 1, tests: { ...noTests, total: 3, passed: 2, failed: 1 } },
  testIds: [],
  deviceLabels: [],
  startedAt: '2026-03-02T10:00:01.204Z',
  finishedAt: '2026-03-02T10:03:47.918Z',
  closedAt: '2026-03-02T10:03:48.102Z',
};

const LOG = [
  '09:14:02.301 I/Browser: loading https://staging.shop.example.com/login',
  '09:14:04.958 I/Auth: signed in as maria.lopez@example.com',
].join('\n');

const stepTimes = {
  open: { startedAt: '2026-03-02T09:14:02.300Z', durationMs: 2650 },
  signIn: { startedAt: '2026-03-02T09:14:04.950Z', durationMs: 4120 },
};

export const testingExamples = [
  examplesOf(getTestHistory, {
    responses: {
      200: {
        testId: IDS.testLogin,
        runs: [
          {
            id: RUN.id,
            name: RUN.name,
            status: RUN.status,
            verdict: RUN.verdict,
            createdAt: RUN.createdAt,
            startedAt: RUN.startedAt,
            finishedAt: RUN.finishedAt,
            jobId: RUN.jobId,
            branch: RUN.branch,
            build: RUN.build,
            environment: RUN.environment,
            deviceId: RUN.deviceId,
            attempt: 0,
            flaky: true,
          },
          {
            id: IDS.olderRun,
            name: RUN.name,
            status: 'completed',
            verdict: 'failed',
            createdAt: '2026-03-01T09:14:01.530Z',
            startedAt: '2026-03-01T09:14:01.530Z',
            finishedAt: '2026-03-01T09:14:12.004Z',
            jobId: null,
            branch: 'main',
            build: '2026.3.1-rc.1',
            environment: 'staging',
            deviceId: DEVICE_ID,
            attempt: 0,
            flaky: false,
          },
        ],
        summary: { runs: 2, passed: 1, failed: 1, broken: 0, skipped: 0, flakyFlips: 1 },
        outcomes: [
          {
            jobId: null,
            runId: RUN.id,
            verdict: 'passed',
            attempts: 1,
            runIds: [RUN.id],
            branch: RUN.branch,
            commit: RUN.commit,
            finishedAt: RUN.finishedAt,
          },
          {
            jobId: null,
            runId: IDS.olderRun,
            verdict: 'failed',
            attempts: 1,
            runIds: [IDS.olderRun],
            branch: 'main',
            commit: RUN.commit,
            finishedAt: '2026-03-01T09:14:12.004Z',
          },
        ],
        outcomeSummary: { outcomes: 2, passed: 1, failed: 1, broken: 0, skipped: 0, flaky: 0, unfinished: 0, passRate: 0.5 },
        health: LOGIN_HEALTH,
      },
    },
  }),
  examplesOf(quarantineTest, {
    request: { owner: TESTER_EMAIL, reason: 'Times out on the lab Wi-Fi; see LAB-812', expiresAt: '2026-03-16T09:00:00.000Z' },
    responses: {
      200: {
        testId: LOGIN_TEST.id,
        fullName: null,
        name: LOGIN_TEST.name,
        ...(LOGIN_HEALTH.quarantine as NonNullable<typeof LOGIN_HEALTH.quarantine>),
        state: 'quarantined',
      },
    },
  }),
  examplesOf(listQuarantines, {
    responses: {
      200: {
        items: [
          {
            testId: LOGIN_TEST.id,
            fullName: null,
            name: LOGIN_TEST.name,
            ...(LOGIN_HEALTH.quarantine as NonNullable<typeof LOGIN_HEALTH.quarantine>),
            state: 'quarantined',
          },
          {
            testId: IDS.testCheckout,
            fullName: 'checkout.spec.ts › Checkout with a saved card',
            name: 'Checkout with a saved card',
            owner: 'sam.okafor@example.com',
            reason: 'Payment sandbox down',
            expiresAt: '2026-02-20T09:00:00.000Z',
            expired: true,
            state: 'active',
          },
        ],
      },
    },
  }),
  examplesOf(createJob, {
    request: {
      projectId: IDS.project,
      name: JOB.name,
      testIds: [IDS.testCheckout],
      deviceLabels: ['phone'],
      ...RUN_LABELS,
      ciUrl: CI_URL,
    },
    responses: {
      200: {
        ...JOB,
        status: 'queued',
        progress: { ...idle, total: 2, queued: 2, tests: { ...noTests, total: 2, unfinished: 2 } },
        startedAt: null,
      },
      201: {
        ...JOB,
        status: 'queued',
        progress: { ...idle, total: 2, queued: 2, tests: { ...noTests, total: 2, unfinished: 2 } },
        startedAt: null,
      },
    },
  }),
  examplesOf(listJobs, { responses: { 200: { items: [JOB], nextCursor: null } } }),
  examplesOf(getJob, { responses: { 200: JOB } }),
  examplesOf(cancelJob, {
    responses: {
      200: {
        ...JOB,
        status: 'cancelled',
        progress: { ...idle, total: 2, running: 1, completed: 1, passed: 1, tests: { ...noTests, total: 2, passed: 1, unfinished: 1 } },
        cancelledAt: '2026-03-02T09:20:00.000Z',
      },
    },
  }),
  examplesOf(completeJob, { responses: { 200: LAUNCH } }),
  examplesOf(createRun, {
    request: {
      projectId: IDS.project,
      name: RUN.name,
      testId: IDS.testLogin,
      deviceId: DEVICE_ID,
      ...RUN_LABELS,
      ciUrl: CI_URL,
      idempotencyKey: 'ci-4512-login-R58M123ABC',
    },
    responses: { 201: RUNNING_RUN, 200: RUNNING_RUN },
  }),
  examplesOf(listRuns, { responses: { 200: { items: [RUN, JOB_RUN], nextCursor: null } } }),
  examplesOf(getRun, { responses: { 200: RUN } }),
  examplesOf(updateRun, { request: { status: 'completed', verdict: 'passed' }, responses: { 200: RUN } }),
  examplesOf(keepRun, { request: { keep: true }, responses: { 200: { ...RUN, keep: true } } }),
  examplesOf(claimRun, {
    request: { runner: RUNNER, deviceLabels: ['ios', 'lab-2'], projectId: IDS.project, leaseSeconds: 300 },
    responses: { 200: JOB_RUN },
  }),
  // Two minutes into the run, the runner extends its lease to five minutes from now.
  examplesOf(heartbeatRun, {
    request: { runner: RUNNER, leaseSeconds: 300 },
    responses: { 200: { ...JOB_RUN, leaseExpiresAt: '2026-03-02T09:20:05.006Z' } },
  }),
  examplesOf(appendResults, {
    request: {
      idempotencyKey: 'ci-4512-login-results-1',
      steps: [
        { key: 'step-1', title: 'Open the login page', status: 'passed', ...stepTimes.open },
        {
          key: 'step-2',
          title: `Sign in as ${TESTER_EMAIL}`,
          status: 'passed',
          ...stepTimes.signIn,
          cells: [
            { key: 'step-2-expected', name: 'expected', text: 'The dashboard greets Maria by name', mediaType: 'text/plain' },
            { key: 'step-2-actual', name: 'actual', text: 'Dashboard heading: **Welcome back, Maria**', mediaType: 'text/markdown' },
          ],
        },
      ],
      cells: [{ key: 'device-log', name: 'log', text: LOG, mediaType: 'text/plain' }],
    },
    responses: {
      200: {
        steps: [
          { id: IDS.stepOpen, key: 'step-1', created: true, updated: false, cells: [] },
          {
            id: IDS.stepSignIn,
            key: 'step-2',
            created: true,
            updated: false,
            cells: [
              { id: IDS.cellExpected, key: 'step-2-expected', created: true },
              { id: IDS.cellActual, key: 'step-2-actual', created: true },
            ],
          },
        ],
        cells: [{ id: IDS.cellLog, key: 'device-log', created: true }],
      },
    },
  }),
  examplesOf(getResults, {
    responses: {
      200: {
        testRunId: IDS.run,
        status: 'completed',
        verdict: 'passed',
        failureGroupId: null,
        cells: [{ id: IDS.cellLog, key: 'device-log', name: 'log', mediaType: 'text/plain', text: LOG }],
        steps: [
          {
            id: IDS.stepOpen,
            key: 'step-1',
            parentId: null,
            title: 'Open the login page',
            status: 'passed',
            ...stepTimes.open,
            error: null,
            failureGroupId: null,
            cells: [],
          },
          {
            id: IDS.stepSignIn,
            key: 'step-2',
            parentId: null,
            title: `Sign in as ${TESTER_EMAIL}`,
            status: 'passed',
            ...stepTimes.signIn,
            error: null,
            failureGroupId: null,
            cells: [
              {
                id: IDS.cellExpected,
                key: 'step-2-expected',
                name: 'expected',
                mediaType: 'text/plain',
                text: 'The dashboard greets Maria by name',
              },
              {
                id: IDS.cellActual,
                key: 'step-2-actual',
                name: 'actual',
                mediaType: 'text/markdown',
                text: 'Dashboard heading: **Welcome back, Maria**',
              },
            ],
          },
        ],
      },
    },
  }),
  // A byte download whose JSON form is Xray's: typed by its schema, not by `examplesOf` (which covers JSON-only answers).
  [
    exportRun.operationId,
    {
      responses: {
        200: {
          info: {
            summary: 'Sign in with a valid password',
            description: `Exported from Attest: run ${IDS.run}, verdict passed.`,
            startDate: '2026-11-02T09:14:03.000Z',
            finishDate: '2026-11-02T09:14:21.000Z',
            testEnvironments: ['staging'],
          },
          tests: [
            {
              testInfo: {
                summary: 'Sign in with a valid password',
                type: 'Manual',
                steps: [{ action: 'Open the sign-in page', data: '', result: 'The form shows' }],
              },
              start: '2026-11-02T09:14:03.000Z',
              finish: '2026-11-02T09:14:21.000Z',
              status: 'PASSED',
              comment: '',
              evidence: [],
              steps: [
                {
                  status: 'PASSED',
                  actualResult: 'actual:\nThe form shows',
                  evidence: [{ data: 'iVBORw0KGgo=', filename: '1-open-the-sign-in-page_01-sign-in.png', contentType: 'image/png' }],
                },
              ],
            },
          ],
        } satisfies Static<typeof XrayExecution>,
      },
    },
  ] as [string, OperationExamples],
  // A job's Xray JSON: an automated test is Generic, keyed by its full name; a retry folded into it.
  [
    exportJob.operationId,
    {
      responses: {
        200: {
          info: {
            summary: 'Nightly web',
            description: `Exported from Attest: job ${IDS.job}.`,
            startDate: '2026-11-02T02:00:04.000Z',
            finishDate: '2026-11-02T02:03:41.000Z',
            revision: '9f2c4e1',
          },
          tests: [
            {
              testInfo: { summary: 'flaky login', type: 'Generic', definition: 'account.spec.ts › Account › flaky login' },
              start: '2026-11-02T02:01:10.000Z',
              finish: '2026-11-02T02:01:12.000Z',
              status: 'PASSED',
              comment: '2 attempts; the last one decides.\nAttempt 1: failed (Error: the session is ready on the retry)\nAttempt 2: passed',
              evidence: [],
            },
          ],
        } satisfies Static<typeof XrayExecution>,
      },
    },
  ] as [string, OperationExamples],
];
