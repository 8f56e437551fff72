import { randomUUID } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import sjson from 'secure-json-parse';
import type { Static } from 'typebox';
import { ArtifactMetadata } from '../../api/v1/artifacts.ts';
import { BlobStorageError } from '../blob/blob-store.ts';
import { type AppContext, nowIso } from '../context.ts';
import { isForeignKeyViolation, isUniqueViolation } from '../db/errors.ts';
import type { Page, PageRequest } from '../db/pagination.ts';
import {
  deleteArtifactRow,
  findArtifact,
  findArtifactByIdempotencyKey,
  findVisibleArtifacts,
  imagesOfArtifacts,
  insertArtifact,
  listArtifactsOfRun,
  storeImage,
} from '../db/repositories/artifacts.ts';
import { findStepOfRun } from '../db/repositories/results.ts';
import { findRun, runWithArtifactCount } from '../db/repositories/runs.ts';
import { inTransaction } from '../db/repositories/transaction.ts';
import type { ArtifactImageRow, ArtifactImagesTable, ArtifactsTable, TestRunsTable, VisibleProjects } from '../db/types.ts';
import { AppError, found, invalid, notFound } from '../errors.ts';
import { artifactType, sanitizeArtifactName } from '../media/file-names.ts';
import { KEEP_FOR_DECODE_MAX_BYTES, KeptBytes } from '../media/kept-bytes.ts';
import { type Inspected, UploadInspection } from '../media/upload-inspection.ts';
import { compileValidator, isUuid, rejectNulCharacters } from '../validation.ts';
import { digestParts, sameDigests, storedDigests } from './upload-digests.ts';
import { assertQuotaLeft, assertWithinQuota } from './usage.ts';

type Kind = ArtifactsTable['kind'];
type ImageRole = ArtifactImagesTable['role'];
type Metadata = Static<typeof ArtifactMetadata>;

/** An artifact with its images in their order: what the details of an artifact show. */
export interface ArtifactWithImages {
  row: ArtifactsTable;
  images: ArtifactImageRow[];
}

/** The run an upload or a listing names, if it belongs to that project; any other is as unknown as a missing one. */
function runInProject<R extends TestRunsTable>(run: R | undefined, projectId: string): R {
  return found(run?.project_id === projectId ? run : undefined, 'The test run');
}

/** One part of a multipart upload, in the order it arrived. */
export type UploadPart =
  | { type: 'field'; name: string; value: unknown; truncated: boolean }
  | { type: 'file'; name: string; stream: AsyncIterable<Uint8Array> };

/**
 * Evidence goes to a running run only, like its steps and cells: a queued run has not started, and
 * a completed or aborted one is finished and its results, artifacts included, are frozen.
 */
function assertRunTakesArtifacts(status: string): void {
  if (status === 'completed' || status === 'aborted') throw new AppError('RUN_FROZEN', `The run is ${status}; it takes no more artifacts.`);
  if (status !== 'running') throw new AppError('STATE_CONFLICT', `The run is ${status}; artifacts are attached once it is running.`);
}
/** A run holds at most ATTEST_MAX_ARTIFACTS_PER_RUN artifacts, so its listing always fits one answer. */
function assertRoomForArtifact(ctx: AppContext, artifactCount: number): void {
  if (artifactCount >= ctx.config.maxArtifactsPerRun) {
    throw new AppError('TOO_MANY_ARTIFACTS', `A run holds at most ${ctx.config.maxArtifactsPerRun} artifacts.`);
  }
}

/** The metadata part's bound, as busboy's `fieldSize` for a metadata sent as a field. */
const METADATA_MAX_BYTES = 64 * 1024;
/** The most a run's listing holds in one answer: the `items` bound of the contract. */
const RUN_LISTING_MAX = 10_000;
const validateMetadata = compileValidator(ArtifactMetadata, '/body/metadata');

/** Which file parts each kind takes, in the order its images are listed. */
function filePartsOf(kind: Kind): { part: string; role: ImageRole | undefined }[] {
  if (kind === 'visual-diff') {
    return [
      { part: 'baseline', role: 'baseline' },
      { part: 'actual', role: 'actual' },
      { part: 'diff', role: 'diff' },
    ];
  }
  return [{ part: 'file', role: kind === 'screenshot' ? 'screenshot' : undefined }];
}

/**
 * Maps a failure while reading or storing an upload onto the problem catalogue: storage failures
 * become 507/503 (DUR-7), multipart limit errors 413, a malformed or cut-off body 400. Errors of
 * our own code (TypeError and the like) pass through and are reported as the bugs they are.
 */
