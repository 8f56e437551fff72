import type { Static } from 'typebox';
import type { FailureGroup, FailureGroupDetails } from '../../api/v1/failures.ts';
import type { FailureGroupsTable } from '../db/types.ts';
import { webLinkOrNull } from '../outgoing/web-link.ts';
import type { GroupDetails } from '../services/triage/failures.ts';

export function presentFailureGroup(row: FailureGroupsTable): Static<typeof FailureGroup> {
  return {
    id: row.id,
    projectId: row.project_id,
    fingerprint: row.fingerprint,
    title: row.title,
    message: row.message,
    frames: JSON.parse(row.frames) as string[],
    category: row.category,
    action: row.action,
    target: row.target,
    rule: row.rule,
    status: row.status,
    defectType: row.defect_type,
    comment: row.comment,
    // A value an older version stored from a tracker's answer may be no link at all (FORGE-10): dropped, not answered.
    issueUrl: webLinkOrNull(row.issue_url),
    assignee: row.assignee,
    firstSeenAt: row.first_seen_at,
    firstSeenRunId: row.first_seen_run_id,
    firstSeenJobId: row.first_seen_job_id,
    lastSeenAt: row.last_seen_at,
    lastSeenRunId: row.last_seen_run_id,
    lastSeenJobId: row.last_seen_job_id,
    occurrences: Number(row.occurrences),
    affectedTests: Number(row.affected_tests),
    affectedBranches: Number(row.affected_branches),
    triagedAt: row.triaged_at,
    triagedBy: row.triaged_by,
  };
}

export function presentFailureGroupDetails({ group, latest, trend }: GroupDetails): Static<typeof FailureGroupDetails> {
  return {
    ...presentFailureGroup(group),
    latestOccurrences: latest.map((o) => ({
      runId: o.run_id,
      runName: o.run_name,
      stepId: o.step_id,
      stepTitle: o.step_title,
      testId: o.test_id,
      jobId: o.job_id,
      branch: o.branch,
      at: o.at,
      screenshotId: o.screenshot_id,
    })),
    trend,
  };
}
