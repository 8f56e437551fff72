import type { Static } from 'typebox';
import {
  type FailureGroup,
  getFailureGroup,
  getFailureRules,
  getRunFailures,
  listFailureGroups,
  putFailureRules,
  triageFailureGroup,
  triageFailureGroups,
} from '../../../api/v1/failures.ts';
import { IDS, TESTER_EMAIL } from './samples.ts';
import type { OperationExamples } from './types.ts';
import { examplesOf } from './types.ts';

// The error groups of the example project: the checkout API's 500, seen in two nightly jobs and triaged.

const GROUP_ID = '0e1f2a3b-4c5d-4e6f-8a7b-9c0d1e2f3a4b';
const OTHER_GROUP_ID = '1f2a3b4c-5d6e-4f7a-9b8c-0d1e2f3a4b5c';

export const GROUP: Static<typeof FailureGroup> = {
  id: GROUP_ID,
  projectId: IDS.project,
  fingerprint: '9c4f1e0a7b2d5c8e3f6a1b4d7e0c3f6a9b2e5d8c1f4a7b0e3d6c9f2a5b8e1d4c',
  title: 'expected:<200> but was:<500> from http://localhost:<port>/api/orders/<n>',
  message: 'expected:<200> but was:<500> from http://localhost:41207/api/orders/1001',
  frames: ['tests/checkout.spec.ts:payWithCard'],
  category: 'assertion',
  action: 'assertEquals',
  target: 'http://localhost:<port>/api/orders/<n>',
  rule: 'Server errors',
  status: 'known',
  defectType: 'product_bug',
  comment: 'The orders API answers 500 when the card is saved.',
  issueUrl: 'https://issues.example.com/SHOP-12',
  assignee: TESTER_EMAIL,
  firstSeenAt: '2026-03-01T09:14:09.730Z',
  firstSeenRunId: IDS.olderRun,
  firstSeenJobId: null,
  lastSeenAt: '2026-03-02T09:14:09.730Z',
  lastSeenRunId: IDS.jobRun,
  lastSeenJobId: IDS.job,
  occurrences: 2,
  affectedTests: 1,
  affectedBranches: 1,
  triagedAt: '2026-03-02T10:02:00.000Z',
  triagedBy: IDS.tester,
};

const OTHER: Static<typeof FailureGroup> = {
  ...GROUP,
  id: OTHER_GROUP_ID,
  fingerprint: '2b5e8d1c4f7a0e3d6c9f2a5b8e1d4c7f0a3b6e9d2c5f8a1b4e7d0c3f6a9b2e5d',
  title: "Timeout <n>ms exceeded waiting for locator('#voucher')",
  message: "Timeout 3010ms exceeded waiting for locator('#voucher')",
  frames: ['tests/voucher.spec.ts:applyVoucher'],
  category: 'timeout',
  action: 'waitFor',
  target: "locator('#voucher')",
  rule: null,
  status: 'new',
  defectType: 'to_investigate',
  comment: null,
  issueUrl: null,
  assignee: null,
  firstSeenRunId: IDS.jobRun,
  firstSeenJobId: IDS.job,
  firstSeenAt: '2026-03-02T09:14:09.730Z',
  occurrences: 1,
  triagedAt: null,
  triagedBy: null,
};

const RULES = {
  rules: [
    {
      name: 'Server errors',
      messageRegex: '.*but was:<5\\d\\d>.*',
      matchedStatuses: ['failed' as const],
      defectType: 'product_bug' as const,
    },
    { name: 'Lab network', messageRegex: '.*ECONNREFUSED.*', defectType: 'system_issue' as const },
  ],
};

export const failureExamples: [string, OperationExamples][] = [
  examplesOf(listFailureGroups, { responses: { 200: { items: [GROUP, OTHER], nextCursor: null } } }),
  examplesOf(getFailureGroup, {
    responses: {
      200: {
        ...GROUP,
        latestOccurrences: [
          {
            runId: IDS.jobRun,
            runName: 'Checkout with a saved card on iPhone 13',
            stepId: IDS.stepSignIn,
            stepTitle: 'Pay with the saved card',
            testId: IDS.testCheckout,
            jobId: IDS.job,
            branch: 'main',
            at: '2026-03-02T09:14:09.730Z',
            screenshotId: IDS.screenshot,
          },
        ],
        trend: [
          { day: '2026-03-01', occurrences: 1 },
          { day: '2026-03-02', occurrences: 1 },
        ],
      },
    },
  }),
  examplesOf(triageFailureGroup, {
    request: { defectType: 'product_bug', issueUrl: 'https://issues.example.com/SHOP-12', assignee: TESTER_EMAIL },
    responses: { 200: GROUP },
  }),
  examplesOf(triageFailureGroups, {
    request: { groupIds: [GROUP_ID, OTHER_GROUP_ID], changes: { assignee: TESTER_EMAIL } },
    responses: { 200: { items: [GROUP, { ...OTHER, assignee: TESTER_EMAIL, triagedAt: GROUP.triagedAt, triagedBy: IDS.tester }] } },
  }),
  examplesOf(getFailureRules, { responses: { 200: RULES } }),
  examplesOf(putFailureRules, { request: RULES, responses: { 200: RULES } }),
  examplesOf(getRunFailures, { responses: { 200: { items: [GROUP] } } }),
];
