import type { Static } from 'typebox';
import type { ArtifactDetails, ArtifactImage } from '../../../api/v1/artifacts.ts';
import type { Device } from '../../../api/v1/devices.ts';
import { type Project, TRIAGE_DEFAULTS } from '../../../api/v1/projects.ts';
import type { TestRun } from '../../../api/v1/runs.ts';
import type { TestDefinition, TestVersion } from '../../../api/v1/tests.ts';
import type { User } from '../../../api/v1/users.ts';

// The fixed cast of the examples: one project, its people, devices, tests, a job, a run with its
// steps and a screenshot. Every operation's example names these, so the ids line up across the
// document (the run's id in its results, its step's id in its screenshot, …).

export const IDS = {
  project: '3f6c1a52-8e4b-4c1d-9a27-5b0e6d2f8c41',
  admin: '0b9d7e34-2c51-4f8a-b6e3-91a4c7d05e12',
  tester: '7c2e9f01-5a3b-4d6c-8e7f-2b1a0c9d8e76',
  testerKey: 'e4a1b7c9-3d2f-4e58-a6b0-7c9d1e2f3a45',
  sessionKey: '5d8f2a6c-1b4e-4c7a-9f30-8e2d6b1c4a97',
  testLogin: 'a2c4e6f8-1b3d-4f5a-8c7e-9d0b2a4c6e81',
  testCheckout: 'b7d9f1a3-5c2e-4a6b-9d8f-0e1c3b5a7d92',
  job: 'c5e7a9b1-3d4f-4b6c-8a2e-7f9d1c3b5e04',
  jobRun: 'd1f3b5c7-9e2a-4c4d-b6f8-0a2c4e6b8d15',
  run: 'f0e2d4c6-8b1a-4e3c-9f5d-7a9b1c3e5d26',
  stepOpen: '1a3c5e7f-9b2d-4f4a-8c6e-0d2f4b6a8c37',
  stepSignIn: '2b4d6f8a-0c3e-4a5b-9d7f-1e3a5c7b9d48',
  cellExpected: '3c5e7a9b-1d4f-4b6c-8e8a-2f4b6d8c0e59',
  cellActual: '4d6f8b0c-2e5a-4c7d-9f9b-3a5c7e9d1f60',
  cellLog: '5e7a9c1d-3f6b-4d8e-a0ac-4b6d8f0e2a71',
  screenshot: '6f8b0d2e-4a7c-4e9f-b1bd-5c7e9a1f3b82',
  screenshotImage: '7a9c1e3f-5b8d-4fa0-82ce-6d8f0b2a4c93',
  logArtifact: '8b0d2f4a-6c9e-4ab1-93df-7e9a1c3b5da4',
  auditEntry: '9c1e3a5b-7d0f-4bc2-a4e0-8f0b2d4c6eb5',
  request: 'ab2f4b6c-8e1a-4cd3-b5f1-9a1c3e5d7fc6',
  import: 'bc3a5c7d-9f2b-4de4-86a2-0b2d4f6e8ad7',
  importJob: 'cd4b6d8e-0a3c-4ef5-97b3-1c3e5a7f9be8',
  olderRun: 'de5c7e9f-1b4d-4fa6-a8c4-2d4f6b8a0cf9',
  launch: 'ef6d8f0a-2c5e-4ab7-b9d5-3e5a7c9b1da0',
} as const;

export const DEVICE_ID = 'R58M123ABC';
export const IPHONE_ID = '00008110-001A2C3E0E38801E';
export const ADMIN_EMAIL = 'admin@example.com';
export const TESTER_EMAIL = 'maria.lopez@example.com';
export const SCREENSHOT_SHA256 = '3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b';

export const RUN_LABELS = { environment: 'staging', branch: 'main', build: '2026.3.1-rc.2', commit: '9f2c4e1b7a3d' };

export const PROJECT: Static<typeof Project> = {
  id: IDS.project,
  key: 'WEB',
  name: 'Web shop',
  description: 'The customer-facing shop: browser and mobile web.',
  createdAt: '2026-01-12T08:30:00.000Z',
  updatedAt: '2026-02-03T14:05:11.000Z',
  retention: { days: 30, failedDays: 90, lastRunsPerTest: 20 },
  // 1,240 screenshots and logs of 318 runs; identical screenshots stored once.
  usage: { runs: 318, artifacts: 1240, logicalBytes: 61_440_000, storedBytes: 38_912_000, quotaBytes: 10_737_418_240 },
  // The example project sets no thresholds of its own.
  triage: TRIAGE_DEFAULTS,
  defaultBranch: 'main',
  defaultBranchInferred: false,
};

