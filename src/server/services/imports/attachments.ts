import { ArchiveIndex, resolveAttachment } from '../../../import/archive.ts';
import type { ImportedAttachment, ImportedFile } from '../../../import/model.ts';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { type ImageRole, type StoredFile, storeFileBytes } from '../evidence/writer.ts';

// The attachments of imported cases (IMP-2): their bytes found inline or in the upload's archive,
// then stored as blobs through the checks uploads take, before the batch's transaction names them
// (import-writer.ts). What cannot be stored is left out and said, per report file.

/** What could not be stored, and why, for the report file it came from. */
export type Problems = { file: string; message: string }[];

/** An attachment of a case whose run is being written, waiting for its blobs. */
export interface PendingAttachment {
  attachment: ImportedAttachment;
  stepId: string | null;
  runId: string;
  file: string;
}

/** Archive indexes by the files they index: built once per import, not once per batch. */
const indexes = new WeakMap<ReadonlyMap<string, Uint8Array>, ArchiveIndex>();
function indexOf(files: ReadonlyMap<string, Uint8Array>): ArchiveIndex {
  let index = indexes.get(files);
  if (!index) {
    index = new ArchiveIndex(files);
    indexes.set(files, index);
  }
  return index;
}

/** The bytes of an attachment (or of one image of a visual diff): inline, or the archive file it names. */
function attachmentBytes(files: ReadonlyMap<string, Uint8Array>, pending: PendingAttachment, file?: ImportedFile): Uint8Array | string {
  const attachment = file ?? pending.attachment;
  if (attachment.body) return attachment.body;
  if (attachment.path === undefined) return `attachment "${attachment.name}" has neither a path nor a body`;
  const entry = resolveAttachment(indexOf(files), pending.file, attachment.path);
  const bytes = entry === undefined ? undefined : files.get(entry);
  return bytes ?? `attachment "${attachment.name}" names ${attachment.path}, which the upload does not hold`;
}

export interface StoredAttachment {
  pending: PendingAttachment;
  /** The artifact's content; for a visual diff, its diff image. */
  content: StoredFile;
  /** Its images in order: a screenshot's one, a visual diff's baseline, actual and diff (the last is `content`); none for a file. */
  images: { role: ImageRole; file: StoredFile }[];
}

/** The blobs an attachment holds: its images, or its one file. */
export const filesOf = ({ content, images }: StoredAttachment): StoredFile[] =>
  images.length > 0 ? images.map((image) => image.file) : [content];

export function releaseAttachments(stored: readonly StoredAttachment[]): void {
  for (const attachment of stored) for (const file of filesOf(attachment)) file.release();
}

const VISUAL_DIFF_ROLES = ['baseline', 'actual', 'diff'] as const;

/**
 * A visual diff's three images stored as images; `undefined` when one is missing or no raster image,
 * and then the caller keeps them as separate attachments (`asSeparateImages`), as they came.
 */
async function storeVisualDiff(
  ctx: ServiceContext,
  files: ReadonlyMap<string, Uint8Array>,
  pending: PendingAttachment,
  problems: Problems,
): Promise<StoredAttachment | undefined> {
  const images = pending.attachment.images!;
  const bytes = VISUAL_DIFF_ROLES.map((role) => attachmentBytes(files, pending, images[role]));
  const missing = bytes.find((b): b is string => typeof b === 'string');
  if (missing !== undefined) {
    problems.push({
      file: pending.file,
      message: `visual diff "${pending.attachment.name}": ${missing}; its other images are kept as screenshots`,
    });
    return undefined;
  }
  const stored: { role: (typeof VISUAL_DIFF_ROLES)[number]; file: StoredFile }[] = [];
  try {
    for (const [i, role] of VISUAL_DIFF_ROLES.entries())
      stored.push({ role, file: await storeFileBytes(ctx, bytes[i] as Uint8Array, true) });
  } catch (error) {
    for (const { file } of stored) file.release();
    if (!(error instanceof AppError) || error.code !== 'UNSUPPORTED_MEDIA_TYPE') throw error;
    problems.push({
      file: pending.file,
      message: `visual diff "${pending.attachment.name}": an image is no PNG, JPEG, GIF or WebP; kept as files`,
    });
    return undefined;
  }
  return { pending, content: stored[2]!.file, images: stored };
}

