import type { Static } from 'typebox';
import type { Comparison as ComparisonSchema } from '../../api/v1/comparison.ts';
import { webLinkOrNull } from '../outgoing/web-link.ts';
import type { Comparison } from '../services/triage/comparison.ts';
import { presentJob } from './jobs.ts';

export function presentComparison(comparison: Comparison): Static<typeof ComparisonSchema> {
  const { newFailures, fixed, stillFailing, flaky, quarantined } = comparison;
  return {
    job: presentJob(comparison.job),
    base: comparison.base === null ? null : presentJob(comparison.base),
    counts: {
      tests: comparison.tests,
      newFailures: newFailures.length,
      fixed: fixed.length,
      stillFailing: stillFailing.length,
      newErrorGroups: comparison.newErrorGroups.length,
      flaky: flaky.length,
      quarantined: quarantined.length,
    },
    newFailures,
    fixed,
    stillFailing,
    flaky,
    quarantined,
    newErrorGroups: comparison.newErrorGroups.map(({ group, tests, flakyOnly, counted, reason }) => ({
      id: group.id,
      title: group.title,
      category: group.category,
      status: group.status,
      defectType: group.defect_type,
      issueUrl: webLinkOrNull(group.issue_url),
      tests,
      flakyOnly,
      counted,
      reason,
    })),
    allowFlaky: comparison.allowFlaky,
    counted: comparison.counted,
    pass: comparison.counted.tests === 0 && comparison.counted.errorGroups === 0,
  };
}
