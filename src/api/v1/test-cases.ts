import { Type } from 'typebox';
import { Description, LABELS_MAX, NAME_MAX, Name, Nullable, Page, PageQuery, Timestamp, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { ProjectParams } from './projects.ts';
import { Verdict } from './run-states.ts';
import {
  GHERKIN_MAX,
  GHERKIN_MEDIA_TYPE,
  LINK_KEY_MAX,
  LINK_URL_MAX,
  LinkKind,
  SUITE_MAX,
  Tag,
  TEST_LINKS_MAX,
  TEST_STEPS_MAX,
  TestDefinition,
  TestLink,
  TestStep,
  TestSuite,
  TestVersion,
} from './test-definition.ts';

// Test-case management (TCM-2, TCM-4, TCM-5; docs/test-management.md): edits in versions, the suite
// tree and traceability. Exported through tests.ts, whose namespace lists every test operation.

/**
 * The JSON body of `PATCH /testmgmt/tests/{testId}`: the fields to change, each left out to keep it.
 */
export const UpdateTestBody = Type.Object(
  {
    version: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          'The version the edit was made on (optimistic concurrency): when the test has moved past it, the answer is ' +
          '409 `STATE_CONFLICT` and nothing changes. Left out, the edit applies to whatever version is current.',
      }),
    ),
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    steps: Type.Optional(Type.Array(TestStep, { maxItems: TEST_STEPS_MAX })),
    tags: Type.Optional(Type.Array(Tag, { maxItems: LABELS_MAX, uniqueItems: true })),
    gherkin: Type.Optional(
      Type.String({ minLength: 1, maxLength: GHERKIN_MAX, description: 'A Gherkin feature text that replaces the content.' }),
    ),
    suite: Type.Optional(Nullable(TestSuite)),
    links: Type.Optional(Type.Array(TestLink, { maxItems: TEST_LINKS_MAX, description: 'Replaces every link of the test.' })),
  },
  { additionalProperties: false },
);

const TestParams = Type.Object({ testId: Uuid }, { additionalProperties: false });

export const updateTest = endpoint({
  operationId: 'updateTest',
  method: 'PATCH',
  path: '/testmgmt/tests/{testId}',
  summary: 'Edit a test: its steps or its Gherkin text, name, description, tags, suite and links (tester). Versioned.',
  description:
    'Two inputs, as on create. (1) `Content-Type: application/json` with the fields to change: each one left out keeps ' +
    'its value; `suite: null` takes the test out of its folder; `links` replaces all its links. (2) ' +
    '`Content-Type: text/x-gherkin` with a feature text as the whole body (and `?version=` for the concurrency check): ' +
    'the same as `{ "gherkin": text }`.\n\n' +
    "A Gherkin test's name, description, tags and steps come from its feature: change them with `gherkin` (the text is " +
    'parsed exactly as on create; a syntax error answers 400 with `line` and `column` for each error, and nothing ' +
    'changes). `steps` on a Gherkin test turns it into a JSON test (its `source` dropped); `name`, `description` or ' +
    '`tags` on a Gherkin test without `gherkin` answer 400. `gherkin` on a JSON test turns it into a Gherkin test. ' +
    '`suite` and `links` apply to both.\n\n' +
    'An edit that changes the content bumps `version` by one; the version it replaced stays readable under ' +
    '`/versions`. An edit that changes nothing (the same values again) answers 200 with the test as it is: a retried ' +
    'call is harmless. With `version` and a test that moved past it, 409 `STATE_CONFLICT`. Runs keep the version they ' +
    'executed (`testVersion`). Audited as `test.update` with the old and new version. A test an import or reporter ' +
    'created (named by its full name) can be edited too; later imports keep using it by its full name.',
  tag: 'Tests',
  access: { scope: 'project', role: 'tester' },
  consumes: ['application/json', GHERKIN_MEDIA_TYPE],
  params: TestParams,
  querystring: Type.Object(
    {
      version: Type.Optional({
        ...Type.Integer({ minimum: 1 }),
        description: 'With a text/x-gherkin body: the version the edit was made on (a JSON body says it inside).',
      }),
    },
    { additionalProperties: false },
  ),
  body: UpdateTestBody,
  responses: { 200: TestDefinition },
});

export const listTestVersions = endpoint({
  operationId: 'listTestVersions',
  method: 'GET',
  path: '/testmgmt/tests/{testId}/versions',
  summary: "A test's versions, newest (the current one) first.",
  description: 'Every version the test has had, each with its full content; cursor-paginated.',
  tag: 'Tests',
  access: { scope: 'project', role: 'viewer' },
  params: TestParams,
  querystring: Type.Object({ ...PageQuery }, { additionalProperties: false }),
  responses: { 200: Page(TestVersion) },
});

