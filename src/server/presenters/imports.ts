import type { Static } from 'typebox';
import type { ImportRecord } from '../../api/v1/imports.ts';
import type { ImportsTable } from '../db/types.ts';

export function presentImport(row: ImportsTable): Static<typeof ImportRecord> {
  const summary =
    row.summary === null
      ? null
      : (JSON.parse(row.summary) as Partial<Pick<Static<typeof ImportRecord>, 'counts' | 'files'>> & { done?: number; total?: number });
  return {
    id: row.id,
    projectId: row.project_id,
    status: row.status,
    fileName: row.file_name,
    size: row.source_size,
    sha256: row.source_sha256,
    jobId: row.job_id,
    options: JSON.parse(row.options),
    progress: { done: summary?.done ?? 0, total: summary?.total ?? null },
    counts: summary?.counts ?? null,
    files: summary?.files ?? [],
    error: row.error,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
  };
}