/** A visual diff that cannot be stored as one: its images as the screenshots they were in the report. */
function asSeparateImages(pending: PendingAttachment): PendingAttachment[] {
  const images = pending.attachment.images!;
  return VISUAL_DIFF_ROLES.map((role) => ({ ...pending, attachment: { ...images[role], kind: 'screenshot' as const } }));
}

/** Stores one attachment's bytes; a screenshot that is no raster image is kept as a plain file. */
async function storeAttachment(ctx: ServiceContext, bytes: Uint8Array, pending: PendingAttachment): Promise<StoredFile> {
  if (pending.attachment.kind !== 'screenshot') return storeFileBytes(ctx, bytes, false);
  try {
    return await storeFileBytes(ctx, bytes, true);
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== 'UNSUPPORTED_MEDIA_TYPE') throw error;
    pending.attachment = { ...pending.attachment, kind: 'file' };
    return storeFileBytes(ctx, bytes, false);
  }
}

/** Whether the attachment's run has room for one more artifact; if not, it is left out, and said so. */
function hasRoom(ctx: ServiceContext, perRun: Map<string, number>, pending: PendingAttachment, problems: Problems): boolean {
  if ((perRun.get(pending.runId) ?? 0) < ctx.config.maxArtifactsPerRun) return true;
  problems.push({
    file: pending.file,
    message: `a run holds at most ${ctx.config.maxArtifactsPerRun} artifacts; "${pending.attachment.name}" was left out`,
  });
  return false;
}

/**
 * Stores the blobs of a batch's attachments, each durable before any row names it. A problem with
 * one attachment (missing, too large, unreadable) is reported for its file and the rest goes on;
 * `expanded` counts the attachments a visual diff became when it could not be stored as one.
 */
export async function storeAttachments(
  ctx: ServiceContext,
  attachments: readonly PendingAttachment[],
  files: ReadonlyMap<string, Uint8Array>,
  problems: Problems,
): Promise<{ stored: StoredAttachment[]; expanded: number }> {
  const stored: StoredAttachment[] = [];
  const perRun = new Map<string, number>();
  let expanded = 0;
  try {
    const queue = [...attachments];
    for (let pending = queue.shift(); pending; pending = queue.shift()) {
      if (pending.attachment.kind === 'visual-diff' && pending.attachment.images) {
        if (!hasRoom(ctx, perRun, pending, problems)) continue;
        const visual = await storeVisualDiff(ctx, files, pending, problems);
        if (visual) {
          stored.push(visual);
          perRun.set(pending.runId, (perRun.get(pending.runId) ?? 0) + 1);
        } else {
          // Three attachments where one was counted; one that is missing counts as missing.
          expanded += 2;
          queue.unshift(...asSeparateImages(pending).filter((image) => typeof attachmentBytes(files, image) !== 'string'));
        }
        continue;
      }
      const bytes = attachmentBytes(files, pending);
      if (typeof bytes === 'string') {
        problems.push({ file: pending.file, message: bytes });
        continue;
      }
      if (!hasRoom(ctx, perRun, pending, problems)) continue;
      try {
        const content = await storeAttachment(ctx, bytes, pending);
        stored.push({ pending, content, images: content.role ? [{ role: content.role, file: content }] : [] });
        perRun.set(pending.runId, (perRun.get(pending.runId) ?? 0) + 1);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        problems.push({ file: pending.file, message: `attachment "${pending.attachment.name}": ${error.message}` });
      }
    }
    return { stored, expanded };
  } catch (error) {
    releaseAttachments(stored);
    throw error;
  }
}
