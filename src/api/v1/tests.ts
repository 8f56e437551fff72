import { Type } from 'typebox';
import {
  Description,
  LABEL_MAX,
  LABELS_MAX,
  NAME_MAX,
  Name,
  NoContent,
  Nullable,
  Page,
  PageQuery,
  TEXT_MAX,
  Timestamp,
  Uuid,
} from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { DeviceId } from './devices.ts';
import { ProjectParams } from './projects.ts';
import { RunStatus, Verdict } from './run-states.ts';
import { ProjectQuery, RunLabel } from './runs.ts';

/** Most steps one test definition holds, whether given as JSON or produced from Gherkin. */
export const TEST_STEPS_MAX = 1000;
/** Largest Gherkin feature text accepted, in characters (the JSON body limit bounds it too). */
export const GHERKIN_MAX = 1024 * 1024;

/** The media type of a Gherkin feature sent as the whole body of `POST /testmgmt/tests`. */
export const GHERKIN_MEDIA_TYPE = 'text/x-gherkin';

export const TestStep = Type.Object(
  {
    action: Type.String({ minLength: 1, maxLength: TEXT_MAX, description: 'What the tester (or automation) does.' }),
    expected: Type.String({ maxLength: TEXT_MAX, description: 'The expected result; empty when the step only sets things up.' }),
  },
  { additionalProperties: false },
);

const Tag = Type.String({ minLength: 1, maxLength: LABEL_MAX, pattern: '^[^\\s,]+$', description: 'A tag, without the Gherkin `@`.' });

/** A quarantine as a test's health shows it. */
export const TestQuarantine = Type.Object(
  {
    owner: Type.String({ minLength: 1, maxLength: NAME_MAX, description: 'Who looks after the test, usually an e-mail.' }),
    reason: Type.String({ minLength: 1, maxLength: TEXT_MAX }),
    expiresAt: Timestamp,
    expired: Type.Boolean({
      description:
        'The expiry has passed: the quarantine no longer keeps failures from failing CI jobs, and shows until released or renewed.',
    }),
  },
  { additionalProperties: false },
);

/** A test's health over its latest outcomes (TRIAGE-6, docs/triage.md). */
export const TestHealth = Type.Object(
  {
    state: Type.Union([Type.Literal('stable'), Type.Literal('flaky'), Type.Literal('broken')], {
      description:
        '`broken`: its latest outcomes (at least `brokenAfter`, default 5) all failed or broke; never flaky then. `flaky`: a ' +
        'flaky score of at least 0.1. `stable` otherwise, and with fewer than 2 outcomes considered.',
    }),
    flakyScore: Type.Number({
      minimum: 0,
      maximum: 1,
      description:
        '(Outcomes flaky within a job + pass↔fail flips between consecutive outcomes on one branch + commits with both ' +
        'verdicts) / outcomes considered, capped at 1; 0 when broken.',
    }),
    runsConsidered: Type.Integer({
      minimum: 0,
      description:
        'Outcomes considered: the latest completed ones (per job, retries folded; at most `healthWindow`, default 30) that ' +
        'passed, failed, broke or were flaky, leaving out incident jobs.',
    }),
    quarantine: Nullable(TestQuarantine),
  },
  { additionalProperties: false },
);

export const TestDefinition = Type.Object(
  {
    id: Uuid,
    projectId: Uuid,
    name: Type.String({ maxLength: NAME_MAX }),
    description: Description,
    steps: Type.Array(TestStep, { maxItems: TEST_STEPS_MAX }),
    tags: Type.Array(Tag, { maxItems: LABELS_MAX }),
    sourceFormat: Type.Union([Type.Literal('json'), Type.Literal('gherkin')], { description: 'How the test was given.' }),
    source: Nullable(Type.String({ maxLength: GHERKIN_MAX, description: 'The Gherkin feature text a test was created from.' })),
    createdAt: Timestamp,
    createdBy: Nullable(Uuid),
    health: TestHealth,
  },
  { additionalProperties: false },
);