export const getTestVersion = endpoint({
  operationId: 'getTestVersion',
  method: 'GET',
  path: '/testmgmt/tests/{testId}/versions/{version}',
  summary: 'One version of a test, e.g. the one a run executed (`testVersion` on the run).',
  tag: 'Tests',
  access: { scope: 'project', role: 'viewer' },
  params: Type.Object({ testId: Uuid, version: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }) }, { additionalProperties: false }),
  responses: { 200: TestVersion },
});

/** One folder of a project's test tree. */
export const SuiteNode = Type.Object(
  {
    path: TestSuite,
    name: Type.String({ maxLength: SUITE_MAX, description: 'The last segment of the path.' }),
    parent: Nullable(Type.String({ maxLength: SUITE_MAX, description: 'The path of the folder it sits in; null at the top.' })),
    depth: Type.Integer({ minimum: 1, description: 'Segments in the path: 1 at the top.' }),
    tests: Type.Integer({ minimum: 0, description: 'Tests in this folder itself.' }),
    total: Type.Integer({ minimum: 0, description: 'Tests in this folder and every folder under it.' }),
  },
  { additionalProperties: false },
);

export const SuiteTree = Type.Object(
  {
    items: Type.Array(SuiteNode, {
      maxItems: 100_000,
      description:
        'Every folder that holds a test, and every folder above one (with `tests: 0` when it holds none itself), in path ' +
        'order (a folder right before its subfolders, by segment).',
    }),
    unsorted: Type.Integer({ minimum: 0, description: 'Tests in no folder.' }),
    total: Type.Integer({ minimum: 0, description: "The project's tests." }),
  },
  { additionalProperties: false },
);

export const listSuites = endpoint({
  operationId: 'listSuites',
  method: 'GET',
  path: '/projects/{projectId}/suites',
  summary: "A project's test tree: each suite folder with its test counts.",
  description: 'A folder appears as soon as a test sits in it or under it; there are no empty folders.',
  tag: 'Tests',
  access: { scope: 'project', role: 'viewer' },
  params: ProjectParams,
  responses: { 200: SuiteTree },
});

/** A test linked to a requirement or issue, with its latest verdict. */
export const TraceTest = Type.Object(
  {
    testId: Uuid,
    name: Type.String({ maxLength: NAME_MAX }),
    suite: Nullable(TestSuite),
    latestVerdict: Nullable({
      ...Verdict,
      description: "The verdict of the test's latest completed run (by finish time); null when it never completed a run.",
    }),
    latestRunId: Nullable(Uuid),
    latestRunFinishedAt: Nullable(Timestamp),
  },
  { additionalProperties: false },
);

/** One distinct link of a project with the tests that carry it. */
export const TraceLink = Type.Object(
  {
    kind: LinkKind,
    key: Nullable(Type.String({ maxLength: LINK_KEY_MAX })),
    url: Nullable(Type.String({ maxLength: LINK_URL_MAX, description: 'A URL one of its tests gives, if any.' })),
    title: Nullable(Type.String({ maxLength: NAME_MAX, description: 'A title one of its tests gives, if any.' })),
    tests: Type.Array(TraceTest, { maxItems: 10_000, description: 'Its tests, by name.' }),
    summary: Type.Object(
      {
        tests: Type.Integer({ minimum: 0 }),
        passed: Type.Integer({ minimum: 0 }),
        failed: Type.Integer({ minimum: 0 }),
        broken: Type.Integer({ minimum: 0 }),
        skipped: Type.Integer({ minimum: 0 }),
        notRun: Type.Integer({ minimum: 0, description: 'Tests that never completed a run.' }),
      },
      { additionalProperties: false, description: 'Its tests counted by latest verdict.' },
    ),
  },
  { additionalProperties: false },
);

export const listLinks = endpoint({
  operationId: 'listLinks',
  method: 'GET',
  path: '/projects/{projectId}/links',
  summary: "Traceability: each requirement or issue the project's tests link to, with its tests and their latest verdicts.",
  description:
    'One item per distinct link (kind, then key, or URL without key), ordered by kind (`issue` before `requirement`) ' +
    'then key or URL; cursor-paginated over links. `kind` keeps one kind; `q` keeps the links whose key, URL or title ' +
    "holds it (any case). A test's latest verdict is that of its latest completed run by finish time, whatever job or " +
    'device ran it.',
  tag: 'Tests',
  access: { scope: 'project', role: 'viewer' },
  params: ProjectParams,
  querystring: Type.Object(
    {
      ...PageQuery,
      kind: Type.Optional(LinkKind),
      q: Type.Optional(Type.String({ minLength: 1, maxLength: NAME_MAX, description: 'A part of a key, URL or title, in any case.' })),
    },
    { additionalProperties: false },
  ),
  responses: { 200: Page(TraceLink) },
});
