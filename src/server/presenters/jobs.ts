import type { Static } from 'typebox';
import type { Job } from '../../api/v1/jobs.ts';
import type { JobView } from '../services/records/jobs.ts';

export function presentJob({ row, request, state }: JobView): Static<typeof Job> {
  return {
    id: row.id,
    projectId: row.project_id,
    name: row.name,
    status: state.status,
    progress: state.progress,
    testIds: request.testIds,
    deviceIds: request.deviceIds,
    deviceLabels: request.deviceLabels,
    environment: request.environment,
    branch: request.branch,
    build: request.build,
    commit: request.commit,
    // Jobs stored before migration 0020 have none.
    repository: request.repository ?? null,
    targetBranch: request.targetBranch ?? null,
    createdAt: row.created_at,
    startedAt: state.startedAt,
    finishedAt: state.finishedAt,
    cancelledAt: row.cancelled_at,
    closedAt: row.closed_at,
    ciUrl: row.ci_url,
    incident:
      row.incident_group_id === null ? null : { failureGroupId: row.incident_group_id, failedRuns: Number(row.incident_failed_runs ?? 0) },
  };
}