/**
 * The JSON body of `POST /testmgmt/tests`: a definition given field by field (`name` + `steps`),
 * or a Gherkin feature text in `gherkin`. Exactly one of `steps` and `gherkin`; with `gherkin`,
 * the name, description, steps and tags all come from the feature.
 */
export const CreateTestBody = Type.Object(
  {
    projectId: Uuid,
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    steps: Type.Optional(Type.Array(TestStep, { maxItems: TEST_STEPS_MAX })),
    tags: Type.Optional(Type.Array(Tag, { maxItems: LABELS_MAX, uniqueItems: true })),
    gherkin: Type.Optional(
      Type.String({ minLength: 1, maxLength: GHERKIN_MAX, description: 'A Gherkin feature text, parsed into the test.' }),
    ),
  },
  { additionalProperties: false },
);

export const createTest = endpoint({
  operationId: 'createTest',
  method: 'POST',
  path: '/testmgmt/tests',
  summary: 'Create a test definition from JSON or from a Gherkin feature (tester).',
  description:
    'Two inputs. (1) `Content-Type: application/json` with `projectId` and either `name` + `steps` (+ optional ' +
    '`description`, `tags`) or `gherkin` (a feature text). (2) `Content-Type: text/x-gherkin` with the feature text as ' +
    'the whole body and `?projectId=` in the query.\n\n' +
    'A feature becomes one test: its name, description (trimmed) and tags (without `@`). Its steps are the scenarios ' +
    'Cucumber would run (background steps before each scenario, one scenario per Examples row with its values filled ' +
    'in). Each Given/When step (and the And/But after it) becomes a step whose action is the keyword and text as written; ' +
    'a Then step (and the And/But after it) becomes the `expected` result of the step before it. A doc string or data ' +
    'table is appended to its step; a Then with no step before it becomes a step of its own. When the feature has ' +
    'several scenarios, each starts with a heading step (`Scenario: <name>`, in the keyword and language of the file). ' +
    'A syntax error answers 400 naming the line and column.',
  tag: 'Tests',
  access: { scope: 'project', role: 'tester' },
  consumes: ['application/json', GHERKIN_MEDIA_TYPE],
  querystring: Type.Object(
    {
      projectId: Type.Optional({
        ...ProjectQuery,
        description: 'The project, by id or short key; only with a text/x-gherkin body (JSON bodies name it inside).',
      }),
    },
    { additionalProperties: false },
  ),
  body: CreateTestBody,
  responses: { 201: TestDefinition },
});

export const listTests = endpoint({
  operationId: 'listTests',
  method: 'GET',
  path: '/testmgmt/tests',
  summary: "A project's test definitions, newest first, or flakiest first; by health.",
  description:
    '`projectId` takes the id or the short key, in any case. `sort=flaky` orders by flaky score, highest first (then ' +
    'newest). `health` keeps the tests in that state; `stable` includes tests with no outcome yet, and `quarantined` ' +
    'the tests whose quarantine has not expired.',
  tag: 'Tests',
  access: { scope: 'project', role: 'viewer' },
  querystring: Type.Object(
    {
      ...PageQuery,
      projectId: ProjectQuery,
      sort: Type.Optional(Type.Union([Type.Literal('newest'), Type.Literal('flaky')], { description: 'Default `newest`.' })),
      health: Type.Optional(
        Type.Union([Type.Literal('stable'), Type.Literal('flaky'), Type.Literal('broken'), Type.Literal('quarantined')]),
      ),
    },
    { additionalProperties: false },
  ),
  responses: { 200: Page(TestDefinition) },
});

export const getTest = endpoint({
  operationId: 'getTest',
  method: 'GET',
  path: '/testmgmt/tests/{testId}',
  summary: 'Get a test definition.',
  tag: 'Tests',
  access: { scope: 'project', role: 'viewer' },
  params: Type.Object({ testId: Uuid }, { additionalProperties: false }),
  responses: { 200: TestDefinition },
});

