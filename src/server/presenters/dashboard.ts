import type { Static } from 'typebox';
import type { Dashboard as DashboardSchema, HealthEntry, QuarantineEntry } from '../../api/v1/dashboard.ts';
import { webLinkOrNull } from '../outgoing/web-link.ts';
import type { Dashboard, HealthRow, QuarantineRow } from '../services/triage/dashboard.ts';
import { presentJob } from './jobs.ts';

function presentHealth(row: HealthRow): Static<typeof HealthEntry> {
  return {
    testId: row.test_id,
    name: row.name,
    fullName: row.full_name,
    state: row.state,
    flakyScore: row.flaky_score,
    runsConsidered: row.runs_considered,
    failingStreak: row.failing_streak,
  };
}

function presentQuarantine(row: QuarantineRow, now: string): Static<typeof QuarantineEntry> {
  return {
    testId: row.test_id,
    name: row.name,
    fullName: row.full_name,
    owner: row.owner,
    reason: row.reason,
    expiresAt: row.expires_at,
    expired: row.expires_at <= now,
  };
}

export function presentDashboard(dashboard: Dashboard): Static<typeof DashboardSchema> {
  return {
    branch: dashboard.branch,
    days: dashboard.days,
    since: dashboard.since,
    daily: dashboard.daily,
    jobs: dashboard.jobs.map((point) => ({ job: presentJob(point.view), passRate: point.passRate, durationMs: point.durationMs })),
    topGroups: dashboard.topGroups.map(({ group, occurrences, trend }) => ({
      id: group.id,
      title: group.title,
      category: group.category,
      rule: group.rule,
      status: group.status,
      defectType: group.defect_type,
      issueUrl: webLinkOrNull(group.issue_url),
      assignee: group.assignee,
      occurrences,
      totalOccurrences: group.occurrences,
      trend,
    })),
    flaky: dashboard.flaky.map(presentHealth),
    broken: dashboard.broken.map(presentHealth),
    quarantined: dashboard.quarantined.map((row) => presentQuarantine(row, dashboard.now)),
    flakyCost: dashboard.flakyCost,
  };
}
