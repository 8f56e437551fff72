import { Type } from 'typebox';
import { ClientKey, IdempotencyKey, LABELS_MAX, NAME_MAX, Name, NoContent, Nullable, Page, PageQuery, Timestamp, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { DeviceId, DeviceLabel } from './devices.ts';
import { ProjectRef } from './projects.ts';
import { ResultItems } from './results.ts';

import { RunStatus, Verdict } from './run-states.ts';

export { RunStatus, Verdict } from './run-states.ts';

/** A run label (environment, branch, build, commit): free text on one line. */
const runLabel = (description: string) => Type.String({ minLength: 1, maxLength: NAME_MAX, pattern: '^[^\\r\\n]+$', description });
export const RunLabel = runLabel('A run label.');

/** The labels a run (or every run of a job) may carry; all optional, and each one a list filter. */
export const RunLabels = {
  environment: Type.Optional(runLabel('Where it ran, e.g. `staging`.')),
  branch: Type.Optional(runLabel('The source branch, e.g. `main`.')),
  build: Type.Optional(runLabel('The build name or number of the software under test.')),
  commit: Type.Optional(runLabel('The commit id of the software under test.')),
};

/**
 * The branch a pull (merge) request targets, for a job (TRIAGE-16): the job is compared with that
 * branch's latest completed job rather than the project's default branch.
 */
export const TargetBranch = runLabel(
  "The branch the pull request merges into (`GITHUB_BASE_REF`, `CI_MERGE_REQUEST_TARGET_BRANCH_NAME`, …): the job's base.",
);

/** The longest `ciUrl` a job or run takes. */
export const CI_URL_MAX = 2000;
/** A link to the CI build (pipeline, workflow run, job) that made a job or run: http(s) only, so the web page can link it safely. */
export const CiUrl = Type.String({
  minLength: 10,
  maxLength: CI_URL_MAX,
  pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[!-~]+$',
  description:
    'The CI build that made it, e.g. `https://github.com/acme/shop/actions/runs/4512`: an absolute http(s) URL of ' +
    `printable ASCII (percent-encode the rest), at most ${CI_URL_MAX} characters. Shown as a link on its page.`,
});

/** The name a runner goes by: one line of printable text, e.g. `lab-2-pixel-runner`. */
export const RunnerName = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: '^[^\\x00-\\x1F\\x7F]+$',
  description:
    'The name the runner goes by, at most 128 characters without control characters. Give every runner process its own: ' +
    'the lease belongs to the name.',
});

/** `?projectId=` of a list: the project's id or its short key in any case, as in paths. */
export const ProjectQuery = { ...ProjectRef, description: 'The project: its id, or its short key in any case (`WEB`, `web`).' };

/** Most attempts of one test in one job a run may say it is (Playwright's `retries` rarely passes 5). */
export const ATTEMPT_MAX = 100;
const ATTEMPT_DESCRIPTION =
  "The run's attempt at its test in its job: 0 for the first execution, 1, 2, … for retries (Playwright's `retry`). " +
  "The highest attempt decides the test's verdict in the job (docs/triage.md).";
const Attempt = Type.Integer({ minimum: 0, maximum: ATTEMPT_MAX, description: ATTEMPT_DESCRIPTION });

