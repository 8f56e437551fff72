import { Type } from 'typebox';
import { ClientKey, Name, Nullable, Page, PageQuery, Timestamp, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { ProjectParams } from './projects.ts';
import { CiUrl, RunLabels, TargetBranch } from './runs.ts';

/** The media types an import takes as the body itself. */
export const IMPORT_BODY_TYPES = ['application/xml', 'text/xml', 'application/json', 'application/zip'] as const;

export const ImportStatus = Type.Union(
  [Type.Literal('queued'), Type.Literal('processing'), Type.Literal('completed'), Type.Literal('failed')],
  {
    description: '`queued` once accepted, `processing` while its job is written, then `completed`, or `failed` (see `error`).',
  },
);

/** What an import is told: in the query of a raw body, or as the `options` part of a multipart one. */
export const ImportOptions = Type.Object(
  {
    name: Type.Optional({ ...Name, description: "The job's name; else the report's own name, else the file's." }),
    format: Type.Optional(
      Type.Union([Type.Literal('auto'), Type.Literal('junit'), Type.Literal('playwright')], {
        description: '`auto` (the default) tells JUnit XML from a Playwright JSON report by their content.',
      }),
    ),
    ...RunLabels,
    ciUrl: Type.Optional(CiUrl),
    targetBranch: Type.Optional(TargetBranch),
    idempotencyKey: Type.Optional({
      ...ClientKey,
      description:
        'Makes a retried import harmless: the same file with a key already used in the project answers **200** with the import ' +
        'it started (and its job); another file with that key is a 409 `STATE_CONFLICT`.',
    }),
  },
  { additionalProperties: false },
);

const ImportCounts = Type.Object(
  {
    reports: Type.Integer({ minimum: 0, description: 'Report files read.' }),
    tests: Type.Integer({ minimum: 0, description: 'Distinct tests (by full name).' }),
    testsCreated: Type.Integer({ minimum: 0, description: 'Tests this import created; the others had history already.' }),
    runs: Type.Integer({ minimum: 0, description: 'Runs: one per test case, one per attempt of a retried test.' }),
    passed: Type.Integer({ minimum: 0 }),
    failed: Type.Integer({ minimum: 0 }),
    broken: Type.Integer({ minimum: 0 }),
    skipped: Type.Integer({ minimum: 0 }),
    steps: Type.Integer({ minimum: 0 }),
    cells: Type.Integer({ minimum: 0 }),
    attachments: Type.Integer({ minimum: 0, description: 'Artifacts stored.' }),
    attachmentsMissing: Type.Integer({
      minimum: 0,
      description: 'Attachments the report names that the upload lacks or that could not be stored.',
    }),
  },
  { additionalProperties: false },
);

const ImportFile = Type.Object(
  {
    file: Type.String({ description: 'The report file: its path in the archive, or the upload name.' }),
    format: Type.Union([Type.Literal('junit'), Type.Literal('playwright')]),
    runs: Type.Integer({ minimum: 0 }),
    errors: Type.Array(Type.String(), { description: 'What could not be taken from this file, one line each (at most 100).' }),
  },
  { additionalProperties: false },
);

export const ImportRecord = Type.Object(
  {
    id: Uuid,
    projectId: Uuid,
    status: ImportStatus,
    fileName: Type.String(),
    size: Type.Integer({ minimum: 0, description: 'Bytes uploaded.' }),
    sha256: Type.String({ description: 'SHA-256 of the upload: the same file with the same key is the same import.' }),
    jobId: Nullable({ ...Uuid, description: 'The job the report became, once it is created.' }),
    options: ImportOptions,
    progress: Type.Object(
      {
        done: Type.Integer({ minimum: 0, description: 'Runs written so far.' }),
        total: Nullable(Type.Integer({ minimum: 0, description: 'Runs the upload holds, once read.' })),
      },
      { additionalProperties: false, description: 'How far the job is written: a progress bar polls it.' },
    ),
    counts: Nullable(ImportCounts),
    files: Type.Array(ImportFile),
    error: Nullable(Type.String({ description: 'Why a `failed` import failed.' })),
    createdAt: Timestamp,
    startedAt: Nullable(Timestamp),
    finishedAt: Nullable(Timestamp),
  },
  { additionalProperties: false },
);

const ImportParams = Type.Object({ projectId: Uuid, importId: Uuid }, { additionalProperties: false });

export const importReport = endpoint({
  operationId: 'importReport',
  method: 'POST',
  path: '/projects/{projectId}/imports',
  summary: 'Import a JUnit XML or Playwright JSON report, with its attachments, as a job of completed runs (tester).',
  description:
    'The body is the report itself (`application/xml` or `text/xml` for JUnit XML, `application/json` for a Playwright JSON ' +
    'report, `application/zip` for either with its attachment files, or several reports), with options in the query; or ' +
    '`multipart/form-data` with a `file` part (any of those) and an optional `options` part (JSON, the same fields).\n\n' +
    'One upload becomes one job; each test case one completed run of the test with its full name (created once per project, ' +
    'so later imports build its history); steps, text cells and screenshots as docs/imports.md maps them. The whole upload ' +
    'is read and checked before anything is stored: malformed XML or JSON, XML with a DTD or entities, a broken ZIP, ' +
    'entries with `..` or absolute paths, an archive over `ATTEST_MAX_IMPORT_EXPANDED_BYTES` or `ATTEST_MAX_IMPORT_ENTRIES`, ' +
    'or a decompression bomb answer 400 and store nothing; a body over `ATTEST_MAX_IMPORT_BYTES` 413.\n\n' +
    'Accepted imports answer **202** with the import, whose job is written in the background: poll ' +
    '`GET /projects/{projectId}/imports/{importId}` (`Location`) until `completed`. An acknowledged import survives a ' +
    'restart: the upload is kept and the import resumes. With an `idempotencyKey` already used, the same file answers ' +
    '**200** with the import it started; another file 409.',
  tag: 'Imports',
  access: { scope: 'project', role: 'tester' },
  params: ProjectParams,
  querystring: ImportOptions,
  consumes: [...IMPORT_BODY_TYPES, 'multipart/form-data'],
  bodyLimit: 'maxImportBytes',
  body: Type.Object(
    {
      file: Type.String({
        contentMediaType: 'application/octet-stream',
        maxLength: 4096 * 1024 * 1024,
        description: 'The report, or a ZIP of reports and attachments (at most `ATTEST_MAX_IMPORT_BYTES`).',
      }),
      options: Type.Optional(ImportOptions),
    },
    { additionalProperties: false },
  ),
  responses: { 200: ImportRecord, 202: ImportRecord },
});

export const getImport = endpoint({
  operationId: 'getImport',
  method: 'GET',
  path: '/projects/{projectId}/imports/{importId}',
  summary: 'An import: its status, counts and the errors of each report file.',
  tag: 'Imports',
  access: { scope: 'project', role: 'viewer' },
  params: ImportParams,
  responses: { 200: ImportRecord },
});

export const listImports = endpoint({
  operationId: 'listImports',
  method: 'GET',
  path: '/projects/{projectId}/imports',
  summary: "A project's imports, newest first.",
  tag: 'Imports',
  access: { scope: 'project', role: 'viewer' },
  params: ProjectParams,
  querystring: Type.Object({ ...PageQuery }, { additionalProperties: false }),
  responses: { 200: Page(ImportRecord) },
});
