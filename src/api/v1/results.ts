import { type TSchema, Type } from 'typebox';
import { ClientKey, IdempotencyKey, NAME_MAX, NoContent, Nullable, TEXT_MAX, Timestamp, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { RunStatus, Verdict } from './run-states.ts';

/** Most steps, and most run-level cells, in one results post (the bulk body limit applies too). */
export const RESULT_STEPS_MAX = 10_000;
export const RESULT_CELLS_MAX = 10_000;
/** Most steps + cells (inline ones included) in one results post. */
export const RESULT_ITEMS_MAX = 20_000;
/** Most text cells one step carries inline. */
export const STEP_CELLS_MAX = 100;
/** Deepest step nesting: a top-level step is at depth 1. */
export const STEP_DEPTH_MAX = 10;
/** Most steps + cells one run may hold in all; a post that would pass it answers 422 `UNPROCESSABLE`. */
export const RUN_RESULT_ITEMS_MAX = 100_000;
export const STEP_TITLE_MAX = 1024;

export const StepStatus = Type.Union([
  Type.Literal('passed'),
  Type.Literal('failed'),
  Type.Literal('broken'),
  Type.Literal('skipped'),
  Type.Literal('running'),
]);
export const MediaType = Type.Union([Type.Literal('text/plain'), Type.Literal('text/markdown')]);
/** A posted cell's type: plain text unless it says otherwise (the validator fills the default in). */
const MediaTypeInput = Type.Union([Type.Literal('text/plain'), Type.Literal('text/markdown')], {
  default: 'text/plain',
  description: 'How to render `text`; `text/plain` when left out.',
});
const CellName = Type.String({ minLength: 1, maxLength: NAME_MAX, description: 'What the text is: expected, actual, log, note, error…' });
const CellText = Type.String({ maxLength: TEXT_MAX });
const DurationMs = Type.Integer({ minimum: 0, maximum: 2_147_483_647 });

const cellInputFields = {
  key: Type.Optional(ClientKey),
  name: CellName,
  text: CellText,
  mediaType: Type.Optional(MediaTypeInput),
};

export const StepInput = Type.Object(
  {
    key: Type.Optional(ClientKey),
    title: Type.String({ minLength: 1, maxLength: STEP_TITLE_MAX }),
    status: StepStatus,
    startedAt: Type.Optional(Timestamp),
    durationMs: Type.Optional(DurationMs),
    error: Type.Optional(Type.String({ maxLength: TEXT_MAX, description: 'Why the step failed or broke.' })),
    parentKey: Type.Optional(ClientKey),
    parentId: Type.Optional(Uuid),
    cells: Type.Optional(Type.Array(Type.Object(cellInputFields, { additionalProperties: false }), { maxItems: STEP_CELLS_MAX })),
  },
  { additionalProperties: false },
);

export const CellInput = Type.Object(
  { ...cellInputFields, stepId: Type.Optional(Uuid), stepKey: Type.Optional(ClientKey) },
  { additionalProperties: false },
);

const resultItems = {
  steps: Type.Optional(Type.Array(StepInput, { maxItems: RESULT_STEPS_MAX })),
  cells: Type.Optional(Type.Array(CellInput, { maxItems: RESULT_CELLS_MAX })),
};

/** Steps and cells, as a run created in one call carries them. */
export const ResultItems = Type.Object(resultItems, { additionalProperties: false });

export const AppendResultsBody = Type.Object(
  { ...resultItems, idempotencyKey: IdempotencyKey('results post (within the run)') },
  { additionalProperties: false },
);

/** What became of one posted item: its id, and whether this post created it. */
const Assigned = {
  id: Uuid,
  key: Nullable(ClientKey),
  created: Type.Boolean({ description: 'False when the key was already stored: the item is the one stored before.' }),
};

export const AppendResultsReply = Type.Object(
  {
    steps: Type.Array(
      Type.Object(
        {
          ...Assigned,
          updated: Type.Boolean({ description: 'True when this post finished a stored `running` step with the same key.' }),
          cells: Type.Array(Type.Object(Assigned, { additionalProperties: false }), { maxItems: STEP_CELLS_MAX }),
        },
        { additionalProperties: false },
      ),
      { maxItems: RESULT_STEPS_MAX, description: 'One entry per posted step, in the order posted.' },
    ),
    cells: Type.Array(Type.Object(Assigned, { additionalProperties: false }), {
      maxItems: RESULT_CELLS_MAX,
      description: 'One entry per posted run-level cell, in the order posted.',
    }),
  },
  { additionalProperties: false },
);

export const TextCell = Type.Object(
  { id: Uuid, key: Nullable(ClientKey), name: CellName, mediaType: MediaType, text: CellText },
  { additionalProperties: false },
);

export const ResultStep = Type.Object(
  {
    id: Uuid,
    key: Nullable(ClientKey),
    parentId: Nullable(Uuid),
    title: Type.String({ maxLength: STEP_TITLE_MAX }),
    status: StepStatus,
    startedAt: Nullable(Timestamp),
    durationMs: Nullable(DurationMs),
    error: Nullable(Type.String({ maxLength: TEXT_MAX })),
    failureGroupId: Nullable({
      ...Uuid,
      description: 'The error group of a failed or broken step with an error message, set when its run completes; null otherwise.',
    }),
    cells: Type.Array(TextCell, { maxItems: RUN_RESULT_ITEMS_MAX }),
  },
  { additionalProperties: false },
);

/** The result content of a run (documented endpoint 2). */
export const RunResults = Type.Object(
  {
    testRunId: Uuid,
    status: RunStatus,
    verdict: Nullable(Verdict),
    failureGroupId: Nullable({
      ...Uuid,
      description: "The error group of the run's failure, set when it completes failed or broken; null otherwise.",
    }),
    cells: Type.Array(TextCell, { maxItems: RUN_RESULT_ITEMS_MAX, description: 'Run-level text cells, in the order appended.' }),
    steps: Type.Array(ResultStep, {
      maxItems: RUN_RESULT_ITEMS_MAX,
      description: 'Every step in the order appended (a parent before its children); `parentId` gives the tree.',
    }),
  },
  { additionalProperties: false },
);

const RunParams = Type.Object({ testRunId: Uuid }, { additionalProperties: false });

export const appendResults = endpoint({
  operationId: 'appendResults',
  method: 'POST',
  path: '/testmgmt/testruns/{testRunId}/results',
  summary: 'Append steps and text cells to a running run, atomically (tester).',
  description:
    'Everything in one post commits together or not at all. Items are ordered as posted, after everything posted ' +
    'before. A step nests under `parentKey` (a key posted earlier, in this post or before) or `parentId`, at most ' +
    `${STEP_DEPTH_MAX} levels deep. A run-level cell attaches to a step by \`stepId\` or \`stepKey\`.\n\n` +
    'Retries: a step or cell whose `key` is already stored in the run is not stored again; the answer gives the stored ' +
    'id with `created: false`. A stored step still `running` is finished by posting its key again with another status ' +
    '(its `status`, `durationMs`, `error` and inline cells are taken, `updated: true`); otherwise the post repeats the ' +
    'step, which is skipped together with its inline cells (its receipt lists none). Run-level cells without a key are ' +
    'always appended; they are also the way to add cells to a step stored earlier (`stepKey` or `stepId`). A post with an ' +
    '`idempotencyKey` already used in the run is not applied again: the same body answers the receipt of the first post ' +
    '(also after the run finished), another body 409 `STATE_CONFLICT`. Reporters that retry should send one.\n\n' +
    'Only a `running` run takes results: a queued one answers 409 `STATE_CONFLICT`, a completed or aborted one 409 ' +
    '`RUN_FROZEN`. This route takes the larger bulk body limit.',
  tag: 'Results',
  access: { scope: 'project', role: 'tester' },
  bodyLimit: 'bulkBodyLimit',
  params: RunParams,
  body: AppendResultsBody,
  responses: { 200: AppendResultsReply },
});

export const getResults = endpoint({
  operationId: 'getResults',
  method: 'GET',
  path: '/testmgmt/testruns/{testRunId}/results',
  summary: 'The result content of a run: its text cells and steps (documented endpoint 2).',
  description:
    'Only for a completed run, whose results are frozen; any other run answers 409 `RUN_NOT_COMPLETED` unless ' +
    "`partial=true` asks for what is stored so far. A completed run's answer carries a strong `ETag` (one per " +
    'encoding) and is compressed with br or gzip when `Accept-Encoding` asks; `If-None-Match` with its ETag answers 304.',
  tag: 'Results',
  access: { scope: 'project', role: 'viewer' },
  params: RunParams,
  querystring: Type.Object(
    { partial: Type.Optional(Type.Boolean({ description: 'Answer for a run that is not completed too.' })) },
    { additionalProperties: false },
  ),
  responses: { 200: RunResults, 304: NoContent },
});

/**
 * What `GET /testmgmt/testruns/{testRunId}/export` and `GET /testmgmt/jobs/{jobId}/export` write; the
 * CLI's `--format` names the same writers (`bundle` is `zip`). `junit` is the XML alone unless the
 * export has files to carry (or the ZIP is asked for); `junit-zip` is always the ZIP of it and its files.
 */
export const EXPORT_FORMATS = ['zip', 'junit', 'junit-zip', 'xray', 'allure', 'html'] as const;
/** Most tests one Xray document holds: a job's runs at most. */
const XRAY_TESTS_MAX = 10_000;

const XrayText = Type.String({ maxLength: 1024 ** 3 });
const XrayStatus = Type.Union([Type.Literal('PASSED'), Type.Literal('FAILED'), Type.Literal('TODO'), Type.Literal('EXECUTING')]);
const XrayEvidence = Type.Object(
  {
    data: Type.String({ contentEncoding: 'base64', maxLength: 1024 ** 3, description: 'The image bytes, base64.' }),
    filename: Type.String({ maxLength: 1024 }),
    contentType: Type.String({ maxLength: 128 }),
  },
  { additionalProperties: false },
);

/** Xray JSON ("import execution results"), as `format=xray` writes it. */
export const XrayExecution = Type.Object(
  {
    info: Type.Object(
      {
        summary: XrayText,
        description: XrayText,
        project: Type.Optional(XrayText),
        startDate: Type.Optional(Timestamp),
        finishDate: Type.Optional(Timestamp),
        revision: Type.Optional(XrayText),
        testEnvironments: Type.Optional(Type.Array(XrayText, { maxItems: 1 })),
      },
      { additionalProperties: false },
    ),
    tests: Type.Array(
      Type.Object(
        {
          testInfo: Type.Object(
            {
              summary: XrayText,
              type: Type.Union([Type.Literal('Manual'), Type.Literal('Generic')], {
                description: '`Generic` for an automated test (one without steps of its own), `Manual` for the rest.',
              }),
              projectKey: Type.Optional(XrayText),
              labels: Type.Optional(Type.Array(XrayText, { maxItems: 3 })),
              definition: Type.Optional({
                ...XrayText,
                description: "A `Generic` test's definition: its full name, by which Xray finds the same test on the next import.",
              }),
              steps: Type.Optional(
                Type.Array(Type.Object({ action: XrayText, data: XrayText, result: XrayText }, { additionalProperties: false }), {
                  maxItems: RUN_RESULT_ITEMS_MAX,
                }),
              ),
            },
            { additionalProperties: false },
          ),
          start: Type.Optional(Timestamp),
          finish: Type.Optional(Timestamp),
          status: XrayStatus,
          comment: XrayText,
          defects: Type.Optional(
            Type.Array(Type.String({ maxLength: 64, description: "A Jira issue key: the one the failure's error group links to." }), {
              maxItems: 10,
            }),
          ),
          evidence: Type.Array(XrayEvidence, { maxItems: RUN_RESULT_ITEMS_MAX }),
          steps: Type.Optional(
            Type.Array(
              Type.Object(
                {
                  status: XrayStatus,
                  actualResult: XrayText,
                  comment: Type.Optional(XrayText),
                  evidence: Type.Array(XrayEvidence, { maxItems: RUN_RESULT_ITEMS_MAX }),
                },
                { additionalProperties: false },
              ),
              { maxItems: RUN_RESULT_ITEMS_MAX },
            ),
          ),
        },
        { additionalProperties: false },
      ),
      { maxItems: XRAY_TESTS_MAX },
    ),
  },
  {
    additionalProperties: false,
    description:
      "One Xray test per test (a job's retries folded into their test, the final attempt deciding). An automated test (one " +
      'without steps of its own, as imports and reporters create them) is `Generic` with its full name as `definition` and ' +
      'its images and files as `evidence`; any other run is `Manual` with every step (nested ones flattened in results order), ' +
      "its status, `actualResult` from its text cells and its screenshots as base64 `evidence`; the run's own screenshots on the test.",
  },
);

export const exportBody = (description: string) => ({
  description,
  content: {
    'application/zip': { schema: Type.String({ contentMediaType: 'application/zip', maxLength: 1024 ** 4 }) as TSchema },
    'application/json': { schema: XrayExecution as TSchema },
    'application/xml': { schema: Type.String({ contentMediaType: 'application/xml', maxLength: 1024 ** 4 }) as TSchema },
    'text/html': { schema: Type.String({ contentMediaType: 'text/html', maxLength: 1024 ** 4 }) as TSchema },
  },
});

export const exportRun = endpoint({
  operationId: 'exportRun',
  method: 'GET',
  path: '/testmgmt/testruns/{testRunId}/export',
  summary: 'A completed run with its screenshots, in a format other tools import (streamed).',
  description:
    'The same writers as `attest export --format`, fed by the documented sequence (endpoints 2 to 5) run with the ' +
    "caller's own credentials, so the answer holds exactly what the caller could read call by call. `format`:\n\n" +
    '- `zip`: the bundle: `results.json`, `artifacts.json` and `artifact-details.json` (then `-2`, `-3`… per batch of ' +
    '100 ids) as the endpoints answer them byte for byte, `manifest.json` (every image → artifact → step, with hash, size ' +
    'and media type) and `images/<nn>-<step title>/…`;\n' +
    '- `junit`: `junit.xml` (one testcase, steps and cells in `system-out`, `[[ATTACHMENT|path]]` lines) as `application/xml` ' +
    'when the run has no images or files; with them, a ZIP of `junit.xml` and the files it names (as before);\n' +
    '- `junit-zip` (or `junit` with `Accept: application/zip`): always that ZIP;\n' +
    '- `xray`: Xray JSON (`application/json`), screenshots as base64 `evidence` on their steps;\n' +
    '- `allure`: a ZIP of an Allure results folder (`allure-results/`);\n' +
    '- `html`: one self-contained HTML report (`text/html`) with every screenshot inline.\n\n' +
    'A run that is not completed answers 409 `RUN_NOT_COMPLETED` unless `partial=true`. Sent with `Content-Disposition: attachment`.',
  tag: 'Results',
  access: { scope: 'project', role: 'viewer' },
  params: RunParams,
  querystring: Type.Object(
    {
      format: Type.Union(
        EXPORT_FORMATS.map((format) => Type.Literal(format)),
        { description: 'What to write.' },
      ),
      partial: Type.Optional(Type.Boolean({ description: 'Export a run that is not completed, as far as it got.' })),
      xrayProject: Type.Optional(
        Type.String({ pattern: '^[A-Z][A-Z0-9_]{0,49}$', maxLength: 50, description: 'With `xray`: the Jira project key to name.' }),
      ),
    },
    { additionalProperties: false },
  ),
  binary: true,
  responses: { 200: exportBody('The export: a ZIP archive, JUnit XML, Xray JSON or an HTML report.') },
});