export const TestHistoryRun = Type.Object(
  {
    id: Uuid,
    name: Type.String({ maxLength: NAME_MAX }),
    status: RunStatus,
    verdict: Nullable(Verdict),
    createdAt: Timestamp,
    startedAt: Nullable(Timestamp),
    finishedAt: Nullable(Timestamp),
    jobId: Nullable(Uuid),
    branch: Nullable(RunLabel),
    build: Nullable(RunLabel),
    environment: Nullable(RunLabel),
    deviceId: Nullable(DeviceId),
    attempt: Type.Integer({ minimum: 0, description: 'Its attempt in its job: 0 first, 1, 2, … for retries.' }),
    flaky: Type.Boolean({
      description:
        'The verdict flipped: this completed run passed or failed, and the next older completed run of the test that ' +
        'passed or failed had the other verdict (broken and skipped runs are stepped over).',
    }),
  },
  { additionalProperties: false },
);

export const TestHistorySummary = Type.Object(
  {
    runs: Type.Integer({ minimum: 0, description: 'Runs in this answer.' }),
    passed: Type.Integer({ minimum: 0 }),
    failed: Type.Integer({ minimum: 0 }),
    broken: Type.Integer({ minimum: 0 }),
    skipped: Type.Integer({ minimum: 0 }),
    flakyFlips: Type.Integer({ minimum: 0, description: 'Runs in this answer marked `flaky`.' }),
  },
  { additionalProperties: false },
);

/** A test's verdict in one job, its attempts folded (TRIAGE-5). */
export const OutcomeVerdict = Nullable(
  Type.Union([Type.Literal('passed'), Type.Literal('failed'), Type.Literal('broken'), Type.Literal('skipped'), Type.Literal('flaky')], {
    description:
      "The final attempt's verdict, or `flaky` when an attempt failed or broke and the final one passed; null while the " +
      'final attempt has no verdict.',
  }),
);

export const TestHistoryOutcome = Type.Object(
  {
    jobId: Nullable({ ...Uuid, description: 'Null for a run without a job, an outcome of its own.' }),
    runId: { ...Uuid, description: 'The final attempt.' },
    verdict: OutcomeVerdict,
    attempts: Type.Integer({ minimum: 1, description: 'Runs of the test in the job (within the answer).' }),
    runIds: Type.Array(Uuid, { maxItems: 10_000, description: 'The attempts, first to final.' }),
    branch: Nullable(RunLabel),
    commit: Nullable(RunLabel),
    finishedAt: Nullable(Timestamp),
  },
  { additionalProperties: false },
);