export const TestRun = Type.Object(
  {
    id: Uuid,
    projectId: Uuid,
    name: Type.String({ maxLength: NAME_MAX }),
    status: RunStatus,
    verdict: Nullable(Verdict),
    testId: Nullable(Uuid),
    testVersion: Nullable(
      Type.Integer({
        minimum: 1,
        description:
          'The version of its test the run executes (`GET /testmgmt/tests/{testId}/versions/{testVersion}`): the current ' +
          'one when the run was created (by `testId` or `testName`, by a job, or by an import). Null without a test.',
      }),
    ),
    jobId: Nullable(Uuid),
    deviceId: Nullable(DeviceId),
    environment: Nullable(RunLabel),
    branch: Nullable(RunLabel),
    build: Nullable(RunLabel),
    commit: Nullable(RunLabel),
    createdAt: Timestamp,
    startedAt: Nullable(Timestamp),
    finishedAt: Nullable(Timestamp),
    idempotencyKey: Nullable({ ...ClientKey, description: 'The key the run was created with, if any.' }),
    ciUrl: Nullable(CiUrl),
    attempt: Attempt,
    keep: Type.Boolean({ description: 'Never expired by retention (`PUT /testmgmt/testruns/{testRunId}/keep`).' }),
    runner: Nullable({
      ...RunnerName,
      description: 'The runner that claimed the run and holds its lease (`POST /testmgmt/testruns/claim`); null when none does.',
    }),
    leaseExpiresAt: Nullable({
      ...Timestamp,
      description:
        "When the runner's lease ends unless its heartbeat extends it; the run then goes back to the queue. Null without a lease.",
    }),
    failureGroupId: Nullable({
      ...Uuid,
      description:
        "The error group of the run's failure (`GET /projects/{projectId}/failures/{groupId}`); null unless it completed failed or broken.",
    }),
  },
  { additionalProperties: false },
);

/** The longest full name of a test (file › suite › title) that imports and reporters identify tests by. */
export const TEST_FULL_NAME_MAX = 2000;
export const TestFullName = Type.String({
  minLength: 1,
  maxLength: TEST_FULL_NAME_MAX,
  description: "The test's full name in its framework (file › suite › title): the project's test of that name, created once.",
});

const RunParams = Type.Object({ testRunId: Uuid }, { additionalProperties: false });

export const createRun = endpoint({
  operationId: 'createRun',
  method: 'POST',
  path: '/testmgmt/testruns',
  summary: 'Start a test run (tester); or record a whole finished run in one call.',
  description:
    '`testId` must name a test of the same project; `deviceId` a registered device. Without `verdict` the run is `running` ' +
    'from now on: results are appended with `POST /testmgmt/testruns/{testRunId}/results` and the run is finished with `PATCH`. ' +
    'With `verdict` the run is recorded completed in one transaction, together with its `results` (the same body as the ' +
    'results post) and optional `startedAt`/`finishedAt`: the bulk call of a reporter that sends a finished run at once. ' +
    'A reporter names its test by `testName` instead of `testId`: the full name the framework gives it (file › suite › ' +
    "title); the project's test of that full name is used, or created once, exactly as imports do, so history builds " +
    'up. `jobId` puts the run in a job of the same project that is not cancelled (a launch created with `testIds: []`). ' +
    'A launch its reporter closed (`POST /testmgmt/jobs/{jobId}/complete`) takes no more runs: 409 `STATE_CONFLICT`. ' +
    '`ciUrl` links the CI build that made the run. ' +
    'With an `idempotencyKey` already used in the project, the same body answers **200** with the run it created and ' +
    'records nothing; another body 409 `STATE_CONFLICT`. A new run answers **201**. This route takes the bulk body limit.',
  tag: 'Runs',
  access: { scope: 'project', role: 'tester' },
  bodyLimit: 'bulkBodyLimit',
  body: Type.Object(
    {
      projectId: Uuid,
      name: Name,
      testId: Type.Optional(Uuid),
      testName: Type.Optional(TestFullName),
      jobId: Type.Optional(Uuid),
      deviceId: Type.Optional(DeviceId),
      ...RunLabels,
      ciUrl: Type.Optional(CiUrl),
      attempt: Type.Optional(Type.Integer({ minimum: 0, maximum: ATTEMPT_MAX, description: `${ATTEMPT_DESCRIPTION} Default 0.` })),
      results: Type.Optional(ResultItems),
      idempotencyKey: IdempotencyKey('create (within the project)'),
      verdict: Type.Optional(Verdict),
      startedAt: Type.Optional(Timestamp),
      finishedAt: Type.Optional(Timestamp),
    },
    { additionalProperties: false },
  ),
  responses: { 200: TestRun, 201: TestRun },
});

