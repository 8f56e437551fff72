import type { ImportsTable } from '../../src/server/db/types.ts';

/**
 * An `imports` row as an accepted upload leaves it: queued, no job, no summary, created now by
 * nobody in particular. What a test writes straight to the database to stand for an import a
 * server accepted earlier; `fields` names the import and its upload, and may set the rest.
 */
export function acceptedImportRow(
  fields: Pick<ImportsTable, 'id' | 'project_id' | 'file_name' | 'source_type' | 'source_sha256' | 'source_size'> & Partial<ImportsTable>,
): ImportsTable {
  return {
    job_id: null,
    status: 'queued',
    options: '{}',
    summary: null,
    error: null,
    idempotency_key: null,
    created_at: new Date().toISOString(),
    started_at: null,
    finished_at: null,
    created_by: null,
    ...fields,
  };
}
