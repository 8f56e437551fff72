import { Type } from 'typebox';
import { Description, LABEL_MAX, LABELS_MAX, NAME_MAX, Nullable, TEXT_MAX, Timestamp, Uuid } from '../common.ts';
import { TestLifecycle } from './test-lifecycle.ts';

// The test resource and its parts (TCM-1, docs/test-management.md), shared by the test contracts.

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

export const Tag = Type.String({
  minLength: 1,
  maxLength: LABEL_MAX,
  pattern: '^[^\\s,]+$',
  description: 'A tag, without the Gherkin `@`.',
});

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

/** What the monitor that fired saw (TRIAGE-11). */
export const MonitorEvidence = Type.Object(
  {
    events: Type.Integer({
      minimum: 0,
      description: 'Retries (retry), counted failures (rate) or failures in a row (broken) among the samples.',
    }),
    samples: Type.Integer({ minimum: 0, description: 'Outcomes the monitor read: at most its window.' }),
    runs: Type.Array(
      Type.Object(
        {
          runId: Uuid,
          jobId: Nullable(Uuid),
          url: Type.String({ description: "The run's page: absolute when the instance knows its public address, else its path." }),
        },
        { additionalProperties: false },
      ),
      { maxItems: 20, description: 'The final run of each outcome that is an event, newest first (at most 20).' },
    ),
  },
  { additionalProperties: false },
);

/** A test's health over its latest outcomes (TRIAGE-6, TRIAGE-11, docs/triage.md). */
export const TestHealth = Type.Object(
  {
    state: Type.Union([Type.Literal('stable'), Type.Literal('flaky'), Type.Literal('broken')], {
      description:
        'Decided by the monitors on `branch` (TRIAGE-11, `monitor`): `broken` when its latest `brokenAfter` (default 5) ' +
        'outcomes all failed or broke, never flaky then; `flaky` when the retry or rate monitor fired; `stable` otherwise.',
    }),
    flakyScore: Type.Number({
      minimum: 0,
      maximum: 1,
      description:
        '(Outcomes flaky within a job + pass↔fail flips between consecutive outcomes + commits with both ' +
        'verdicts) / outcomes considered on `branch`, capped at 1; 0 when broken. It orders tests; the monitors decide the state.',
    }),
    runsConsidered: Type.Integer({
      minimum: 0,
      description:
        'Outcomes considered: the latest completed ones (per job, retries folded; at most `healthWindow`, default 30) that ' +
        'passed, failed, broke or were flaky, leaving out incident jobs.',
    }),
    quarantine: Nullable(TestQuarantine),
    lifecycle: TestLifecycle,
    monitor: Nullable(
      Type.Union([Type.Literal('retry'), Type.Literal('rate'), Type.Literal('broken')], {
        description:
          'The monitor that decided `state` (TRIAGE-11): `broken` (its last `brokenAfter` outcomes failed; always wins), ' +
          '`retry` (within `retryWindow` outcomes, a job failed then passed it on a retry, or a commit had both verdicts), ' +
          '`rate` (failure rate over `rateWindow` outcomes at or above `rateThreshold`). Null when stable.',
      }),
    ),
    branch: Nullable(
      Type.String({
        description:
          "The branch the health is scored on: the project's default branch (or the one asked with `?branch=`); null when " +
          'no job ran on a branch, and every branch counts.',
      }),
    ),
    evidence: Nullable(MonitorEvidence),
  },
  { additionalProperties: false },
);

/** What a test says, the same in the test and in each of its versions. */
const TestContent = {
  name: Type.String({ maxLength: NAME_MAX }),
  description: Description,
  steps: Type.Array(TestStep, { maxItems: TEST_STEPS_MAX }),
  tags: Type.Array(Tag, { maxItems: LABELS_MAX }),
  suite: Nullable(TestSuite),
  links: Type.Array(TestLink, { maxItems: TEST_LINKS_MAX }),
};

export const TestDefinition = Type.Object(
  {
    id: Uuid,
    projectId: Uuid,
    ...TestContent,
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
    ...TestContent,
    sourceFormat: Type.Union([Type.Literal('json'), Type.Literal('gherkin')]),
    source: Nullable(Type.String({ maxLength: GHERKIN_MAX })),
    createdAt: { ...Timestamp, description: 'When this version was made (the test created, or the edit that made it).' },
    createdBy: Nullable({ ...Uuid, description: 'Who made this version; null for an import or reporter.' }),
  },
  { additionalProperties: false },
);