export const TestHistoryOutcomeSummary = Type.Object(
  {
    outcomes: Type.Integer({ minimum: 0 }),
    passed: Type.Integer({ minimum: 0 }),
    failed: Type.Integer({ minimum: 0 }),
    broken: Type.Integer({ minimum: 0 }),
    skipped: Type.Integer({ minimum: 0 }),
    flaky: Type.Integer({ minimum: 0 }),
    unfinished: Type.Integer({ minimum: 0 }),
    passRate: Nullable(
      Type.Number({
        minimum: 0,
        maximum: 1,
        description: '(passed + flaky) / (passed + flaky + failed + broken); null when there is none of those.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const TestHistory = Type.Object(
  {
    testId: Uuid,
    runs: Type.Array(TestHistoryRun, { maxItems: 10_000, description: 'Newest first.' }),
    summary: TestHistorySummary,
    outcomes: Type.Array(TestHistoryOutcome, {
      maxItems: 10_000,
      description: 'The runs of this answer folded per job (a run without a job alone), newest first.',
    }),
    outcomeSummary: TestHistoryOutcomeSummary,
    health: TestHealth,
  },
  { additionalProperties: false },
);

export const getTestHistory = endpoint({
  operationId: 'getTestHistory',
  method: 'GET',
  path: '/testmgmt/tests/{testId}/history',
  summary: "A test's latest runs, newest first, with verdict flips marked and counted, and folded per job.",
  description:
    'The runs of the test in every state (queued and running ones have no verdict yet), ordered by creation time, ' +
    'newest first; `limit` of them (the page size: there is no cursor, only the latest runs). A run is `flaky` ' +
    'when it passed or failed and the next older completed run that passed or failed had the other verdict; the run ' +
    'compared with may lie beyond the answer. The summary counts the runs in the answer by verdict, and the flaky marks.\n\n' +
    'Retries folded (TRIAGE-5): `outcomes` are the same runs grouped per job, the final attempt (highest `attempt`, then ' +
    'latest created) deciding; `outcomeSummary` counts them, and its `passRate` counts a flaky outcome as passed. ' +
    "`health` is the test's health, as on the test.",
  tag: 'Tests',
  access: { scope: 'project', role: 'viewer' },
  params: Type.Object({ testId: Uuid }, { additionalProperties: false }),
  querystring: Type.Object({ limit: PageQuery.limit }, { additionalProperties: false }),
  responses: { 200: TestHistory },
});

export const deleteTest = endpoint({
  operationId: 'deleteTest',
  method: 'DELETE',
  path: '/testmgmt/tests/{testId}',
  summary: 'Delete a test definition (manager); with cascade=true, its runs too.',
  description:
    'While runs of the test exist the answer is 409 `STATE_CONFLICT`, saying how many, unless `cascade=true` asks ' +
    "for them (the test's history) to be deleted with it. Audited as `test.delete`. A test already deleted, or never " +
    'there, answers 404.',
  tag: 'Tests',
  access: { scope: 'project', role: 'manager' },
  params: Type.Object({ testId: Uuid }, { additionalProperties: false }),
  querystring: Type.Object(
    { cascade: Type.Optional(Type.Boolean({ description: "Delete the test's runs with it." })) },
    { additionalProperties: false },
  ),
  responses: { 204: NoContent },
});

export const QuarantineEntry = Type.Object(
  {
    testId: Uuid,
    fullName: Nullable(Type.String({ description: 'The full name imports and reporters key the test on; null for a test made by hand.' })),
    name: Type.String({ maxLength: NAME_MAX }),
    ...TestQuarantine.properties,
  },
  { additionalProperties: false },
);

export const QuarantineBody = Type.Object(
  {
    owner: TestQuarantine.properties.owner,
    reason: TestQuarantine.properties.reason,
    expiresAt: Type.Optional({
      ...Timestamp,
      description: 'When the quarantine ends by itself: in the future, at most 365 days from now; 14 days from now when left out.',
    }),
  },
  { additionalProperties: false },
);

export const quarantineTest = endpoint({
  operationId: 'quarantineTest',
  method: 'PUT',
  path: '/testmgmt/tests/{testId}/quarantine',
  summary: 'Quarantine a test, or renew its quarantine (tester).',
  description:
    'A quarantined test still runs and reports; until the quarantine expires, its failures do not fail a CI job (the ' +
    'Playwright reporter and `attest` read `GET /projects/{projectId}/quarantine`). `expiresAt` in the past, or more than ' +
    '365 days ahead, answers 400. Audited as `test.quarantine`.',
  tag: 'Tests',
  access: { scope: 'project', role: 'tester' },
  params: Type.Object({ testId: Uuid }, { additionalProperties: false }),
  body: QuarantineBody,
  responses: { 200: QuarantineEntry },
});

export const releaseTest = endpoint({
  operationId: 'releaseTest',
  method: 'DELETE',
  path: '/testmgmt/tests/{testId}/quarantine',
  summary: "Release a test's quarantine (tester).",
  description: 'A test without a quarantine answers 404. Audited as `test.release`.',
  tag: 'Tests',
  access: { scope: 'project', role: 'tester' },
  params: Type.Object({ testId: Uuid }, { additionalProperties: false }),
  responses: { 204: NoContent },
});

export const listQuarantines = endpoint({
  operationId: 'listQuarantines',
  method: 'GET',
  path: '/projects/{projectId}/quarantine',
  summary: "A project's quarantined tests: active ones first, then expired ones.",
  description:
    'For the reporter and the CLI: a failure of a test listed here with `expired: false` does not fail the CI job. ' +
    'Expired quarantines show (`expired: true`) until released or renewed.',
  tag: 'Tests',
  access: { scope: 'project', role: 'viewer' },
  params: ProjectParams,
  responses: { 200: Type.Object({ items: Type.Array(QuarantineEntry, { maxItems: 100_000 }) }, { additionalProperties: false }) },
});
