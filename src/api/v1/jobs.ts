import { Type } from 'typebox';
import { IdempotencyKey, LABEL_MAX, NAME_MAX, Name, NoContent, Nullable, Page, PageQuery, Timestamp, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { DeviceId } from './devices.ts';
import { Repository } from './integrations.ts';
import { EXPORT_FORMATS, exportBody } from './results.ts';
import { CiUrl, ProjectQuery, RunLabel, RunLabels, TargetBranch } from './runs.ts';

/** Most tests, devices and device labels one job may name. */
export const JOB_TESTS_MAX = 1000;
export const JOB_DEVICES_MAX = 1000;
export const JOB_LABELS_MAX = 50;
/** Most runs one job may fan out into (tests × devices). */
export const JOB_RUNS_MAX = 10_000;

const DeviceLabel = Type.String({ minLength: 1, maxLength: LABEL_MAX, pattern: '^[^\\s,]+$' });

export const JobStatus = Type.Union([
  Type.Literal('queued'),
  Type.Literal('running'),
  Type.Literal('completed'),
  Type.Literal('cancelled'),
]);

const count = (description: string) => Type.Integer({ minimum: 0, maximum: JOB_RUNS_MAX, description });

/** How far a job's runs have got; every count is a number of runs. */
/** The job's tests, each counted once whatever its retries (TRIAGE-5, docs/triage.md). */
export const JobTestProgress = Type.Object(
  {
    total: count('Distinct tests of the job (by test id, else run name).'),
    passed: count('Tests whose final attempt passed, with no failed attempt.'),
    failed: count('Tests whose final attempt failed.'),
    broken: count('Tests whose final attempt broke.'),
    skipped: count('Tests whose final attempt was skipped.'),
    flaky: count('Tests whose final attempt passed after an attempt failed or broke.'),
    unfinished: count('Tests whose final attempt has no verdict yet (queued, running, or aborted).'),
  },
  {
    additionalProperties: false,
    description: 'Per test: the final attempt (highest `attempt`, then latest created) decides; attempts stay runs in the counts beside.',
  },
);

export const JobProgress = Type.Object(
  {
    total: count('Every run of the job.'),
    queued: count('Runs waiting for a runner.'),
    running: count('Runs under way.'),
    completed: count('Runs completed with a verdict: passed + failed + broken + skipped.'),
    aborted: count('Runs aborted, including the queued runs a cancel aborted.'),
    passed: count('Completed runs with verdict passed.'),
    failed: count('Completed runs with verdict failed.'),
    broken: count('Completed runs with verdict broken.'),
    skipped: count('Completed runs with verdict skipped.'),
    tests: JobTestProgress,
  },
  { additionalProperties: false },
);

export const Job = Type.Object(
  {
    id: Uuid,
    projectId: Uuid,
    name: Type.String({ maxLength: NAME_MAX }),
    status: JobStatus,
    progress: JobProgress,
    testIds: Type.Array(Uuid, { maxItems: JOB_TESTS_MAX }),
    deviceIds: Type.Array(DeviceId, { maxItems: JOB_DEVICES_MAX }),
    deviceLabels: Type.Array(DeviceLabel, { maxItems: JOB_LABELS_MAX }),
    environment: Nullable(RunLabel),
    branch: Nullable(RunLabel),
    build: Nullable(RunLabel),
    commit: Nullable(RunLabel),
    targetBranch: Nullable({
      ...RunLabel,
      description: 'The branch the pull request merges into, when the client named it: the base the job is compared with (TRIAGE-16).',
    }),
    repository: Nullable({
      ...Repository,
      description:
        "The repository of `commit` (`owner/name`): with both, the job reports to the project's code host (docs/integrations.md).",
    }),
    createdAt: Timestamp,
    startedAt: Nullable(Timestamp),
    finishedAt: Nullable(Timestamp),
    cancelledAt: Nullable(Timestamp),
    closedAt: Nullable({
      ...Timestamp,
      description:
        'When its reporter closed the launch (`POST /testmgmt/jobs/{jobId}/complete`); null while open, and for a job with tests.',
    }),
    ciUrl: Nullable(CiUrl),
    incident: Nullable(
      Type.Object(
        {
          failureGroupId: { ...Uuid, description: 'The error group behind most of the failures.' },
          failedRuns: Type.Integer({ minimum: 1, description: 'Failed tests of the job (final attempts) that fall into that group.' }),
        },
        {
          additionalProperties: false,
          description:
            "The outage guard (TRIAGE-4): when the job has at least the project's `incidentMinFailures` failed tests and one error " +
            'group holds more than `incidentShare` of them, the job is an incident of that group: one entry to triage, left out of ' +
            'flaky scores. Null otherwise.',
        },
      ),
    ),
  },
  { additionalProperties: false },
);

const JobParams = Type.Object({ jobId: Uuid }, { additionalProperties: false });

export const createJob = endpoint({
  operationId: 'createJob',
  method: 'POST',
  path: '/testmgmt/jobs',
  summary: 'Ask for tests to be executed; the job fans out into queued runs (tester).',
  description:
    'One queued run per (test × device). Devices are those named in `deviceIds` plus every device carrying any of ' +
    '`deviceLabels`, each once. With neither, each test gets one run without a device. The labels ' +
    '(`environment`, `branch`, `build`, `commit`) are copied onto every run. Tests must belong to the project; an ' +
    `unknown device id, or a label no device carries, is a 400. At most ${JOB_RUNS_MAX} runs per job.\n\n` +
    'With `testIds: []` the job is a launch that runs join as they start (`jobId` on `POST /testmgmt/testruns`): what a ' +
    'test reporter creates. With an `idempotencyKey` already used in the project, the same body answers **200** with the ' +
    'job it created; another body 409 `STATE_CONFLICT`.\n\n' +
    'Status: `queued` while no run has started, `running` once one has, `completed` when every run is completed or ' +
    'aborted, `cancelled` after a cancel. A launch is `completed` only once it is closed and every run in it has ' +
    'finished: closed by `POST /testmgmt/jobs/{jobId}/complete`, or by the idle timeout (`ATTEST_LAUNCH_IDLE_MINUTES`, ' +
    'no run open and none created or finished for that long). Until then it stays `queued` (no run yet) or `running`, ' +
    'also between two tests. `ciUrl` links the CI build and is copied onto the runs the job fans out into.',
  tag: 'Jobs',
  access: { scope: 'project', role: 'tester' },
  body: Type.Object(
    {
      projectId: Uuid,
      name: Type.Optional(Name),
      testIds: Type.Array(Uuid, { maxItems: JOB_TESTS_MAX, uniqueItems: true }),
      deviceIds: Type.Optional(Type.Array(DeviceId, { maxItems: JOB_DEVICES_MAX, uniqueItems: true })),
      deviceLabels: Type.Optional(Type.Array(DeviceLabel, { maxItems: JOB_LABELS_MAX, uniqueItems: true })),
      ...RunLabels,
      repository: Type.Optional({
        ...Repository,
        description:
          'The repository `commit` belongs to: `owner/name` on GitHub, the project path on GitLab. With `commit`, in a project ' +
          'with a code host, the job reports there as a check run or commit status (FORGE-2, docs/integrations.md).',
      }),
      ciUrl: Type.Optional(CiUrl),
      targetBranch: Type.Optional(TargetBranch),
      idempotencyKey: IdempotencyKey('create (within the project)'),
    },
    { additionalProperties: false },
  ),
  responses: { 200: Job, 201: Job },
});

export const listJobs = endpoint({
  operationId: 'listJobs',
  method: 'GET',
  path: '/testmgmt/jobs',
  summary: "A project's jobs with their progress, newest first; by CI build, CI link or branch.",
  tag: 'Jobs',
  access: { scope: 'project', role: 'viewer' },
  description:
    '`projectId` takes the id or the short key, in any case. `build`, `ciUrl` and `branch` keep the jobs whose label or link ' +
    'equals the value exactly (as given when the job was created or imported), together when several are given: ' +
    '`?build=451&limit=1` is the newest job of CI build 451, how `attest gate --build` finds its job. Each filter reads ' +
    "an index in the list's order (TRIAGE-17).",
  querystring: Type.Object(
    {
      ...PageQuery,
      projectId: ProjectQuery,
      build: Type.Optional({ ...RunLabel, description: 'Only jobs of this build (their `build` label).' }),
      ciUrl: Type.Optional({ ...CiUrl, description: 'Only jobs linking this CI build (their `ciUrl`, compared exactly).' }),
      branch: Type.Optional({ ...RunLabel, description: 'Only jobs of this branch (their `branch` label).' }),
    },
    { additionalProperties: false },
  ),
  responses: { 200: Page(Job) },
});

export const getJob = endpoint({
  operationId: 'getJob',
  method: 'GET',
  path: '/testmgmt/jobs/{jobId}',
  summary: 'Get a job, its status and progress derived from its runs.',
  description: 'Its runs are listed by `GET /testmgmt/testruns?jobId=…`.',
  tag: 'Jobs',
  access: { scope: 'project', role: 'viewer' },
  params: JobParams,
  responses: { 200: Job },
});

export const cancelJob = endpoint({
  operationId: 'cancelJob',
  method: 'POST',
  path: '/testmgmt/jobs/{jobId}/cancel',
  summary: 'Cancel a job (tester): its queued runs are aborted; running runs finish normally.',
  description:
    'A job that is already completed or cancelled answers 409 `STATE_CONFLICT`. A running run claimed by a runner ' +
    '(`POST /testmgmt/testruns/claim`) whose lease then expires is aborted rather than queued again, and no runner ' +
    'claims a queued run of a cancelled job.',
  tag: 'Jobs',
  access: { scope: 'project', role: 'tester' },
  params: JobParams,
  responses: { 200: Job },
});

export const completeJob = endpoint({
  operationId: 'completeJob',
  method: 'POST',
  path: '/testmgmt/jobs/{jobId}/complete',
  summary: 'Close a launch: its reporter is done, no more runs will join (tester). Idempotent.',
  description:
    'What a reporter sends when it finishes (and what a server-side import does itself). The launch answers `completed`, ' +
    'with `finishedAt` (the last finish of its runs), once every run in it has finished; a run still running keeps it ' +
    '`running` until that run finishes. `closedAt` is set on the first call; a repeated call changes nothing and answers ' +
    'the job as it is, so a retry is safe. A closed launch takes no more runs (409 `STATE_CONFLICT` on `POST ' +
    '/testmgmt/testruns` with its `jobId`). A cancelled job, or a job created with tests (it completes when its runs ' +
    'do), answers 409 `STATE_CONFLICT`; an unknown job, or one of a project the caller cannot see, 404.',
  tag: 'Jobs',
  access: { scope: 'project', role: 'tester' },
  params: JobParams,
  responses: { 200: Job },
});

export const deleteJob = endpoint({
  operationId: 'deleteJob',
  method: 'DELETE',
  path: '/testmgmt/jobs/{jobId}',
  summary: 'Delete a job with all its runs (manager).',
  description:
    'The job and every run in it, with what they hold, go in one transaction; audited as `job.delete`. A job already ' +
    'deleted, or never there, answers 404.',
  tag: 'Jobs',
  access: { scope: 'project', role: 'manager' },
  params: JobParams,
  responses: { 204: NoContent },
});

export const exportJob = endpoint({
  operationId: 'exportJob',
  method: 'GET',
  path: '/testmgmt/jobs/{jobId}/export',
  summary: "A job's completed runs as one report per format, retries folded into their test (streamed).",
  description:
    'The run export (`GET /testmgmt/testruns/{testRunId}/export`) for a whole job: its completed runs are read the documented ' +
    "way with the caller's own credentials, and each format is ONE file for the job. Runs of the same test (a Playwright " +
    'retry, a rerun) are one test: the latest started attempt decides, earlier failed attempts are kept (JUnit ' +
    '`<rerunFailure>`/`<flakyFailure>` as Maven Surefire writes them, Allure retries, an Xray comment). `format`:\n\n' +
    '- `zip`: `job.json` and one folder per run (`<runId>/`) holding its bundle, images and other files;\n' +
    '- `junit`: `junit.xml` (one testcase per test, `classname` its suite path) as `application/xml` when the job has no ' +
    'images or files; with them a ZIP of `junit.xml` and the files its `[[ATTACHMENT|…]]` lines name; `junit-zip` (or ' +
    '`Accept: application/zip`) always that ZIP;\n' +
    '- `xray`: Xray JSON, automated tests as `Generic` with their full name as `definition`;\n' +
    '- `allure`: a ZIP of one `allure-results/` folder;\n' +
    '- `html`: one self-contained HTML report.\n\n' +
    'Runs that are not completed are left out. Sent with `Content-Disposition: attachment`.',
  tag: 'Jobs',
  access: { scope: 'project', role: 'viewer' },
  params: JobParams,
  querystring: Type.Object(
    {
      format: Type.Union(
        EXPORT_FORMATS.map((format) => Type.Literal(format)),
        { description: 'What to write.' },
      ),
      xrayProject: Type.Optional(
        Type.String({ pattern: '^[A-Z][A-Z0-9_]{0,49}$', maxLength: 50, description: 'With `xray`: the Jira project key to name.' }),
      ),
    },
    { additionalProperties: false },
  ),
  binary: true,
  responses: { 200: exportBody('The export: a ZIP archive, JUnit XML, Xray JSON or an HTML report.') },
});