export const listRuns = endpoint({
  operationId: 'listRuns',
  method: 'GET',
  path: '/testmgmt/testruns',
  summary: "A project's test runs, newest first, filtered by status, verdict, test, job, device, run label and creation time.",
  description:
    'Each run label has its own exact-match filter: `environment`, `branch`, `build`, `commit` (there is no combined ' +
    '`labels` parameter). `from` (inclusive) and `to` (exclusive) bound the creation time. Every filter narrows the list. ' +
    "`projectId` takes the id or the short key. With `jobId`, `projectId` may be left out: the job's project is listed, " +
    'and a job that does not exist or whose project the caller cannot see answers 404, as the job itself does.',
  tag: 'Runs',
  access: { scope: 'project', role: 'viewer' },
  querystring: Type.Object(
    {
      ...PageQuery,
      projectId: Type.Optional(ProjectQuery),
      status: Type.Optional(RunStatus),
      verdict: Type.Optional(Verdict),
      testId: Type.Optional(Uuid),
      jobId: Type.Optional(Uuid),
      deviceId: Type.Optional(DeviceId),
      ...RunLabels,
      from: Type.Optional(Timestamp),
      to: Type.Optional(Timestamp),
    },
    { additionalProperties: false },
  ),
  responses: { 200: Page(TestRun) },
});

export const getRun = endpoint({
  operationId: 'getRun',
  method: 'GET',
  path: '/testmgmt/testruns/{testRunId}',
  summary: 'Get a test run.',
  tag: 'Runs',
  access: { scope: 'project', role: 'viewer' },
  params: RunParams,
  responses: { 200: TestRun },
});

export const updateRun = endpoint({
  operationId: 'updateRun',
  method: 'PATCH',
  path: '/testmgmt/testruns/{testRunId}',
  summary: 'Move a run on: start a queued run, complete a running one with a verdict, or abort (tester).',
  description:
    'Allowed: `queued → running`, `running → completed` (with `verdict`), `queued|running → aborted`. `verdict` is ' +
    'required with `completed` and refused otherwise. Completing or aborting sets `finishedAt` and freezes the results. ' +
    'Asking for the state the run is already in (the same verdict for a completed run) changes nothing and answers 200, ' +
    'so a retried call is safe; any other change answers 409 `STATE_CONFLICT`.',
  tag: 'Runs',
  access: { scope: 'project', role: 'tester' },
  params: RunParams,
  body: Type.Object(
    {
      status: Type.Union([Type.Literal('running'), Type.Literal('completed'), Type.Literal('aborted')]),
      verdict: Type.Optional(Verdict),
    },
    { additionalProperties: false },
  ),
  responses: { 200: TestRun },
});

export const deleteRun = endpoint({
  operationId: 'deleteRun',
  method: 'DELETE',
  path: '/testmgmt/testruns/{testRunId}',
  summary: 'Delete a run with its steps, cells and artifacts (manager).',
  description:
    'Everything the run holds goes in one transaction, and the deletion is audited (`run.delete`). The bytes of its ' +
    'screenshots and files are freed by blob garbage collection once no other artifact shares them. A run already ' +
    'deleted, or never there, answers 404: a repeated delete changes nothing.',
  tag: 'Runs',
  access: { scope: 'project', role: 'manager' },
  params: RunParams,
  responses: { 204: NoContent },
});

export const keepRun = endpoint({
  operationId: 'keepRun',
  method: 'PUT',
  path: '/testmgmt/testruns/{testRunId}/keep',
  summary: 'Mark a finished run to keep (never expired by retention), or unmark it (tester).',
  description:
    'Only a completed or aborted run can be marked; a run still queued or running is a 409. Setting what is already set changes nothing.',
  tag: 'Runs',
  access: { scope: 'project', role: 'tester' },
  params: RunParams,
  body: Type.Object({ keep: Type.Boolean() }, { additionalProperties: false }),
  responses: { 200: TestRun },
});

