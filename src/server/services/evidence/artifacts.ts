import sjson from 'secure-json-parse';
import type { Static } from 'typebox';
import { ArtifactMetadata } from '../../../api/v1/artifacts.ts';
import { nowIso, type ServiceContext } from '../../context.ts';
import { isForeignKeyViolation, isUniqueViolation } from '../../db/errors.ts';
import type { Page, PageRequest } from '../../db/pagination.ts';
import {
  deleteArtifactRow,
  findArtifact,
  findArtifactByIdempotencyKey,
  findVisibleArtifacts,
  imagesOfArtifacts,
  listArtifactsOfRun,
} from '../../db/repositories/artifacts.ts';
import { findStepOfRun } from '../../db/repositories/results.ts';
import { findRun, runWithArtifactCount } from '../../db/repositories/runs.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { ArtifactsTable, TestRunsTable, VisibleProjects } from '../../db/types.ts';
import { AppError, found, invalid, notFound } from '../../errors.ts';
import { sanitizeArtifactName } from '../../media/file-names.ts';
import { compileValidator, isUuid, rejectNulCharacters } from '../../validation.ts';
import { assertQuotaLeft, assertWithinQuota } from '../operations/usage.ts';
import { digestParts, sameDigests, storedDigests } from './upload-digests.ts';
import {
  type ArtifactDraft,
  type ArtifactWithImages,
  type ImageRole,
  type StoredFile,
  storeFile,
  uploadFailure,
  writeArtifact,
} from './writer.ts';