export const ADMIN: Static<typeof User> = {
  id: IDS.admin,
  email: ADMIN_EMAIL,
  name: 'Lab Admin',
  roles: ['admin'],
  hasPassword: true,
  createdAt: '2026-01-05T09:00:00.000Z',
  updatedAt: '2026-01-05T09:00:00.000Z',
};

export const TESTER: Static<typeof User> = {
  id: IDS.tester,
  email: TESTER_EMAIL,
  name: 'Maria Lopez',
  roles: ['tester'],
  hasPassword: true,
  createdAt: '2026-01-12T08:45:20.000Z',
  updatedAt: '2026-01-12T08:45:20.000Z',
};

export const DEVICE: Static<typeof Device> = {
  id: DEVICE_ID,
  name: 'Galaxy S21 (lab shelf 2)',
  platform: 'android',
  osVersion: '14',
  model: 'SM-G991B',
  manufacturer: 'samsung',
  status: 'available',
  labels: ['android', 'phone', 'lab-2'],
  lastSeenAt: '2026-03-02T09:12:40.000Z',
  createdAt: '2026-01-15T10:20:00.000Z',
  updatedAt: '2026-03-02T09:12:40.000Z',
};

export const IPHONE: Static<typeof Device> = {
  id: IPHONE_ID,
  name: 'iPhone 13',
  platform: 'ios',
  osVersion: '17.4',
  model: 'iPhone14,5',
  manufacturer: 'Apple',
  status: 'busy',
  labels: ['ios', 'phone', 'lab-2'],
  lastSeenAt: '2026-03-02T09:13:05.000Z',
  createdAt: '2026-01-15T10:25:00.000Z',
  updatedAt: '2026-03-02T09:13:05.000Z',
};

/** The lifecycle of a test outside quarantine (TRIAGE-13). */
export const ACTIVE_LIFECYCLE: Static<typeof TestDefinition>['health']['lifecycle'] = { state: 'active', fixAttempt: null, disabled: null };

/** The login test's health: flaky, and quarantined while someone looks at it. */
export const LOGIN_HEALTH: Static<typeof TestDefinition>['health'] = {
  state: 'flaky',
  flakyScore: 0.2,
  runsConsidered: 30,
  quarantine: {
    owner: TESTER_EMAIL,
    reason: 'Times out on the lab Wi-Fi; see LAB-812',
    expiresAt: '2026-03-16T09:00:00.000Z',
    expired: false,
  },
  lifecycle: { state: 'quarantined', fixAttempt: null, disabled: null },
  monitor: 'retry',
  branch: 'main',
  evidence: {
    events: 2,
    samples: 20,
    runs: [
      { runId: IDS.run, jobId: IDS.job, url: `https://attest.example.com/runs/${IDS.run}` },
      { runId: IDS.olderRun, jobId: IDS.importJob, url: `https://attest.example.com/runs/${IDS.olderRun}` },
    ],
  },
};

export const LOGIN_TEST: Static<typeof TestDefinition> = {
  id: IDS.testLogin,
  projectId: IDS.project,
  name: 'Login with valid credentials',
  description: 'A registered customer signs in with e-mail and password.',
  steps: [
    { action: 'Open the login page', expected: 'The e-mail and password fields are shown' },
    { action: 'Sign in', data: `${TESTER_EMAIL} / a valid password`, expected: 'The dashboard greets Maria by name' },
  ],
  tags: ['smoke', 'login'],
  suite: 'Accounts/Login',
  links: [{ kind: 'requirement', key: 'SHOP-12', url: 'https://jira.example.com/browse/SHOP-12', title: 'Customers sign in with e-mail' }],
  sourceFormat: 'json',
  source: null,
  version: 2,
  createdAt: '2026-02-10T11:00:00.000Z',
  createdBy: IDS.tester,
  updatedAt: '2026-02-12T08:40:00.000Z',
  updatedBy: IDS.tester,
  health: LOGIN_HEALTH,
};

/** The login test as first written, before its second step gained test data. */
export const LOGIN_FIRST_VERSION: Static<typeof TestVersion> = {
  testId: IDS.testLogin,
  version: 1,
  current: false,
  name: LOGIN_TEST.name,
  description: LOGIN_TEST.description,
  steps: LOGIN_TEST.steps.map(({ action, expected }) => ({ action, expected })),
  tags: LOGIN_TEST.tags,
  suite: LOGIN_TEST.suite,
  links: LOGIN_TEST.links,
  sourceFormat: 'json',
  source: null,
  createdAt: LOGIN_TEST.createdAt,
  createdBy: IDS.tester,
};

export const LOGIN_V2: Static<typeof TestVersion> = {
  ...LOGIN_FIRST_VERSION,
  version: 2,
  current: true,
  steps: LOGIN_TEST.steps,
  createdAt: LOGIN_TEST.updatedAt,
};

