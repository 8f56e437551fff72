import {
  createTest,
  getTest,
  getTestVersion,
  listLinks,
  listSuites,
  listTests,
  listTestVersions,
  updateTest,
} from '../../../api/v1/tests.ts';
import { ACTIVE_LIFECYCLE, CHECKOUT_FEATURE, CHECKOUT_TEST, IDS, LOGIN_FIRST_VERSION, LOGIN_TEST, LOGIN_V2, RUN } from './samples.ts';
import type { OperationExamples } from './types.ts';
import { examplesOf } from './types.ts';

// Writing and finding tests (docs/test-management.md): create, edit in versions, the suite tree, traceability.

export const testCaseExamples: [string, OperationExamples][] = [
  examplesOf(createTest, {
    request: {
      projectId: IDS.project,
      name: LOGIN_TEST.name,
      description: LOGIN_TEST.description,
      steps: LOGIN_TEST.steps,
      tags: LOGIN_TEST.tags,
    },
    text: CHECKOUT_FEATURE,
    responses: {
      201: {
        ...LOGIN_TEST,
        steps: LOGIN_FIRST_VERSION.steps,
        version: 1,
        updatedAt: LOGIN_TEST.createdAt,
        health: {
          state: 'stable',
          flakyScore: 0,
          runsConsidered: 0,
          quarantine: null,
          monitor: null,
          branch: null,
          evidence: null,
          lifecycle: ACTIVE_LIFECYCLE,
        },
      },
    },
  }),
  // The second step gains its test data: version 1 becomes version 2.
  examplesOf(updateTest, {
    request: { version: 1, steps: LOGIN_TEST.steps },
    text: CHECKOUT_FEATURE,
    responses: { 200: LOGIN_TEST },
  }),
  examplesOf(listTestVersions, { responses: { 200: { items: [LOGIN_V2, LOGIN_FIRST_VERSION], nextCursor: null } } }),
  examplesOf(getTestVersion, { responses: { 200: LOGIN_FIRST_VERSION } }),
  examplesOf(listSuites, {
    responses: {
      200: {
        items: [
          { path: 'Accounts', name: 'Accounts', parent: null, depth: 1, tests: 0, total: 1 },
          { path: 'Accounts/Login', name: 'Login', parent: 'Accounts', depth: 2, tests: 1, total: 1 },
          { path: 'Checkout', name: 'Checkout', parent: null, depth: 1, tests: 0, total: 1 },
          { path: 'Checkout/Payments', name: 'Payments', parent: 'Checkout', depth: 2, tests: 1, total: 1 },
        ],
        unsorted: 0,
        total: 2,
      },
    },
  }),
  examplesOf(listLinks, {
    responses: {
      200: {
        items: [
          {
            kind: 'requirement',
            key: 'SHOP-12',
            url: 'https://jira.example.com/browse/SHOP-12',
            title: 'Customers sign in with e-mail',
            tests: [
              {
                testId: IDS.testLogin,
                name: LOGIN_TEST.name,
                suite: LOGIN_TEST.suite,
                latestVerdict: 'passed',
                latestRunId: RUN.id,
                latestRunFinishedAt: RUN.finishedAt,
              },
            ],
            summary: { tests: 1, passed: 1, failed: 0, broken: 0, skipped: 0, notRun: 0 },
          },
          {
            kind: 'requirement',
            key: 'SHOP-40',
            url: null,
            title: 'Pay with a saved card',
            tests: [
              {
                testId: IDS.testCheckout,
                name: CHECKOUT_TEST.name,
                suite: CHECKOUT_TEST.suite,
                latestVerdict: null,
                latestRunId: null,
                latestRunFinishedAt: null,
              },
            ],
            summary: { tests: 1, passed: 0, failed: 0, broken: 0, skipped: 0, notRun: 1 },
          },
        ],
        nextCursor: null,
      },
    },
  }),
  examplesOf(listTests, { responses: { 200: { items: [CHECKOUT_TEST, LOGIN_TEST], nextCursor: null } } }),
  examplesOf(getTest, { responses: { 200: LOGIN_TEST } }),
];