/** Most devices one claim may name. */
export const CLAIM_DEVICES_MAX = 1000;
/** The bounds and default of a runner's lease, in seconds. */
export const LEASE_SECONDS_MIN = 5;
export const LEASE_SECONDS_MAX = 3600;
export const LEASE_SECONDS_DEFAULT = 300;

const LeaseSeconds = Type.Integer({
  minimum: LEASE_SECONDS_MIN,
  maximum: LEASE_SECONDS_MAX,
  description: `How long the lease lasts from now, in seconds (default ${LEASE_SECONDS_DEFAULT}).`,
});

export const claimRun = endpoint({
  operationId: 'claimRun',
  method: 'POST',
  path: '/testmgmt/testruns/claim',
  summary: 'A runner takes the oldest queued run it can serve, under a lease (tester).',
  description:
    'Hands the oldest queued run (by creation time) that matches to this caller alone, marks it `running` (`startedAt` ' +
    'now) and leases it to `runner` until `leaseExpiresAt`, both in the answer. Concurrent claims, through any instance, ' +
    'never get the same run. **204** when no queued run matches.\n\n' +
    'A run on a device matches when `deviceIds` names the device, or when the device carries every one of ' +
    '`deviceLabels`; a run without a device (a job that named none) matches every claim. Runs come from the projects ' +
    'the caller is a member of (every project for an admin), only from `projectId` when it is given; a project the ' +
    'caller cannot see is a 404.\n\n' +
    'The runner keeps its lease with `POST /testmgmt/testruns/{testRunId}/heartbeat` before `leaseExpiresAt`, and ends ' +
    'it by completing or aborting the run (`PATCH /testmgmt/testruns/{testRunId}`). A lease that expires returns the run ' +
    'to the queue (`queued`, without runner or `startedAt`) for the next claim, and its job counts it queued again. A ' +
    'claim is not retried by the client: an answer lost on the way leaves its run leased until the lease expires.',
  tag: 'Runners',
  access: { scope: 'project', role: 'tester' },
  body: Type.Object(
    {
      runner: RunnerName,
      deviceIds: Type.Optional(
        Type.Array(DeviceId, { maxItems: CLAIM_DEVICES_MAX, uniqueItems: true, description: 'The devices this runner serves.' }),
      ),
      deviceLabels: Type.Optional(
        Type.Array(DeviceLabel, {
          maxItems: LABELS_MAX,
          uniqueItems: true,
          description: 'This runner also serves any device that carries every one of these labels.',
        }),
      ),
      projectId: Type.Optional({ ...Uuid, description: "Only this project's runs." }),
      leaseSeconds: Type.Optional(LeaseSeconds),
    },
    { additionalProperties: false },
  ),
  responses: { 200: TestRun, 204: NoContent },
});

export const heartbeatRun = endpoint({
  operationId: 'heartbeatRun',
  method: 'POST',
  path: '/testmgmt/testruns/{testRunId}/heartbeat',
  summary: 'A runner extends the lease it holds on a run it claimed (tester).',
  description:
    'Sets the lease of `runner` on the run to end `leaseSeconds` from now and answers the run. A repeated heartbeat ' +
    'does no harm, so the client retries it. 409 `STATE_CONFLICT` when `runner` holds no live lease on the run: it ' +
    'expired (the run is back in the queue, or about to be), another runner holds it, the run is finished, or it was ' +
    'never claimed. The runner must then stop working on the run. Results and uploads are authorised by key and ' +
    'project, not by lease: what a runner still posts after losing its lease is accepted while the run is running.',
  tag: 'Runners',
  access: { scope: 'project', role: 'tester' },
  params: RunParams,
  body: Type.Object({ runner: RunnerName, leaseSeconds: Type.Optional(LeaseSeconds) }, { additionalProperties: false }),
  responses: { 200: TestRun },
});
