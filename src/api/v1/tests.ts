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
    data: Type.Optional(
      Type.String({
        maxLength: TEXT_MAX,
        description:
          'The test data the step uses (an account, an amount, a card number…); left out when the step has none. Steps made ' +
          'from Gherkin carry none: their doc strings and data tables stay in `action`, as Cucumber reads them.',
      }),
    ),
    expected: Type.String({ maxLength: TEXT_MAX, description: 'The expected result; empty when the step only sets things up.' }),
  },
  { additionalProperties: false },
);

const Tag = Type.String({ minLength: 1, maxLength: LABEL_MAX, pattern: '^[^\\s,]+$', description: 'A tag, without the Gherkin `@`.' });

/** The longest suite path. */
export const SUITE_MAX = 512;
/** Most links one test carries. */
export const TEST_LINKS_MAX = 50;
/** The longest link key (`SHOP-12`). */
export const LINK_KEY_MAX = 100;
/** The longest link URL. */
export const LINK_URL_MAX = 2000;

/** A folder path of the test tree, e.g. `Checkout/Payments`. */
export const TestSuite = Type.String({
  minLength: 1,
  maxLength: SUITE_MAX,
  description:
    'The folder the test sits in, as a path of segments separated by `/`, e.g. `Checkout/Payments`. Each segment is ' +
    `trimmed of surrounding spaces on the way in and must not be empty (\`a//b\`, \`/a\`, \`a/\` are refused); at most ${SUITE_MAX} ` +
    'characters after trimming. Null: the test sits in no folder.',
});

export const LinkKind = Type.Union([Type.Literal('requirement'), Type.Literal('issue')], {
  description: '`requirement`: what the test verifies (a story, a requirement); `issue`: a defect or ticket it relates to.',
});

/** A link from a test to a requirement or an issue in another tracker (Jira, GitHub, a wiki…). */
export const TestLink = Type.Object(
  {
    kind: LinkKind,
    key: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: LINK_KEY_MAX,
        pattern: '^[^\\r\\n]+$',
        description: "The item's key in its tracker, e.g. `SHOP-12`; trimmed.",
      }),
    ),
    url: Type.Optional(
      Type.String({
        minLength: 10,
        maxLength: LINK_URL_MAX,
        pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[!-~]+$',
        description: 'Where the item is, an absolute http(s) URL of printable ASCII.',
      }),
    ),
    title: Type.Optional(Type.String({ minLength: 1, maxLength: NAME_MAX, description: "The item's title, as shown beside its key." })),
  },
  {
    additionalProperties: false,
    description:
      'At least one of `key` and `url`. A link is identified by its kind and its key, or its URL when it has no key: two ' +
      'tests naming `SHOP-12` link the same requirement, whatever URL or title each gives. One test holds a link once.',
  },
);

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
    suite: Nullable(TestSuite),
    links: Type.Array(TestLink, { maxItems: TEST_LINKS_MAX }),
    sourceFormat: Type.Union([Type.Literal('json'), Type.Literal('gherkin')], { description: 'How the test was given.' }),
    source: Nullable(Type.String({ maxLength: GHERKIN_MAX, description: 'The Gherkin feature text a test was created from.' })),
    version: Type.Integer({
      minimum: 1,
      description:
        'The version of its content: 1 at creation, one more at each edit that changes it (`PATCH /testmgmt/tests/{testId}`). ' +
        'Every version stays readable (`GET /testmgmt/tests/{testId}/versions/{version}`); a run records the one it executed.',
    }),
    createdAt: Timestamp,
    createdBy: Nullable(Uuid),
    updatedAt: { ...Timestamp, description: 'When the current version was made: `createdAt` until the first edit.' },
    updatedBy: Nullable({ ...Uuid, description: 'Who made the current version; null for a test an import or reporter created.' }),
    health: TestHealth,
  },
  { additionalProperties: false },
);

/** The content of one version of a test, as it was when that version was current. */
export const TestVersion = Type.Object(
  {
    testId: Uuid,
    version: Type.Integer({ minimum: 1 }),
    current: Type.Boolean({ description: "This is the test's current version." }),
    name: Type.String({ maxLength: NAME_MAX }),
    description: Description,
    steps: Type.Array(TestStep, { maxItems: TEST_STEPS_MAX }),
    tags: Type.Array(Tag, { maxItems: LABELS_MAX }),
    suite: Nullable(TestSuite),
    links: Type.Array(TestLink, { maxItems: TEST_LINKS_MAX }),
    sourceFormat: Type.Union([Type.Literal('json'), Type.Literal('gherkin')]),
    source: Nullable(Type.String({ maxLength: GHERKIN_MAX })),
    createdAt: { ...Timestamp, description: 'When this version was made (the test created, or the edit that made it).' },
    createdBy: Nullable({ ...Uuid, description: 'Who made this version; null for an import or reporter.' }),
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

export const listTests = endpoint({
  operationId: 'listTests',
  method: 'GET',
  path: '/testmgmt/tests',
  summary: "A project's test definitions, newest first, or flakiest first; by health, suite, tag, name and link.",
  description:
    '`projectId` takes the id or the short key, in any case. `sort=flaky` orders by flaky score, highest first (then ' +
    'newest). `health` keeps the tests in that state; `stable` includes tests with no outcome yet, and `quarantined` ' +
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
      sort: Type.Optional(Type.Union([Type.Literal('newest'), Type.Literal('flaky')], { description: 'Default `newest`.' })),
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
