import { randomUUID } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import { BlobStorageError } from '../../blob/blob-store.ts';
import type { ServiceContext } from '../../context.ts';
import { insertArtifact, storeImage } from '../../db/repositories/artifacts.ts';
import type { ArtifactImageRow, ArtifactImagesTable, ArtifactsTable, Executor, ImagesTable } from '../../db/types.ts';
import { AppError, invalid } from '../../errors.ts';
import { artifactType } from '../../media/file-names.ts';
import { KEEP_FOR_DECODE_MAX_BYTES, KeptBytes } from '../../media/kept-bytes.ts';
import { type Inspected, UploadInspection } from '../../media/upload-inspection.ts';

// Evidence as uploads (services/evidence/artifacts.ts) and imports (services/imports/cases.ts) both store it:
// each file through the same type, size and decode checks into the blob store first; then, once
// every blob is durable, the artifact's rows in the caller's transaction (DUR-6, DUR-8). One writer,
// so an uploaded and an imported screenshot are the same rows.

export type ImageRole = ArtifactImagesTable['role'];

/** An artifact with its images in their order: what the details of an artifact show. */
export interface ArtifactWithImages {
  row: ArtifactsTable;
  images: ArtifactImageRow[];
}

/** A file whose blob is durable and checked; held from garbage collection until `release()`. */
export interface StoredFile extends Inspected {
  part: string;
  role: ImageRole | undefined;
  sha256: string;
  size: number;
  release(): void;
}

/**
 * Maps a failure while reading or storing an upload onto the problem catalogue: storage failures
 * become 507/503 (DUR-7), multipart limit errors 413, a malformed or cut-off body 400. Errors of
 * our own code (TypeError and the like) pass through and are reported as the bugs they are.
 */
export function uploadFailure(ctx: ServiceContext, error: unknown): unknown {
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

/** Streams one file (an upload's file part) through the inspection into the blob store. */
export async function storeFile(
  ctx: ServiceContext,
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

/** A file already in memory (an imported report's attachment), through the same checks as an upload's file part. */
export function storeFileBytes(ctx: ServiceContext, bytes: Uint8Array, image: boolean): Promise<StoredFile> {
  async function* once() {
    yield bytes;
  }
  return storeFile(ctx, once(), { part: 'file', role: image ? 'screenshot' : undefined });
}

async function readBlob(ctx: ServiceContext, sha256: string): Promise<Buffer> {
  const source = await ctx.blobs.get(sha256);
  if (!source) throw new Error(`the blob ${sha256} just stored is missing`);
  return buffer(source);
}

/** An artifact about to be written: what it is, where it belongs, and its files, every blob durable. */
export interface ArtifactDraft {
  projectId: string;
  runId: string;
  stepId: string | null;
  kind: ArtifactsTable['kind'];
  /** Already made storable (`sanitizeArtifactName`). */
  name: string;
  idempotencyKey: string | null;
  createdAt: string;
  createdBy: string | null;
  /** The artifact's own content: its file, or a visual diff's diff image. */
  content: StoredFile;
  /** Its images in their order: a screenshot's one, a visual diff's three; none for a plain file. */
  images: { role: ImageRole; file: StoredFile }[];
}

function artifactRow(draft: ArtifactDraft): ArtifactsTable {
  const { content, name } = draft;
  return {
    id: randomUUID(),
    project_id: draft.projectId,
    run_id: draft.runId,
    step_id: draft.stepId,
    kind: draft.kind,
    name,
    // Images keep the type of their bytes; other files may take a text type from their name.
    content_type: content.role ? content.contentType : artifactType(content.contentType, name),
    size: content.size,
    sha256: content.sha256,
    idempotency_key: draft.idempotencyKey,
    created_at: draft.createdAt,
    created_by: draft.createdBy,
  };
}

function imageRow(file: StoredFile, createdAt: string): ImagesTable {
  return {
    id: randomUUID(),
    sha256: file.sha256,
    content_type: file.contentType,
    // An image's file passed the raster inspection, which measured it.
    width: file.width as number,
    height: file.height as number,
    size: file.size,
    thumbnail_sha256: null,
    created_at: createdAt,
  };
}

/**
 * Writes one artifact's rows within the caller's transaction, after its blobs are durable: an image
 * row per image (an earlier upload's row when the bytes are known), the artifact, and its links in
 * order. Answers the artifact with the stored image rows, so an answer needs no read-back.
 */
export async function writeArtifact(trx: Executor, draft: ArtifactDraft): Promise<ArtifactWithImages> {
  const row = artifactRow(draft);
  const images: ArtifactImageRow[] = [];
  for (const { role, file } of draft.images) {
    const image = await storeImage(trx, imageRow(file, draft.createdAt));
    images.push({ ...image, artifact_id: row.id, role, position: images.length });
  }
  const links = images.map(({ id, role, position }): ArtifactImagesTable => ({ artifact_id: row.id, image_id: id, role, position }));
  await insertArtifact(trx, row, links);
  return { row, images };
}
