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
  summary: "A project's test definitions, newest first.",
  description: '`projectId` takes the id or the short key, in any case.',
  tag: 'Tests',
  access: { scope: 'project', role: 'viewer' },
  querystring: Type.Object({ ...PageQuery, projectId: ProjectQuery }, { additionalProperties: false }),
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

export const TestHistory = Type.Object(
  {
    testId: Uuid,
    runs: Type.Array(TestHistoryRun, { maxItems: 10_000, description: 'Newest first.' }),
    summary: TestHistorySummary,
  },
  { additionalProperties: false },
);

export const getTestHistory = endpoint({
  operationId: 'getTestHistory',
  method: 'GET',
  path: '/testmgmt/tests/{testId}/history',
  summary: "A test's latest runs, newest first, with verdict flips marked and counted.",
  description:
    'The runs of the test in every state (queued and running ones have no verdict yet), ordered by creation time, ' +
    'newest first; `limit` of them (the page size: there is no cursor, only the latest runs). A run is `flaky` ' +
    'when it passed or failed and the next older completed run that passed or failed had the other verdict; the run ' +
    'compared with may lie beyond the answer. The summary counts the runs in the answer by verdict, and the flaky marks.',
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
