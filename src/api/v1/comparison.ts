import { Type } from 'typebox';
import { NAME_MAX, Nullable, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { DeviceId } from './devices.ts';
import { Job } from './jobs.ts';
import { RunLabel } from './runs.ts';

const Verdict = Type.Union([
  Type.Literal('passed'),
  Type.Literal('failed'),
  Type.Literal('broken'),
  Type.Literal('skipped'),
  Type.Literal('flaky'),
]);

export const ComparedTest = Type.Object(
  {
    testKey: Type.String({ description: 'The test id, else `name:` and the run name: what identifies the test across jobs.' }),
    testId: Nullable(Uuid),
    deviceId: Nullable({
      ...DeviceId,
      description: 'A job that runs a test on several devices has one outcome per device, compared device by device.',
    }),
    name: Type.String({ maxLength: NAME_MAX }),
    verdict: Nullable({
      ...Verdict,
      description:
        'Its outcome in the job (retries folded: `flaky` when a failure was followed by a pass); null when absent or unfinished.',
    }),
    baseVerdict: Nullable({ ...Verdict, description: 'Its outcome in the base job; null when it did not run there.' }),
    attempts: Type.Integer({ minimum: 0 }),
    runId: Nullable(Uuid),
    baseRunId: Nullable(Uuid),
    failureGroupId: Nullable({ ...Uuid, description: "The error group of the final attempt's failure in the job, if it failed." }),
    quarantined: Type.Boolean(),
    health: Type.Union([Type.Literal('stable'), Type.Literal('flaky'), Type.Literal('broken')], {
      description: "Its health as it stood before the job (TRIAGE-6): its earlier outcomes scored, the job's own left out.",
    }),
    counted: Type.Boolean({ description: 'Whether it counts against the job: the job passes when no test and no new error group counts.' }),
    reason: Type.Union(
      [
        Type.Literal('new-failure'),
        Type.Literal('flaky-health'),
        Type.Literal('passed-on-retry'),
        Type.Literal('still-failing'),
        Type.Literal('broken'),
        Type.Literal('quarantined'),
        Type.Literal('fixed'),
        Type.Literal('passed'),
        Type.Literal('skipped'),
        Type.Literal('unfinished'),
      ],
      {
        description:
          'Why it counts or not. Counted: `new-failure` (failing, not failing in the base, health not broken) and, without ' +
          '`allowFlaky`, `passed-on-retry` (flaky in the job). Not counted: `flaky-health` (a new failure of a test whose ' +
          'health was flaky, with `allowFlaky`), `still-failing` (failing in the base too), `broken` (failing, its health ' +
          'broken: still failing, not new), `quarantined`, `fixed`, `passed`, `skipped`, `unfinished`.',
      },
    ),
  },
  { additionalProperties: false },
);

export const NewErrorGroup = Type.Object(
  {
    id: Uuid,
    title: Type.String(),
    category: Type.String({ maxLength: 20 }),
    status: Type.String({ maxLength: 20 }),
    defectType: Type.String({ maxLength: 20 }),
    issueUrl: Nullable(Type.String()),
    tests: Type.Integer({
      minimum: 1,
      description: 'Outcomes of the job (a test on a device, not quarantined) that failed with it, in any attempt.',
    }),
    flakyOnly: Type.Boolean({ description: 'Every such test passed in the end (flaky).' }),
    counted: Type.Boolean({ description: 'Whether it counts against the job.' }),
    reason: Type.Union([Type.Literal('new-group'), Type.Literal('tests-let-through')], {
      description:
        '`tests-let-through`: every test it failed is let through, as flaky with `allowFlaky` (`passed-on-retry`, ' +
        '`flaky-health`) or as broken before the job (`broken`); not counted.',
    }),
  },
  { additionalProperties: false },
);

const Count = Type.Integer({ minimum: 0 });

export const Comparison = Type.Object(
  {
    job: Job,
    base: Nullable({ ...Job, description: 'The job compared against; null when `baseBranch` has no completed job before this one.' }),
    counts: Type.Object(
      {
        tests: Count,
        newFailures: Count,
        fixed: Count,
        stillFailing: Count,
        newErrorGroups: Count,
        flaky: Count,
        quarantined: Count,
      },
      { additionalProperties: false },
    ),
    newFailures: Type.Array(ComparedTest, {
      description:
        'Failing in the job, not failing in the base (passed, flaky or absent there), health not broken, not quarantined; ' +
        'with `allowFlaky`, those whose health was flaky are listed with `counted: false`.',
    }),
    fixed: Type.Array(ComparedTest, { description: 'Failing in the base, passed or flaky in the job.' }),
    stillFailing: Type.Array(ComparedTest, {
      description: 'Failing in both, or failing in the job with its health broken before it; not quarantined.',
    }),
    flaky: Type.Array(ComparedTest, { description: 'Flaky in the job (a failed attempt, then a pass), not quarantined.' }),
    quarantined: Type.Array(ComparedTest, {
      description: 'Failing or flaky in the job, and quarantined: reported, never counted against the job.',
    }),
    newErrorGroups: Type.Array(NewErrorGroup, {
      description: 'Error groups that failed a test of the job and no run of the base (quarantined tests left out).',
    }),
    allowFlaky: Type.Boolean({ description: 'The `allowFlaky` asked with.' }),
    counted: Type.Object(
      { tests: Count, errorGroups: Count },
      { additionalProperties: false, description: 'Tests and new error groups that count against the job.' },
    ),
    pass: Type.Boolean({ description: 'No test and no new error group counts: what `attest gate` exits 0 on.' }),
  },
  { additionalProperties: false },
);

export const compareJobs = endpoint({
  operationId: 'compareJobs',
  method: 'GET',
  path: '/testmgmt/jobs/{jobId}/comparison',
  summary: 'What changed between a job and a base: new failures, fixed, still failing, new error groups, flaky, quarantined.',
  description:
    'Tests are matched across the two jobs by test (its id, else its run name), one outcome per test per job: the final ' +
    'attempt decides, and a failure followed by a pass is `flaky`. The base is `base` (a job of the same project), or the ' +
    'latest completed job on `baseBranch` created before this one; with neither, the latest completed job before it on ' +
    "this job's own branch. Without any base to be found, `base` is null and every failure counts as new. `attest gate` " +
    'turns this answer into a CI exit code.',
  tag: 'Triage',
  access: { scope: 'project', role: 'viewer' },
  params: Type.Object({ jobId: Uuid }, { additionalProperties: false }),
  querystring: Type.Object(
    {
      base: Type.Optional({ ...Uuid, description: 'The job to compare against.' }),
      baseBranch: Type.Optional({ ...RunLabel, description: 'Compare against the latest completed job on this branch.' }),
      allowFlaky: Type.Optional(
        Type.Boolean({
          description:
            "Let flakiness through: a test flaky in the job, and a new failure of a test whose health was flaky before it, don't count. Default false.",
        }),
      ),
    },
    { additionalProperties: false },
  ),
  responses: { 200: Comparison },
});
