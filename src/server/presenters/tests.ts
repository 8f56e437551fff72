import type { Static } from 'typebox';
import type { TestDefinition, TestStep } from '../../api/v1/tests.ts';
import type { TestsTable } from '../db/types.ts';

export function presentTest(row: TestsTable): Static<typeof TestDefinition> {
  return {
    id: row.id,
    projectId: row.project_id,
    name: row.name,
    description: row.description,
    steps: JSON.parse(row.steps) as Static<typeof TestStep>[],
    tags: JSON.parse(row.tags) as string[],
    sourceFormat: row.source_format,
    source: row.source,
    createdAt: row.created_at,
    createdBy: row.created_by,
  };
}
