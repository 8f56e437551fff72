import { createHash, randomUUID } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { ServiceContext } from '../../context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Page, PageRequest } from '../../db/pagination.ts';
import {
  findImport,
  findImportByIdempotencyKey,
  insertImport,
  listImports as listImportRows,
  updateImport,
} from '../../db/repositories/imports.ts';
import { enqueueTask } from '../../db/repositories/tasks.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { ImportsTable } from '../../db/types.ts';
import { AppError, found } from '../../errors.ts';
import { canonicalJson } from '../triage/fingerprint.ts';

import { checkAndStoreUpload, type ImportUpload } from './read.ts';

// Imports of test reports (docs/imports.md): the upload is read and checked whole before anything
// is stored (IMP-5), kept as a blob with its import row and its background task (202), then written
// as a job of completed runs by whichever instance claims the task, a batch of cases per
// transaction, resumed by another instance when the one writing it dies (IMP-4, SCALE-5).

/** The kind of the background task that writes an import; its key is `import:<id>`. */
export const IMPORT_TASK = 'import';

/** Bytes hashed per turn of the event loop. */
const HASH_SLICE_BYTES = 4 * 1024 * 1024;

/** A large upload's SHA-256, a slice per turn of the event loop (60 MB at once would hold it for about 50 ms). */
async function sha256(bytes: Uint8Array): Promise<string> {
  const hash = createHash('sha256');
  for (let at = 0; at < bytes.length; at += HASH_SLICE_BYTES) {
    if (at > 0) await nextTurn();
    hash.update(bytes.subarray(at, at + HASH_SLICE_BYTES));
  }
  return hash.digest('hex');
}

/** The row of an accepted import, queued, its upload kept as `blob`. */
function importRow(
  ctx: ServiceContext,
  input: { projectId: string; actorId: string; upload: ImportUpload },
  blob: { sha256: string; size: number },
  key: string | undefined,
): ImportsTable {
  const { projectId, upload } = input;
  const size = blob.size;
  return {
    id: randomUUID(),
    project_id: projectId,
    job_id: null,
    status: 'queued',
    file_name: upload.fileName.replaceAll('\0', '').slice(0, 256) || 'report',
    source_type: upload.type,
    source_sha256: blob.sha256,
    source_size: size,
    options: JSON.stringify(upload.options),
    summary: null,
    error: null,
    idempotency_key: key ?? null,
    created_at: ctx.clock().toISOString(),
    started_at: null,
    finished_at: null,
    created_by: input.actorId,
  };
}

/**
 * Accepts an import: checks the whole upload, keeps its bytes as a blob and records the import
 * (`queued`) with the task that writes its job, in one transaction: once acknowledged, any instance
 * finishes it whatever happens to this one. `queueImport` then wakes this instance's runner. With an
 * idempotency key used before, the same file answers the import it started (`created: false`);
 * another file is a 409.
 */
export async function startImport(
  ctx: ServiceContext,
  input: { projectId: string; actorId: string; upload: ImportUpload },
): Promise<{ record: ImportsTable; created: boolean }> {
  const { projectId, upload } = input;
  const digest = await sha256(upload.bytes);
  const key = upload.options.idempotencyKey;
  // The same upload is the same file with the same options: a retry. Anything else reusing the key is a 409.
  const sameUpload = (row: ImportsTable) =>
    row.source_sha256 === digest && canonicalJson(JSON.parse(row.options)) === canonicalJson(upload.options);
  const replay = async () => {
    const earlier = key === undefined ? undefined : await findImportByIdempotencyKey(ctx.db, projectId, key);
    if (earlier && !sameUpload(earlier)) {
      throw new AppError('STATE_CONFLICT', 'This idempotencyKey was already used in the project for another file or other options.');
    }
    return earlier;
  };
  const earlier = await replay();
  if (earlier?.status === 'failed') {
    // A failed import gives its key up: sending the same upload again is how it is retried.
    await updateImport(ctx.db, earlier.id, { idempotency_key: null });
  } else if (earlier) {
    return { record: earlier, created: false };
  }

  // Checked in a worker, then kept as a blob from the bytes that worker hands back: a large body moves
  // to the worker, and is not in this thread while the import is read again and written (IMP-7).
  const size = upload.bytes.length;
  const blob = await checkAndStoreUpload(ctx, upload, (chunks) => ctx.blobs.put(chunks));
  if (blob.sha256 !== digest || blob.size !== size) {
    blob.release();
    throw new Error(`the upload kept (${blob.size} bytes, ${blob.sha256}) is not the upload received (${size} bytes, ${digest})`);
  }
  const record = importRow(ctx, input, blob, key);
  try {
    await inTransaction(ctx.db, async (trx) => {
      await insertImport(trx, record);
      const now = ctx.background.time();
      await enqueueTask(trx, {
        kind: IMPORT_TASK,
        key: `import:${record.id}`,
        payload: JSON.stringify({ importId: record.id }),
        runAt: now,
        now,
      });
    });
  } catch (error) {
    // A concurrent retry with the same key committed first.
    const winner = isUniqueViolation(error) ? await replay() : undefined;
    if (winner) return { record: winner, created: false };
    throw error;
  } finally {
    blob.release();
  }
  // An idle instance may start it at once; this one wakes its own runner once the 202 is out.
  ctx.background.announce();
  return { record, created: true };
}

/**
 * Starts writing an accepted import on this instance once its 202 has gone out (the route calls
 * it then): its task was stored with it, and this wakes the local runner, so the answer never
 * waits behind the first batch. Another instance may have claimed it already; then this finds nothing.
 */
export function queueImport(ctx: ServiceContext, _importId: string): void {
  ctx.background.wake();
}

export async function getImport(ctx: ServiceContext, importId: string): Promise<ImportsTable> {
  return found(await findImport(ctx.db, importId), 'The import');
}

export const listImports = (ctx: ServiceContext, projectId: string, page: PageRequest): Promise<Page<ImportsTable>> =>
  listImportRows(ctx.db, projectId, page);