export const CHECKOUT_FEATURE = [
  '@smoke @checkout',
  'Feature: Checkout with a saved card',
  '  A signed-in customer pays for the basket with the card on file.',
  '',
  '  Scenario: Pay with the saved card',
  '    Given I am signed in with a basket of 2 items',
  '    When I check out with my saved card',
  '    Then the order confirmation shows the order number',
  '',
].join('\n');

export const CHECKOUT_TEST: Static<typeof TestDefinition> = {
  id: IDS.testCheckout,
  projectId: IDS.project,
  name: 'Checkout with a saved card',
  description: 'A signed-in customer pays for the basket with the card on file.',
  steps: [
    { action: 'Given I am signed in with a basket of 2 items', expected: '' },
    { action: 'When I check out with my saved card', expected: 'Then the order confirmation shows the order number' },
  ],
  tags: ['smoke', 'checkout'],
  suite: 'Checkout/Payments',
  links: [{ kind: 'requirement', key: 'SHOP-40', title: 'Pay with a saved card' }],
  sourceFormat: 'gherkin',
  source: CHECKOUT_FEATURE,
  version: 1,
  createdAt: '2026-02-11T15:30:00.000Z',
  createdBy: IDS.tester,
  updatedAt: '2026-02-11T15:30:00.000Z',
  updatedBy: IDS.tester,
  health: {
    state: 'stable',
    flakyScore: 0,
    runsConsidered: 12,
    quarantine: null,
    monitor: null,
    branch: 'main',
    evidence: null,
    lifecycle: ACTIVE_LIFECYCLE,
  },
};

/** The CI build the example job and runs came from. */
export const CI_URL = 'https://github.com/acme/shop/actions/runs/4512';

/** The run every results and artifact example belongs to, once completed. */
export const RUN: Static<typeof TestRun> = {
  id: IDS.run,
  projectId: IDS.project,
  name: 'Login with valid credentials on Galaxy S21',
  status: 'completed',
  verdict: 'passed',
  testId: IDS.testLogin,
  testVersion: 2,
  jobId: null,
  deviceId: DEVICE_ID,
  ...RUN_LABELS,
  createdAt: '2026-03-02T09:14:02.118Z',
  startedAt: '2026-03-02T09:14:02.118Z',
  finishedAt: '2026-03-02T09:14:09.730Z',
  idempotencyKey: 'ci-4512-login-R58M123ABC',
  ciUrl: CI_URL,
  attempt: 0,
  keep: false,
  runner: null,
  leaseExpiresAt: null,
  failureGroupId: null,
};

/** The same run while it is under way. */
export const RUNNING_RUN: Static<typeof TestRun> = { ...RUN, status: 'running', verdict: null, finishedAt: null };

/** The runner attached to the lab's iPhones, which claims their queued runs. */
export const RUNNER = 'lab-2-iphone-runner';

/** A run of the job, claimed by the lab's runner and still running on the iPhone. */
export const JOB_RUN: Static<typeof TestRun> = {
  ...RUNNING_RUN,
  id: IDS.jobRun,
  name: 'Checkout with a saved card on iPhone 13',
  testId: IDS.testCheckout,
  testVersion: 1,
  jobId: IDS.job,
  deviceId: IPHONE_ID,
  createdAt: '2026-03-02T09:00:00.412Z',
  startedAt: '2026-03-02T09:13:05.006Z',
  idempotencyKey: null,
  runner: RUNNER,
  leaseExpiresAt: '2026-03-02T09:18:05.006Z',
};

export const SCREENSHOT_IMAGE: Static<typeof ArtifactImage> = {
  id: IDS.screenshotImage,
  role: 'screenshot',
  // The contract's union of RASTER_TYPES is built with map(), so its static type is `never`; the presenter casts alike.
  contentType: 'image/png' as Static<typeof ArtifactImage>['contentType'],
  width: 1080,
  height: 2400,
  size: 482133,
  sha256: SCREENSHOT_SHA256,
};

/** The screenshot the sign-in step took, with its one image. */
export const SCREENSHOT: Static<typeof ArtifactDetails> = {
  id: IDS.screenshot,
  projectId: IDS.project,
  testRunId: IDS.run,
  stepId: IDS.stepSignIn,
  kind: 'screenshot',
  name: 'dashboard-after-sign-in.png',
  contentType: 'image/png',
  size: 482133,
  sha256: SCREENSHOT_SHA256,
  idempotencyKey: 'step-2-screenshot',
  createdAt: '2026-03-02T09:14:08.904Z',
  images: [SCREENSHOT_IMAGE],
};
