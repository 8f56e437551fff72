import { getImport, importReport, listImports } from '../../../api/v1/imports.ts';
import { IDS } from './samples.ts';
import { examplesOf } from './types.ts';

const QUEUED = {
  id: IDS.import,
  projectId: IDS.project,
  status: 'queued' as const,
  fileName: 'playwright-report.zip',
  size: 1_482_113,
  sha256: '3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b',
  jobId: null,
  progress: { done: 0, total: null },
  options: { branch: 'main', build: '2026.11.25', idempotencyKey: 'ci-4512-playwright' },
  counts: null,
  files: [],
  error: null,
  createdAt: '2026-03-02T09:30:00.000Z',
  startedAt: null,
  finishedAt: null,
};

const COMPLETED = {
  ...QUEUED,
  status: 'completed' as const,
  jobId: IDS.importJob,
  progress: { done: 44, total: 44 },
  counts: {
    reports: 1,
    tests: 42,
    testsCreated: 3,
    runs: 44,
    passed: 40,
    failed: 3,
    broken: 0,
    skipped: 1,
    steps: 318,
    cells: 12,
    attachments: 5,
    attachmentsMissing: 1,
  },
  files: [
    {
      file: 'report.json',
      format: 'playwright' as const,
      runs: 44,
      errors: ['attachment "trace" names /builds/web/test-results/cart-chromium/trace.zip, which the upload does not hold'],
    },
  ],
  startedAt: '2026-03-02T09:30:00.041Z',
  finishedAt: '2026-03-02T09:30:01.262Z',
};

/** Reports imported as jobs. */
export const importExamples = [
  examplesOf(importReport, {
    request: { file: '(the ZIP bytes)', options: QUEUED.options },
    text: [
      '<?xml version="1.0" encoding="UTF-8"?>',
      '<testsuites name="web" tests="2" failures="1">',
      '  <testsuite name="com.example.LoginTest" tests="2" failures="1" timestamp="2026-03-02T09:29:12">',
      '    <testcase classname="com.example.LoginTest" name="signsIn" time="1.204"/>',
      '    <testcase classname="com.example.LoginTest" name="rejectsBadPassword" time="0.877">',
      '      <failure message="expected 401 but was 500" type="AssertionError">at LoginTest.java:42</failure>',
      '      <system-out>[[ATTACHMENT|screenshots/bad-password.png]]</system-out>',
      '    </testcase>',
      '  </testsuite>',
      '</testsuites>',
    ].join('\n'),
    responses: { 202: QUEUED, 200: COMPLETED },
  }),
  examplesOf(getImport, { responses: { 200: COMPLETED } }),
  examplesOf(listImports, { responses: { 200: { items: [COMPLETED], nextCursor: null } } }),
];