export function uploadFailure(ctx: AppContext, error: unknown): unknown {
  if (error instanceof AppError) return error;
  if (error instanceof BlobStorageError) {
    ctx.log.error({ err: error }, 'storing an upload failed');
    return error.reason === 'full'
      ? new AppError('STORAGE_FULL', 'The storage is full; nothing was stored.')
      : new AppError('UNAVAILABLE', 'The storage failed; nothing was stored. Retry later.', { headers: { 'retry-after': '5' } });
  }
  if (error instanceof TypeError || error instanceof RangeError || error instanceof ReferenceError) return error;
  const { code, statusCode } = (error ?? {}) as { code?: string; statusCode?: number };
  if (statusCode === 413) return new AppError('PAYLOAD_TOO_LARGE', 'The upload has more files, parts or fields than allowed.');
  if (code === 'FST_INVALID_JSON_FIELD_ERROR') return invalid('/body/metadata', 'is not valid JSON');
  return new AppError('INVALID_INPUT', 'The multipart body is malformed or ended early.');
}

async function readText(stream: AsyncIterable<Uint8Array>, maxBytes: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for await (const chunk of stream) {
    bytes += chunk.byteLength;
    if (bytes > maxBytes) throw new AppError('PAYLOAD_TOO_LARGE', `The metadata part may be at most ${maxBytes} bytes.`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The `metadata` part: a field (plain, or already parsed when it declared application/json) or a JSON file part. */
async function readMetadata(part: UploadPart | undefined): Promise<Metadata> {
  if (part?.name !== 'metadata') throw invalid('/body/metadata', 'must be the first part of the upload');
  let value: unknown;
  if (part.type === 'field' && typeof part.value !== 'string') {
    value = part.value;
  } else {
    if (part.type === 'field' && part.truncated)
      throw new AppError('PAYLOAD_TOO_LARGE', `The metadata part may be at most ${METADATA_MAX_BYTES} bytes.`);
    const text = part.type === 'field' ? (part.value as string) : await readText(part.stream, METADATA_MAX_BYTES);
    try {
      value = sjson.parse(text, { protoAction: 'error', constructorAction: 'error' });
    } catch {
      throw invalid('/body/metadata', 'is not valid JSON');
    }
  }
  const metadata = validateMetadata(value);
  if (metadata.stepId !== undefined && metadata.stepKey !== undefined)
    throw invalid('/body/metadata/stepKey', 'name the step by stepId or by stepKey, not both');
  rejectNulCharacters(metadata.stepKey, '/body/metadata/stepKey');
  rejectNulCharacters(metadata.idempotencyKey, '/body/metadata/idempotencyKey');
  return metadata;
}

async function detailsOf(ctx: AppContext, row: ArtifactsTable): Promise<ArtifactWithImages> {
  const images = await imagesOfArtifacts(ctx.db, [row.id]);
  return { row, images: images.get(row.id) ?? [] };
}

export interface StoredFile extends Inspected {
  part: string;
  role: ImageRole | undefined;
  sha256: string;
  size: number;
  release(): void;
}

/**
 * Stores an uploaded artifact: metadata first, then each file streamed through the type and size
 * checks into the blob store, then, once every blob is durable, one transaction for the rows
 * (DUR-6, DUR-8). Answers `created: false` with the stored artifact when the idempotency key was
 * already used in the run; then nothing new is stored.
 */
export async function ingestArtifact(
  ctx: AppContext,
  input: { projectId: string; userId: string; parts: AsyncIterable<UploadPart> },
): Promise<{ created: boolean; artifact: ArtifactWithImages }> {
  const parts = input.parts[Symbol.asyncIterator]();
  const metadata = await readMetadata((await parts.next()).value as UploadPart | undefined);
  const name = sanitizeArtifactName(metadata.name);
  if (name === '') throw invalid('/body/metadata/name', 'is empty once control characters and slashes are removed');

  const run = runInProject(await runWithArtifactCount(ctx.db, metadata.testRunId.toLowerCase()), input.projectId);
  let stepId: string | null = null;
  if (metadata.stepId !== undefined || metadata.stepKey !== undefined) {
    const step = metadata.stepId !== undefined ? { id: metadata.stepId.toLowerCase() } : { key: metadata.stepKey as string };
    stepId = (await findStepOfRun(ctx.db, run.id, step)) ?? null;
    if (stepId === null) {
      const field = metadata.stepId !== undefined ? 'stepId' : 'stepKey';
      throw invalid(`/body/metadata/${field}`, 'does not name a step of this run');
    }
  }

  // A retry answers the first artifact only when it is the same upload: the same kind, name and
  // step, and the same bytes in every file part. Anything else reusing the key is a 409, like
  // results posts and run creation.
  const replay = async (stored: ArtifactsTable, digests: () => Promise<Map<string, string>>) => {
    if (stored.kind !== metadata.kind || stored.name !== name || stored.step_id !== stepId) {
      throw new AppError('STATE_CONFLICT', 'This idempotencyKey was already used in the run for another kind, name or step.');
    }
    const artifact = await detailsOf(ctx, stored);
    if (!sameDigests(storedDigests(artifact), await digests())) {
      throw new AppError('STATE_CONFLICT', 'This idempotencyKey was already used in the run with other content.');
    }
    return { created: false, artifact };
  };
  if (metadata.idempotencyKey !== undefined) {
    const stored = await findArtifactByIdempotencyKey(ctx.db, run.id, metadata.idempotencyKey);
    if (stored) {
      return replay(stored, () =>
        digestParts(parts).catch((error: unknown) => {
          throw uploadFailure(ctx, error);
        }),
      );
    }
  }
  // Cheap early refusals; both are checked again under the lock of the final transaction.
  assertRunTakesArtifacts(run.status);
  assertRoomForArtifact(ctx, run.artifact_count);
  // Only a project with a quota pays for its check (RET-5).
  if (run.quota_bytes !== null) await assertQuotaLeft(ctx.db, input.projectId);

  const expected = filePartsOf(metadata.kind);
  const stored: StoredFile[] = [];
  try {
    for (let next = await parts.next(); !next.done; next = await parts.next()) {
      const part = next.value;
      const slot = expected.find((e) => e.part === part.name);
      if (part.type !== 'file' || !slot) {
        const allowed = expected.map((e) => e.part).join(', ');
        throw invalid(`/body/${part.name}`, `is not a part a ${metadata.kind} upload takes (after metadata: ${allowed})`);
      }
      if (stored.some((s) => s.part === part.name)) throw invalid(`/body/${part.name}`, 'is sent more than once');
      stored.push(await storeFile(ctx, part.stream, slot));
    }
    const absent = expected.find((e) => !stored.some((s) => s.part === e.part));
    if (absent) throw invalid(`/body/${absent.part}`, `is required for a ${metadata.kind} upload`);

    // The artifact's own content: its file, or a visual diff's diff image.
    const content = stored.find((s) => s.part === 'file' || s.part === 'diff') as StoredFile;
    const now = nowIso(ctx);
    const images: ArtifactImageRow[] = [];
    const row: ArtifactsTable = {
      id: randomUUID(),
      project_id: input.projectId,
      run_id: run.id,
      step_id: stepId,
      kind: metadata.kind,
      name,
      // Images keep the type of their bytes; other files may take a text type from their name.
      content_type: content.role ? content.contentType : artifactType(content.contentType, name),
      size: content.size,
      sha256: content.sha256,
      idempotency_key: metadata.idempotencyKey ?? null,
      created_at: now,
      created_by: input.userId,
    };
    try {
      await inTransaction(ctx.db, async (trx) => {
        // Every blob is durable by now (put resolved); the rows that reference them commit together.
        // The run stays locked until they do, so a concurrent completion or another upload's count
        // check waits for this one.
        const locked = runInProject(await runWithArtifactCount(trx, run.id, true), input.projectId);
        assertRunTakesArtifacts(locked.status);
        assertRoomForArtifact(ctx, locked.artifact_count);
        if (locked.quota_bytes !== null) await assertWithinQuota(trx, input.projectId, stored);
        const links: ArtifactImagesTable[] = [];
        for (const file of stored) {
          if (!file.role) continue;
          const image = await storeImage(trx, {
            id: randomUUID(),
            sha256: file.sha256,
            content_type: file.contentType,
            width: file.width as number,
            height: file.height as number,
            size: file.size,
            thumbnail_sha256: null,
            created_at: now,
          });
          // The stored row (an earlier upload's, for known bytes) is what the answer shows: no read-back after the commit.
          images.push({ ...image, artifact_id: row.id, role: file.role, position: links.length });
          links.push({ artifact_id: row.id, image_id: image.id, role: file.role, position: links.length });
        }
        await insertArtifact(trx, row, links);
        ctx.crashPoint('before-commit');
      });
    } catch (error) {
      // A concurrent retry with the same key committed first: answer with its artifact.
      if (metadata.idempotencyKey !== undefined && isUniqueViolation(error)) {
        const winner = await findArtifactByIdempotencyKey(ctx.db, run.id, metadata.idempotencyKey);
        if (winner) return replay(winner, async () => new Map(stored.map((file) => [file.part, file.sha256])));
      }
      // The run or step was deleted meanwhile.
      if (isForeignKeyViolation(error)) throw notFound('The test run or step');
      throw error;
    }
    ctx.crashPoint('after-commit-before-response');
    return { created: true, artifact: { row, images } };
  } finally {
    // Each blob is held from its put until its row has committed, or never will: garbage
    // collection may judge it from now on.
    for (const file of stored) file.release();
  }
}

/** A file already in memory (an imported report's attachment), through the same checks as an upload's file part. */
export function storeFileBytes(ctx: AppContext, bytes: Uint8Array, image: boolean): Promise<StoredFile> {
  async function* once() {
    yield bytes;
  }
  return storeFile(ctx, once(), { part: 'file', role: image ? 'screenshot' : undefined });
}

/** Streams one file part through the inspection into the blob store. */
async function storeFile(
  ctx: AppContext,
  stream: AsyncIterable<Uint8Array>,
  slot: { part: string; role: ImageRole | undefined },
): Promise<StoredFile> {
  const { config } = ctx;
  const image = slot.role !== undefined;
  const inspection = new UploadInspection({
    image,
    maxBytes: image ? config.maxImageBytes : config.maxArtifactBytes,
    maxSide: config.maxImageSide,
    maxPixels: config.maxImagePixels,
    maxAnimationPixels: config.maxAnimationPixels,
  });
  const kept = image ? new KeptBytes(KEEP_FOR_DECODE_MAX_BYTES) : undefined;
  try {
    const blob = await ctx.blobs.put(kept ? kept.keep(inspection.pass(stream)) : inspection.pass(stream));
    try {
      // Decoded (from memory when kept) before anything is acknowledged; if not, released unreferenced for GC.
      if (image) {
        const bytes = kept?.bytes();
        await ctx.thumbnails.checkDecodes(async () => bytes ?? readBlob(ctx, blob.sha256), bytes, blob.sha256);
      }
    } catch (error) {
      blob.release();
      throw error;
    }
    return { ...slot, ...inspection.result(), sha256: blob.sha256, size: blob.size, release: blob.release };
  } catch (error) {
    throw uploadFailure(ctx, error);
  }
}

async function readBlob(ctx: AppContext, sha256: string): Promise<Buffer> {
  const source = await ctx.blobs.get(sha256);
  if (!source) throw new Error(`the blob ${sha256} just stored is missing`);
  return buffer(source);
}

/** The largest request body an upload can need: the bigger of one artifact file and a visual diff's three images, plus room for metadata and part headers. */
export function uploadRequestLimit(config: AppContext['config']): number {
  return Math.max(config.maxArtifactBytes, 3 * config.maxImageBytes) + METADATA_MAX_BYTES + 1024 * 1024;
}

/**
 * A run's artifacts in upload order. Without `limit` and `cursor` the whole run in one answer (the
 * documented retrieval sequence reads it with one call); with them, one page of the list convention.
 */
export async function listRunArtifacts(
  ctx: AppContext,
  projectId: string,
  runId: string,
  page: PageRequest | undefined,
): Promise<Page<ArtifactsTable>> {
  const run = runInProject(await findRun(ctx.db, runId), projectId);
  return listArtifactsOfRun(ctx.db, run.id, page ?? { max: RUN_LISTING_MAX });
}

/**
 * Details of the artifacts named by a comma-separated id list, in the order asked, each with its
 * images. Ids that are unknown and ids of projects the caller cannot see both land in `missing`:
 * the query filters by visibility, so the two cases are the same by construction.
 */
export async function artifactDetailsByIds(
  ctx: AppContext,
  idList: string,
  projects: VisibleProjects,
): Promise<{ items: ArtifactWithImages[]; missing: string[] }> {
  const ids = [...new Set(idList.split(',').map((id) => id.trim().toLowerCase()))];
  const malformed = ids.find((id) => !isUuid(id));
  if (malformed !== undefined) throw invalid('/query/ids', `must be artifact ids (UUIDs); "${malformed.slice(0, 40)}" is not one`);
  if (ids.length > ctx.config.maxIdsPerBatch)
    throw invalid('/query/ids', `must name at most ${ctx.config.maxIdsPerBatch} ids (got ${ids.length})`);
  const rows = await findVisibleArtifacts(ctx.db, ids, projects);
  const images = await imagesOfArtifacts(
    ctx.db,
    rows.map((r) => r.id),
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  const items: ArtifactWithImages[] = [];
  const missing: string[] = [];
  for (const id of ids) {
    const row = byId.get(id);
    if (row) items.push({ row, images: images.get(id) ?? [] });
    else missing.push(id);
  }
  return { items, missing };
}

/** Deletes an artifact's row (its image links go with it). Its blobs stay until garbage collection finds them unreferenced (DUR-8). */
export async function deleteArtifact(ctx: AppContext, artifactId: string): Promise<void> {
  if (!(await deleteArtifactRow(ctx.db, artifactId))) throw notFound('The artifact');
  // Its images may have no visible use left (PERF-6); no run's results show artifacts, so those stay kept.
  ctx.imageUses.forgetAll();
  ctx.owners.forget('artifact', artifactId);
  ctx.crashPoint('after-row-delete');
}

export const getArtifact = async (ctx: AppContext, artifactId: string): Promise<ArtifactsTable> =>
  found(await findArtifact(ctx.db, artifactId), 'The artifact');
