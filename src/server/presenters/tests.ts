import type { Static } from 'typebox';
import type { TestDefinition, TestHistory, TestStep } from '../../api/v1/tests.ts';
import type { TestRunsTable, TestsTable } from '../db/types.ts';

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

export function presentTestHistory(history: {
  testId: string;
  runs: { run: TestRunsTable; flaky: boolean }[];
  summary: Static<typeof TestHistory>['summary'];
}): Static<typeof TestHistory> {
  return {
    testId: history.testId,
    runs: history.runs.map(({ run, flaky }) => ({
      id: run.id,
      name: run.name,
      status: run.status,
      verdict: run.verdict,
      createdAt: run.created_at,
      startedAt: run.started_at,
      finishedAt: run.finished_at,
      jobId: run.job_id,
      branch: run.branch,
      build: run.build,
      environment: run.environment,
      deviceId: run.device_id,
      flaky,
    })),
    summary: history.summary,
  };
}
