import { type TSchema, Type } from 'typebox';
import { ClientKey, NAME_MAX, Name, NoContent, Nullable, Page, PageQuery, Timestamp, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';
import { ProjectParams } from './projects.ts';

/** The only image types accepted and served inline; SVG and everything else is refused as an image. */
export const RASTER_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;

export const ArtifactKind = Type.Union([
  Type.Literal('screenshot'),
  Type.Literal('video'),
  Type.Literal('log'),
  Type.Literal('trace'),
  Type.Literal('file'),
  Type.Literal('visual-diff'),
]);
export const ImageRole = Type.Union([Type.Literal('screenshot'), Type.Literal('baseline'), Type.Literal('actual'), Type.Literal('diff')]);
export const Sha256 = Type.String({
  pattern: '^[0-9a-f]{64}$',
  minLength: 64,
  maxLength: 64,
  description: 'Lower-case hexadecimal SHA-256 of the bytes.',
});
/** A client-chosen key, unique within the run (the same shape as step and cell keys). */
const MediaType = Type.String({
  maxLength: 128,
  description:
    'The media type detected from the bytes (for text the bytes cannot tell, from the name: `.log`, `.txt`, `.json`, `.xml`, `.html`, `.csv`, `.md`), never the one the uploader declared.',
});
const ByteSize = Type.Integer({ minimum: 0, description: 'Size in bytes.' });
/** The ceiling of ATTEST_MAX_ARTIFACT_BYTES; the configured limit applies. */
const MAX_FILE_BYTES = 1024 ** 4;

export const ArtifactMetadata = Type.Object(
  {
    testRunId: Type.String({
      format: 'uuid',
      maxLength: 36,
      description: 'The run the evidence belongs to; it must be in the project of the path.',
    }),
    stepId: Type.Optional(Type.String({ format: 'uuid', maxLength: 36, description: 'The step that produced it (a step of that run).' })),
    stepKey: Type.Optional({ ...ClientKey, description: 'Or the step named by its client `key`.' }),
    kind: ArtifactKind,
    name: { ...Name, description: 'Display and download name; control characters, `/` and `\\` are removed and it is cut to 255 bytes.' },
    idempotencyKey: Type.Optional({
      ...ClientKey,
      description:
        'Makes a retried upload harmless: the same upload (kind, name, step and bytes) with a key already stored in the run answers 200 with the stored artifact; anything else reusing the key, 409.',
    }),
  },
  { additionalProperties: false, description: 'The `metadata` part of an upload (JSON).' },
);

const artifactFields = {
  id: Uuid,
  projectId: Uuid,
  testRunId: Uuid,
  stepId: Nullable(Uuid),
  kind: ArtifactKind,
  name: Type.String({ maxLength: NAME_MAX }),
  contentType: MediaType,
  size: ByteSize,
  sha256: Sha256,
  idempotencyKey: Nullable(ClientKey),
  createdAt: Timestamp,
};

export const Artifact = Type.Object(artifactFields, {
  additionalProperties: false,
  description:
    'Evidence of a run. `stepId` names the step that produced it (null when it belongs to the run as a whole). `contentType`, ' +
    '`size` and `sha256` describe its content: the file, or for a visual diff its diff image.',
});

export const ArtifactImage = Type.Object(
  {
    id: Uuid,
    role: ImageRole,
    contentType: Type.Union(RASTER_TYPES.map((t) => Type.Literal(t))),
    width: Type.Integer({ minimum: 1 }),
    height: Type.Integer({ minimum: 1 }),
    size: ByteSize,
    sha256: Sha256,
  },
  { additionalProperties: false, description: 'An image of an artifact; fetch its bytes with `GET /images/{id}`.' },
);

export const ArtifactDetails = Type.Object(
  {
    ...artifactFields,
    images: Type.Array(ArtifactImage, {
      maxItems: 3,
      description:
        'A screenshot has one image (role `screenshot`); a visual diff has `baseline`, `actual` and `diff`, in that order; other kinds none.',
    }),
  },
  { additionalProperties: false, description: 'An artifact with its images.' },
);

const filePart = (description: string) =>
  Type.String({ contentMediaType: 'application/octet-stream', maxLength: MAX_FILE_BYTES, description });

const ArtifactParams = Type.Object({ artifactId: Uuid }, { additionalProperties: false });

/** A byte download: any stored type for artifacts (see FILE-5 headers in the description). */
const download = (description: string, types: readonly string[]) => ({
  description,
  content: Object.fromEntries(
    types.map((t) => [t, { schema: Type.String({ contentMediaType: t, maxLength: MAX_FILE_BYTES }) as TSchema }]),
  ),
});

export const uploadArtifact = endpoint({
  operationId: 'uploadArtifact',
  method: 'POST',
  path: '/projects/{projectId}/artifact',
  summary: 'Attach evidence (a screenshot, video, log, trace, file or visual diff) to a run (tester).',
  description:
    'A `multipart/form-data` body: first the `metadata` part (JSON, as a field or a part of type `application/json`), then the ' +
    'file parts: `file` for every kind but `visual-diff`, which takes `baseline`, `actual` and `diff`. Files stream to storage; ' +
    'nothing is kept in memory.\n\n' +
    'Types are detected from the bytes, whatever the part declares. `screenshot` and `visual-diff` parts must be PNG, JPEG, GIF ' +
    'or WebP (else 415; SVG never is an image); their width and height are read from the header before anything decodes them, ' +
    'and a side over `ATTEST_MAX_IMAGE_SIDE`, more pixels than `ATTEST_MAX_IMAGE_PIXELS`, or an animated GIF or WebP whose ' +
    'frames × pixels exceed `ATTEST_MAX_ANIMATION_PIXELS` (or that has more than 10 000 frames) is a 422 `IMAGE_TOO_LARGE`; ' +
    'a GIF is measured by the canvas its frames cover, not only the size its header states. Other ' +
    'kinds keep the detected type, or `application/octet-stream`. Identical image bytes are stored once.\n\n' +
    'Limits: an image file at most `ATTEST_MAX_IMAGE_BYTES`, any other file `ATTEST_MAX_ARTIFACT_BYTES` (else 413, and nothing ' +
    'is stored); at most 10 files and 20 parts; the metadata at most 64 KiB; a run at most `ATTEST_MAX_ARTIFACTS_PER_RUN` ' +
    'artifacts (409 `TOO_MANY_ARTIFACTS`).\n\n' +
    'The run must belong to the project of the path (else 404) and be `running`, like for steps and cells: a queued run ' +
    'answers 409 `STATE_CONFLICT`, a completed or aborted one is frozen (409 `RUN_FROZEN`). An upload whose `idempotencyKey` is already stored in the run stores nothing and answers **200** with ' +
    'the stored artifact (also after the run finished), or 409 `STATE_CONFLICT` when the key was used for another kind, name ' +
    'or step. A new artifact answers **201**.',
  tag: 'Artifacts',
  access: { scope: 'project', role: 'tester' },
  params: ProjectParams,
  consumes: ['multipart/form-data'],
  body: Type.Object(
    {
      metadata: ArtifactMetadata,
      file: Type.Optional(filePart('The file, for every kind but `visual-diff`.')),
      baseline: Type.Optional(filePart('A visual diff: the expected image.')),
      actual: Type.Optional(filePart('A visual diff: the image the test saw.')),
      diff: Type.Optional(filePart('A visual diff: the difference image.')),
    },
    { additionalProperties: false },
  ),
  responses: { 201: ArtifactDetails, 200: ArtifactDetails },
});

export const listArtifacts = endpoint({
  operationId: 'listArtifacts',
  method: 'GET',
  path: '/projects/{projectId}/artifact',
  summary: 'The artifact metadata of a run in this project (documented endpoint 3), in upload order.',
  description:
    'Without `limit` and `cursor` the answer holds every artifact of the run (a run holds at most ' +
    '`ATTEST_MAX_ARTIFACTS_PER_RUN`) and `nextCursor` is null, so one call is enough; with them it pages like every list. ' +
    'A run of another project, or an unknown one, answers 404.',
  tag: 'Artifacts',
  access: { scope: 'project', role: 'viewer' },
  params: ProjectParams,
  querystring: Type.Object({ testRunId: Uuid, ...PageQuery }, { additionalProperties: false }),
  responses: { 200: Page(Artifact) },
});

export const getArtifacts = endpoint({
  operationId: 'getArtifacts',
  method: 'GET',
  path: '/artifact/artifacts',
  summary: 'Details of artifacts by id, with the ids of their images (documented endpoint 4).',
  description:
    '`ids` is a comma-separated list of at most `ATTEST_MAX_IDS_PER_BATCH` artifact ids (more is a 400). `items` follow the order ' +
    'of `ids`; `missing` lists the requested ids that are unknown or in projects the caller cannot see, without telling which.',
  tag: 'Artifacts',
  access: { scope: 'project', role: 'viewer' },
  querystring: Type.Object(
    {
      ids: Type.String({
        minLength: 1,
        maxLength: 10_000 * 37,
        pattern: '^[^,]+(,[^,]+)*$',
        description: 'Comma-separated artifact ids.',
      }),
    },
    { additionalProperties: false },
  ),
  responses: {
    200: Type.Object(
      {
        items: Type.Array(ArtifactDetails, { maxItems: 10_000 }),
        missing: Type.Array(Uuid, { maxItems: 10_000, description: 'Requested ids that are unknown or not visible to the caller.' }),
      },
      { additionalProperties: false },
    ),
  },
});

export const getArtifactContent = endpoint({
  operationId: 'getArtifactContent',
  method: 'GET',
  path: '/artifact/artifacts/{artifactId}/content',
  summary: "Download an artifact's content (a visual diff's content is its diff image).",
  description:
    'Sent with its detected `Content-Type`, `X-Content-Type-Options: nosniff`, a sandboxing `Content-Security-Policy`, and ' +
    "`Content-Disposition: inline` for PNG, JPEG, GIF and WebP, `attachment; filename*=UTF-8''…` for everything else. " +
    '`ETag` is the SHA-256; `If-None-Match` answers 304, `Range: bytes=…` (one range) answers 206, or 416 when it lies outside.',
  tag: 'Artifacts',
  access: { scope: 'project', role: 'viewer' },
  params: ArtifactParams,
  binary: true,
  responses: {
    200: download('The content.', ['application/octet-stream', ...RASTER_TYPES]),
    206: download('The requested byte range of the content.', ['application/octet-stream', ...RASTER_TYPES]),
    304: NoContent,
  },
});

export const deleteArtifact = endpoint({
  operationId: 'deleteArtifact',
  method: 'DELETE',
  path: '/artifact/artifacts/{artifactId}',
  summary: 'Delete an artifact (manager); storage no other artifact uses is reclaimed later by garbage collection.',
  tag: 'Artifacts',
  access: { scope: 'project', role: 'manager' },
  params: ArtifactParams,
  responses: { 204: NoContent },
});
