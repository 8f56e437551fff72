import { bytesNewToProject, lockQuota, quotaOf } from '../../db/repositories/usage.ts';
import type { Executor } from '../../db/types.ts';
import { AppError } from '../../errors.ts';

// The per-project quota on stored bytes (RET-5). The counters it reads are kept by triggers (RET-4).

const quotaExceeded = (detail: string) =>
  new AppError('QUOTA_EXCEEDED', `${detail} Nothing was stored; delete runs or ask an admin to raise the quota.`);

/**
 * Refuses (507) when the project is already at its quota, before an upload's bytes are read. The
 * final word is `assertWithinQuota`, inside the transaction that would store the rows.
 */
export async function assertQuotaLeft(executor: Executor, projectId: string): Promise<void> {
  const quota = await lockQuota(executor, projectId);
  if (quota && quota.stored >= quota.quota) {
    throw quotaExceeded(`The project's quota is ${quota.quota} bytes and it stores ${quota.stored}.`);
  }
}

/**
 * Inside the transaction that inserts the rows referencing `blobs`: refuses (507) when the bytes
 * new to the project would take it past its quota. On PostgreSQL the project's counters row stays
 * locked until the transaction ends, so concurrent uploads are judged one after the other.
 */
export async function assertWithinQuota(
  trx: Executor,
  projectId: string,
  blobs: readonly { sha256: string; size: number }[],
): Promise<void> {
  const quota = await lockQuota(trx, projectId);
  if (!quota) return;
  const adding = await bytesNewToProject(trx, projectId, blobs);
  if (adding > 0 && quota.stored + adding > quota.quota) {
    throw quotaExceeded(`The project's quota is ${quota.quota} bytes; it stores ${quota.stored} and this upload would add ${adding}.`);
  }
}

/** Whether the project has a quota at all (most have none, and then no upload needs a check). */
export async function hasQuota(executor: Executor, projectId: string): Promise<boolean> {
  return (await quotaOf(executor, projectId)) !== null;
}

/** The same judgement as `assertWithinQuota`, as a yes or no (imports leave out what does not fit). */
export async function fitsQuota(trx: Executor, projectId: string, blobs: readonly { sha256: string; size: number }[]): Promise<boolean> {
  try {
    await assertWithinQuota(trx, projectId, blobs);
    return true;
  } catch (error) {
    if (error instanceof AppError && error.code === 'QUOTA_EXCEEDED') return false;
    throw error;
  }
}
