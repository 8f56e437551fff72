import type { Static } from 'typebox';
import type { TestRun } from '../../api/v1/runs.ts';
import type { TestRunsTable } from '../db/types.ts';

export function presentRun(row: TestRunsTable): Static<typeof TestRun> {
  return {
    id: row.id,
    projectId: row.project_id,
    name: row.name,
    status: row.status,
    verdict: row.verdict,
    testId: row.test_id,
    testVersion: row.test_version === null || row.test_version === undefined ? null : Number(row.test_version),
    jobId: row.job_id,
    deviceId: row.device_id,
    environment: row.environment,
    branch: row.branch,
    build: row.build,
    commit: row.commit_sha,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    idempotencyKey: row.idempotency_key,
    ciUrl: row.ci_url,
    attempt: Number(row.attempt),
    keep: row.keep === 1,
    runner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    failureGroupId: row.failure_group_id,
  };
}
