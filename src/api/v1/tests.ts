import { Type } from 'typebox';
import { Description, LABEL_MAX, LABELS_MAX, NAME_MAX, Name, NoContent, Nullable, Page, PageQuery, Timestamp, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { DeviceId } from './devices.ts';
import { FLAKY_COST_DAYS_DEFAULT, FLAKY_COST_DAYS_MAX } from './flaky-cost.ts';
import { ProjectParams } from './projects.ts';
import { RunStatus, Verdict } from './run-states.ts';
import { ProjectQuery, RunLabel } from './runs.ts';
import {
  GHERKIN_MAX,
  GHERKIN_MEDIA_TYPE,
  LINK_URL_MAX,
  SUITE_MAX,
  Tag,
  TEST_LINKS_MAX,
  TEST_STEPS_MAX,
  TestDefinition,
  TestHealth,
  TestLink,
  TestQuarantine,
  TestStep,
  TestSuite,
} from './test-definition.ts';
import { LifecycleState } from './test-lifecycle.ts';

export * from './test-cases.ts';
export * from './test-definition.ts';

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
    suite: Type.Optional(Nullable(TestSuite)),
    links: Type.Optional(Type.Array(TestLink, { maxItems: TEST_LINKS_MAX })),
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
    "A syntax error answers 400: the problem's `errors` hold one entry per syntax error with its `line` and `column` " +
    '(1-based, in the feature text) beside the `pointer` and `message`.\n\n' +
    '`suite` and `links` do not come from Gherkin: give them beside `gherkin` in a JSON body, or `suite` in the query ' +
    'with a text/x-gherkin body. The test starts at `version` 1. Audited as `test.create`.',
  tag: 'Tests',
  access: { scope: 'project', role: 'tester' },
  consumes: ['application/json', GHERKIN_MEDIA_TYPE],
  querystring: Type.Object(
    {
      projectId: Type.Optional({
        ...ProjectQuery,
        description: 'The project, by id or short key; only with a text/x-gherkin body (JSON bodies name it inside).',
      }),
      suite: Type.Optional({ ...TestSuite, description: 'The suite of the test; only with a text/x-gherkin body.' }),
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
  summary: "A project's test definitions, newest first, flakiest first or costliest flakiness first; by health, suite, tag, name and link.",
  description:
    '`projectId` takes the id or the short key, in any case. `sort=flaky` orders by flaky score, highest first (then ' +
    'newest). `sort=flakyCost` lists the tests whose retries to a pass cost CI time over the last `days` days (1 to 90, ' +
    'default 30), costliest first: the cost `GET /projects/{projectId}/flaky-cost` gives each (TRIAGE-15). `health` keeps the tests in that state; `stable` includes tests with no outcome yet, and `quarantined` ' +
    'the tests whose quarantine has not expired.\n\n' +
    '`suite` keeps the tests in that folder and every folder under it (`Checkout` keeps `Checkout` and ' +
    '`Checkout/Payments`, not `Checkouts`); `suite=` (empty) keeps the tests in no folder. `tag` keeps the tests carrying ' +
    'that tag (any case). `q` keeps the tests whose name holds it (any case). `link` keeps the tests linked to that key ' +
    'or URL (a key in any case; a URL exactly). Every filter narrows the list.',
  tag: 'Tests',
  access: { scope: 'project', role: 'viewer' },
  querystring: Type.Object(
    {
      ...PageQuery,
      projectId: ProjectQuery,
      sort: Type.Optional(
        Type.Union([Type.Literal('newest'), Type.Literal('flaky'), Type.Literal('flakyCost')], { description: 'Default `newest`.' }),
      ),
      days: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: FLAKY_COST_DAYS_MAX,
          description: `The window of \`sort=flakyCost\`, in days (default ${FLAKY_COST_DAYS_DEFAULT}).`,
        }),
      ),
      health: Type.Optional(
        Type.Union([Type.Literal('stable'), Type.Literal('flaky'), Type.Literal('broken'), Type.Literal('quarantined')]),
      ),
      suite: Type.Optional(
        Type.String({ maxLength: SUITE_MAX, description: 'A folder: its tests and those of every folder under it; empty for no folder.' }),
      ),
      tag: Type.Optional(Type.String({ minLength: 1, maxLength: LABEL_MAX, description: 'A tag (without `@`), in any case.' })),
      q: Type.Optional(Type.String({ minLength: 1, maxLength: NAME_MAX, description: 'A part of the name, in any case.' })),
      link: Type.Optional(Type.String({ minLength: 1, maxLength: LINK_URL_MAX, description: 'A link key (any case) or URL (exactly).' })),
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
  querystring: Type.Object(
    {
      branch: Type.Optional({
        ...RunLabel,
        description: "The branch to score the test's health on (TRIAGE-11); the project's default branch when absent.",
      }),
    },
    { additionalProperties: false },
  ),
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
    state: { ...LifecycleState, description: "The test's lifecycle state (TRIAGE-13): `fix-pending` while a fix attempt is verified." },
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
