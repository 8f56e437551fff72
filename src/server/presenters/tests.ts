import type { Static } from 'typebox';
import type { QuarantineEntry, TestDefinition, TestHistory, TestLink, TestStep, TestVersion } from '../../api/v1/tests.ts';
import type { TestsTable, TestVersionsTable } from '../db/types.ts';
import type { TestHistory as TestHistoryData } from '../services/tests/tests.ts';
import type { TestHealthView } from '../services/triage/health.ts';

type ContentColumns = 'name' | 'description' | 'steps' | 'tags' | 'suite' | 'links' | 'source_format' | 'source';

/** What a test says, stored alike in the test's row and in each superseded version's. */
function presentContent(row: Pick<TestsTable, ContentColumns>) {
  return {
    name: row.name,
    description: row.description,
    steps: JSON.parse(row.steps) as Static<typeof TestStep>[],
    tags: JSON.parse(row.tags) as string[],
    suite: row.suite,
    links: JSON.parse(row.links) as Static<typeof TestLink>[],
    sourceFormat: row.source_format,
    source: row.source,
  };
}

export function presentTest({ test: row, health }: { test: TestsTable; health: TestHealthView }): Static<typeof TestDefinition> {
  return {
    id: row.id,
    projectId: row.project_id,
    ...presentContent(row),
    version: Number(row.version),
    createdAt: row.created_at,
    createdBy: row.created_by,
    updatedAt: row.updated_at,
    updatedBy: row.updated_by,
    health,
  };
}

/** A version of a test: a superseded one from its row, or the current one from the test itself. */
export function presentTestVersion(row: TestVersionsTable, current: boolean): Static<typeof TestVersion> {
  return {
    testId: row.test_id,
    version: Number(row.version),
    current,
    ...presentContent(row),
    createdAt: row.created_at,
    createdBy: row.created_by,
  };
}

export function presentTestHistory(history: TestHistoryData): Static<typeof TestHistory> {
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
      attempt: run.attempt,
      flaky,
    })),
    summary: history.summary,
    outcomes: history.outcomes.map(({ outcome, runIds }) => ({
      jobId: outcome.jobId,
      runId: outcome.runId,
      verdict: outcome.verdict,
      attempts: outcome.attempts,
      runIds,
      branch: outcome.branch,
      commit: outcome.commit,
      finishedAt: outcome.finishedAt,
    })),
    outcomeSummary: (({ total, ...counts }) => ({ outcomes: total, ...counts }))(history.outcomeSummary),
    health: history.health,
  };
}

/** A quarantine as the quarantine answers show it, with its test's names. */
export function presentQuarantine(
  test: Pick<TestsTable, 'id' | 'name' | 'full_name'>,
  quarantine: { owner: string; reason: string; expiresAt: string; expired: boolean },
  state: Static<typeof QuarantineEntry>['state'],
): Static<typeof QuarantineEntry> {
  return { testId: test.id, fullName: test.full_name, name: test.name, ...quarantine, state };
}
