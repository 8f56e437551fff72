import { sql } from 'kysely';
import { chunk, IN_LIST_SIZE } from '../chunks.ts';
import { dialectOf } from '../dialect.ts';
import type { Executor, UsageCounters } from '../types.ts';

// Per-project storage counters (RET-4) and the quota check (RET-5). Triggers keep the counters in
// the transaction that changes runs and artifacts (migration 0006); these queries only read them.

const ZERO: UsageCounters = { runs: 0, artifacts: 0, logical_bytes: 0, stored_bytes: 0 };

/** The counters of these projects; a project without a counters row reads as empty. */
export async function usageOfProjects(executor: Executor, projectIds: readonly string[]): Promise<Map<string, UsageCounters>> {
  const usage = new Map<string, UsageCounters>();
  for (const ids of chunk([...projectIds], IN_LIST_SIZE)) {
    const rows = await executor.selectFrom('project_usage').selectAll().where('project_id', 'in', ids).execute();
    for (const { project_id, ...counters } of rows) usage.set(project_id, counters);
  }
  for (const id of projectIds) if (!usage.has(id)) usage.set(id, { ...ZERO });
  return usage;
}

/** The project's quota in stored bytes; null when it has none. */
export async function quotaOf(executor: Executor, projectId: string): Promise<number | null> {
  const project = await executor.selectFrom('projects').select('quota_bytes').where('id', '=', projectId).executeTakeFirst();
  return project?.quota_bytes === null || project?.quota_bytes === undefined ? null : Number(project.quota_bytes);
}

/**
 * The project's stored bytes and quota, its counters row locked on PostgreSQL until the transaction
 * ends: the triggers of the artifacts this transaction inserts take the same lock, so two uploads
 * cannot both squeeze under the quota. Undefined when the project has no quota.
 */
export async function lockQuota(executor: Executor, projectId: string): Promise<{ quota: number; stored: number } | undefined> {
  const quota = await quotaOf(executor, projectId);
  if (quota === null) return undefined;
  let query = executor.selectFrom('project_usage').select('stored_bytes').where('project_id', '=', projectId);
  if (dialectOf(executor) === 'postgres' && executor.isTransaction) query = query.forUpdate();
  const usage = await query.executeTakeFirst();
  return { quota, stored: Number(usage?.stored_bytes ?? 0) };
}

/** The bytes these blobs would add to the project's stored bytes: those it does not reference yet, each once. */
export async function bytesNewToProject(
  executor: Executor,
  projectId: string,
  blobs: readonly { sha256: string; size: number }[],
): Promise<number> {
  const sizes = new Map(blobs.map((blob) => [blob.sha256, blob.size]));
  if (sizes.size === 0) return 0;
  const known = await executor
    .selectFrom('project_blobs')
    .select('sha256')
    .where('project_id', '=', projectId)
    .where('sha256', 'in', [...sizes.keys()])
    .execute();
  for (const { sha256 } of known) sizes.delete(sha256);
  let added = 0;
  for (const size of sizes.values()) added += size;
  return added;
}

export async function setQuota(executor: Executor, projectId: string, quotaBytes: number | null): Promise<void> {
  await executor.updateTable('projects').set({ quota_bytes: quotaBytes }).where('id', '=', projectId).execute();
}

/** A project whose counters differ from a recount of its rows, for `attest verify`. */
export interface UsageMismatch {
  projectId: string;
  counted: UsageCounters;
  recounted: UsageCounters;
}

/** Recounts every project's runs, artifacts and bytes from the rows (a full scan) and answers where the counters differ. */
export async function recountUsage(executor: Executor): Promise<UsageMismatch[]> {
  const { rows } = await sql<{
    project_id: string;
    runs: number | string;
    artifacts: number | string;
    logical_bytes: number | string;
    stored_bytes: number | string;
  }>`SELECT p.id AS project_id,
      (SELECT count(*) FROM test_runs r WHERE r.project_id = p.id) AS runs,
      (SELECT count(*) FROM artifacts a WHERE a.project_id = p.id) AS artifacts,
      (SELECT coalesce(sum(a.size), 0) FROM artifacts a WHERE a.project_id = p.id) AS logical_bytes,
      (SELECT coalesce(sum(b.size), 0) FROM (
        SELECT a.sha256, max(a.size) AS size FROM (
          SELECT a.sha256, a.size FROM artifacts a WHERE a.project_id = p.id
          UNION ALL
          SELECT i.sha256, i.size FROM artifact_images ai JOIN artifacts a ON a.id = ai.artifact_id JOIN images i ON i.id = ai.image_id
            WHERE a.project_id = p.id
        ) a GROUP BY a.sha256
      ) b) AS stored_bytes
    FROM projects p`.execute(executor);
  const counted = await usageOfProjects(
    executor,
    rows.map((row) => row.project_id),
  );
  const mismatches: UsageMismatch[] = [];
  for (const row of rows) {
    const recounted: UsageCounters = {
      runs: Number(row.runs),
      artifacts: Number(row.artifacts),
      logical_bytes: Number(row.logical_bytes),
      stored_bytes: Number(row.stored_bytes),
    };
    const stored = counted.get(row.project_id) ?? { ...ZERO };
    const same = (Object.keys(recounted) as (keyof UsageCounters)[]).every((key) => Number(stored[key]) === recounted[key]);
    if (!same) mismatches.push({ projectId: row.project_id, counted: stored, recounted });
  }
  return mismatches;
}

/** A run whose artifact counter (migration 0007) differs from a recount of its artifacts, for `attest verify`. */
export interface RunCountMismatch {
  runId: string;
  counted: number;
  recounted: number;
}

/** Recounts every run's artifacts (a full scan) and answers where the run's counter differs. */
export async function recountRunArtifacts(executor: Executor): Promise<RunCountMismatch[]> {
  const { rows } = await sql<{ id: string; counted: number | string; recounted: number | string }>`
    SELECT r.id, r.artifact_count AS counted, (SELECT count(*) FROM artifacts a WHERE a.run_id = r.id) AS recounted
    FROM test_runs r`.execute(executor);
  return rows
    .filter((row) => Number(row.counted) !== Number(row.recounted))
    .map((row) => ({ runId: row.id, counted: Number(row.counted), recounted: Number(row.recounted) }));
}