type Kind = ArtifactsTable['kind'];
type Metadata = Static<typeof ArtifactMetadata>;

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
function assertRoomForArtifact(ctx: ServiceContext, artifactCount: number): void {
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

async function detailsOf(ctx: ServiceContext, row: ArtifactsTable): Promise<ArtifactWithImages> {
  const images = await imagesOfArtifacts(ctx.db, [row.id]);
  return { row, images: images.get(row.id) ?? [] };
}

type UploadRun = NonNullable<Awaited<ReturnType<typeof runWithArtifactCount>>>;

/** What an upload's metadata part names, checked: the artifact's kind and storable name, its run and step. */
interface UploadTarget {
  metadata: Metadata;
  name: string;
  run: UploadRun;
  stepId: string | null;
}

/** The step an upload's metadata names, by id or by key, as a step of the run; null when it names none. */
async function stepOfUpload(ctx: ServiceContext, runId: string, metadata: Metadata): Promise<string | null> {
  if (metadata.stepId === undefined && metadata.stepKey === undefined) return null;
  const step = metadata.stepId !== undefined ? { id: metadata.stepId.toLowerCase() } : { key: metadata.stepKey as string };
  const stepId = (await findStepOfRun(ctx.db, runId, step)) ?? null;
  if (stepId === null) {
    const field = metadata.stepId !== undefined ? 'stepId' : 'stepKey';
    throw invalid(`/body/metadata/${field}`, 'does not name a step of this run');
  }
  return stepId;
}

/** Reads the metadata part (the first) and finds the run and step it names in the project. */
async function readUploadTarget(ctx: ServiceContext, parts: AsyncIterator<UploadPart>, projectId: string): Promise<UploadTarget> {
  const metadata = await readMetadata((await parts.next()).value as UploadPart | undefined);
  const name = sanitizeArtifactName(metadata.name);
  if (name === '') throw invalid('/body/metadata/name', 'is empty once control characters and slashes are removed');
  const run = runInProject(await runWithArtifactCount(ctx.db, metadata.testRunId.toLowerCase()), projectId);
  return { metadata, name, run, stepId: await stepOfUpload(ctx, run.id, metadata) };
}

/**
 * A retry answers the first artifact only when it is the same upload: the same kind, name and
 * step, and the same bytes in every file part. Anything else reusing the key is a 409, like
 * results posts and run creation.
 */
async function replayUpload(
  ctx: ServiceContext,
  target: UploadTarget,
  stored: ArtifactsTable,
  digests: () => Promise<Map<string, string>>,
): Promise<{ created: false; artifact: ArtifactWithImages }> {
  if (stored.kind !== target.metadata.kind || stored.name !== target.name || stored.step_id !== target.stepId) {
    throw new AppError('STATE_CONFLICT', 'This idempotencyKey was already used in the run for another kind, name or step.');
  }
  const artifact = await detailsOf(ctx, stored);
  if (!sameDigests(storedDigests(artifact), await digests())) {
    throw new AppError('STATE_CONFLICT', 'This idempotencyKey was already used in the run with other content.');
  }
  return { created: false, artifact };
}

/** Cheap refusals before a byte is stored; each is judged again under the lock of the final transaction. */
async function refuseEarly(ctx: ServiceContext, run: UploadRun, projectId: string): Promise<void> {
  assertRunTakesArtifacts(run.status);
  assertRoomForArtifact(ctx, run.artifact_count);
  // Only a project with a quota pays for its check (RET-5).
  if (run.quota_bytes !== null) await assertQuotaLeft(ctx.db, projectId);
}

const releaseAll = (files: readonly StoredFile[]): void => {
  for (const file of files) file.release();
};

/** Streams the file parts after the metadata into the blob store: each part the kind takes, once. A failure releases what was stored. */
async function storeFileParts(ctx: ServiceContext, parts: AsyncIterator<UploadPart>, kind: Kind): Promise<StoredFile[]> {
  const expected = filePartsOf(kind);
  const stored: StoredFile[] = [];
  try {
    for (let next = await parts.next(); !next.done; next = await parts.next()) {
      const part = next.value;
      const slot = expected.find((e) => e.part === part.name);
      if (part.type !== 'file' || !slot) {
        const allowed = expected.map((e) => e.part).join(', ');
        throw invalid(`/body/${part.name}`, `is not a part a ${kind} upload takes (after metadata: ${allowed})`);
      }
      if (stored.some((s) => s.part === part.name)) throw invalid(`/body/${part.name}`, 'is sent more than once');
      stored.push(await storeFile(ctx, part.stream, slot));
    }
    const absent = expected.find((e) => !stored.some((s) => s.part === e.part));
    if (absent) throw invalid(`/body/${absent.part}`, `is required for a ${kind} upload`);
    return stored;
  } catch (error) {
    releaseAll(stored);
    throw error;
  }
}

/** The artifact the stored parts make: its content is its file or a visual diff's diff image; its images come in the order sent. */
function uploadDraft(ctx: ServiceContext, userId: string, target: UploadTarget, stored: StoredFile[]): ArtifactDraft {
  return {
    projectId: target.run.project_id,
    runId: target.run.id,
    stepId: target.stepId,
    kind: target.metadata.kind,
    name: target.name,
    idempotencyKey: target.metadata.idempotencyKey ?? null,
    createdAt: nowIso(ctx),
    createdBy: userId,
    content: stored.find((s) => s.part === 'file' || s.part === 'diff') as StoredFile,
    images: stored.flatMap((file) => (file.role ? [{ role: file.role, file }] : [])),
  };
}

/**
 * The rows of an upload whose blobs are all durable (put resolved), committed together. The run stays
 * locked until they are, so a concurrent completion or another upload's count check waits for this one.
 */
function commitUploadRows(ctx: ServiceContext, draft: ArtifactDraft, stored: StoredFile[]): Promise<ArtifactWithImages> {
  return inTransaction(ctx.db, async (trx) => {
    const locked = runInProject(await runWithArtifactCount(trx, draft.runId, true), draft.projectId);
    assertRunTakesArtifacts(locked.status);
    assertRoomForArtifact(ctx, locked.artifact_count);
    if (locked.quota_bytes !== null) await assertWithinQuota(trx, draft.projectId, stored);
    const artifact = await writeArtifact(trx, draft);
    ctx.crashPoint('before-commit');
    return artifact;
  });
}

/** Commits the upload; a concurrent retry with the same key that committed first is answered instead. */
async function commitUpload(
  ctx: ServiceContext,
  target: UploadTarget,
  draft: ArtifactDraft,
  stored: StoredFile[],
): Promise<{ created: boolean; artifact: ArtifactWithImages }> {
  try {
    return { created: true, artifact: await commitUploadRows(ctx, draft, stored) };
  } catch (error) {
    if (draft.idempotencyKey !== null && isUniqueViolation(error)) {
      const winner = await findArtifactByIdempotencyKey(ctx.db, draft.runId, draft.idempotencyKey);
      if (winner) return replayUpload(ctx, target, winner, async () => new Map(stored.map((file) => [file.part, file.sha256])));
    }
    // The run or step was deleted meanwhile.
    if (isForeignKeyViolation(error)) throw notFound('The test run or step');
    throw error;
  }
}

/**
 * Stores an uploaded artifact: metadata first, then each file streamed through the type and size
 * checks into the blob store, then, once every blob is durable, one transaction for the rows
 * (DUR-6, DUR-8). Answers `created: false` with the stored artifact when the idempotency key was
 * already used in the run; then nothing new is stored.
 */
export async function ingestArtifact(
  ctx: ServiceContext,
  input: { projectId: string; userId: string; parts: AsyncIterable<UploadPart> },
): Promise<{ created: boolean; artifact: ArtifactWithImages }> {
  const parts = input.parts[Symbol.asyncIterator]();
  const target = await readUploadTarget(ctx, parts, input.projectId);
  const key = target.metadata.idempotencyKey;
  const earlier = key === undefined ? undefined : await findArtifactByIdempotencyKey(ctx.db, target.run.id, key);
  if (earlier) {
    const sentDigests = () =>
      digestParts(parts).catch((error: unknown) => {
        throw uploadFailure(ctx, error);
      });
    return replayUpload(ctx, target, earlier, sentDigests);
  }
  await refuseEarly(ctx, target.run, input.projectId);
  const stored = await storeFileParts(ctx, parts, target.metadata.kind);
  try {
    const outcome = await commitUpload(ctx, target, uploadDraft(ctx, input.userId, target, stored), stored);
    if (outcome.created) ctx.crashPoint('after-commit-before-response');
    return outcome;
  } finally {
    // Each blob is held from its put until its row has committed, or never will: garbage
    // collection may judge it from now on.
    releaseAll(stored);
  }
}

/** The largest request body an upload can need: the bigger of one artifact file and a visual diff's three images, plus room for metadata and part headers. */
export function uploadRequestLimit(config: ServiceContext['config']): number {
  return Math.max(config.maxArtifactBytes, 3 * config.maxImageBytes) + METADATA_MAX_BYTES + 1024 * 1024;
}

/**
 * A run's artifacts in upload order. Without `limit` and `cursor` the whole run in one answer (the
 * documented retrieval sequence reads it with one call); with them, one page of the list convention.
 */
export async function listRunArtifacts(
  ctx: ServiceContext,
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
  ctx: ServiceContext,
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
export async function deleteArtifact(ctx: ServiceContext, artifactId: string): Promise<void> {
  if (!(await deleteArtifactRow(ctx.db, artifactId))) throw notFound('The artifact');
  // Its images may have no visible use left (PERF-6), and its owner is gone (PERF-7).
  ctx.changes.emit({ kind: 'artifact-deleted', artifactId });
  ctx.crashPoint('after-row-delete');
}

export const getArtifact = async (ctx: ServiceContext, artifactId: string): Promise<ArtifactsTable> =>
  found(await findArtifact(ctx.db, artifactId), 'The artifact');
