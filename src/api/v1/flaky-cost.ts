import { Type } from 'typebox';
import { NAME_MAX, Nullable, Timestamp, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { ProjectParams } from './projects.ts';

// What flakiness costs in CI time (TRIAGE-15, docs/triage.md).

/** Most days the flaky cost looks back. */
export const FLAKY_COST_DAYS_MAX = 90;
/** The days it looks back unless asked (here and in the tests list's `sort=flakyCost`). */
export const FLAKY_COST_DAYS_DEFAULT = 30;

const Count = Type.Integer({ minimum: 0 });
const Ms = Type.Integer({ minimum: 0, description: 'Milliseconds of CI time.' });

export const FlakyCostSummary = Type.Object(
  {
    retriedFailures: Type.Object(
      {
        attempts: { ...Count, description: 'Failed or broken attempts of tests that passed on a later attempt of the same job.' },
        durationMs: { ...Ms, description: 'Their lengths added up (finish minus start of each attempt).' },
      },
      { additionalProperties: false },
    ),
    flakyOnlyJobs: Type.Object(
      {
        jobs: { ...Count, description: 'Jobs whose only failures were of tests that passed on a retry (none failed in the end).' },
        durationMs: { ...Ms, description: "Their lengths added up (each job's first start to its last finish)." },
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export const FlakyCost = Type.Object(
  {
    days: Type.Integer({ minimum: 1, maximum: FLAKY_COST_DAYS_MAX }),
    since: { ...Timestamp, description: 'The start of the window: midnight UTC, `days − 1` days before today (as the dashboard).' },
    testId: Nullable({ ...Uuid, description: 'The test asked for, or null for the whole project.' }),
    ...FlakyCostSummary.properties,
    tests: Type.Array(
      Type.Object(
        { testId: Uuid, name: Type.String({ maxLength: NAME_MAX }), attempts: Count, durationMs: Ms },
        { additionalProperties: false },
      ),
      { maxItems: 1000, description: 'The flaky cost per test, costliest first (at most 1,000).' },
    ),
    attempts: Type.Array(
      Type.Object(
        {
          runId: Uuid,
          jobId: Uuid,
          testId: Uuid,
          name: Type.String({ maxLength: NAME_MAX }),
          attempt: Count,
          verdict: Type.Union([Type.Literal('failed'), Type.Literal('broken')]),
          durationMs: Ms,
        },
        { additionalProperties: false },
      ),
      { maxItems: 1000, description: 'The attempts `retriedFailures` counts, longest first (at most 1,000).' },
    ),
    jobs: Type.Array(
      Type.Object(
        { jobId: Uuid, name: Type.String({ maxLength: NAME_MAX }), flakyTests: Count, durationMs: Ms },
        { additionalProperties: false },
      ),
      { maxItems: 1000, description: 'The jobs `flakyOnlyJobs` counts, longest first (at most 1,000).' },
    ),
    truncated: Type.Boolean({
      description: 'True when the window held more than 20,000 tests retried in a job: the figures count the first 20,000.',
    }),
  },
  { additionalProperties: false },
);

export const getFlakyCost = endpoint({
  operationId: 'getFlakyCost',
  method: 'GET',
  path: '/projects/{projectId}/flaky-cost',
  summary: 'What flakiness cost in CI time over a window: retried failures and flaky-only jobs, with the rows behind each figure.',
  description:
    'A retried failure is a failed or broken attempt of a test whose final attempt in the same job passed (the test is ' +
    '`flaky` there, retries folded as everywhere). A flaky-only job is a job where such tests failed and no test failed ' +
    `in the end. \`days\` (1 to ${FLAKY_COST_DAYS_MAX}, default ${FLAKY_COST_DAYS_DEFAULT}) sets the window, by the attempts’ finish; \`testId\` narrows it to one test.`,
  tag: 'Triage',
  access: { scope: 'project', role: 'viewer' },
  params: ProjectParams,
  querystring: Type.Object(
    {
      days: Type.Optional(Type.Integer({ minimum: 1, maximum: FLAKY_COST_DAYS_MAX, default: FLAKY_COST_DAYS_DEFAULT })),
      testId: Type.Optional(Uuid),
    },
    { additionalProperties: false },
  ),
  responses: { 200: FlakyCost },
});
