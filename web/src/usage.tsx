import type { Static } from 'typebox';
import type { ProjectUsage } from '../../src/api/v1/projects.ts';
import { formatBytes } from './format.ts';

/**
 * How much a project holds (RET-4): runs, stored bytes (identical files once) beside what was
 * uploaded, and, under a quota (RET-5), a meter of how full it is.
 */
export function UsageSummary({ usage }: { usage: Static<typeof ProjectUsage> }) {
  const runs = `${usage.runs.toLocaleString('en')} run${usage.runs === 1 ? '' : 's'}`;
  const stored = `${formatBytes(usage.storedBytes)} stored`;
  const uploaded = usage.logicalBytes > usage.storedBytes ? ` (${formatBytes(usage.logicalBytes)} uploaded)` : '';
  return (
    <span class="usage muted" data-testid="usage-summary">
      {runs} · {stored}
      {uploaded}
      {usage.quotaBytes === null ? null : (
        <>
          {' '}
          <meter
            min={0}
            max={usage.quotaBytes}
            high={usage.quotaBytes * 0.9}
            value={usage.storedBytes}
            title="Stored bytes against the quota"
          />{' '}
          of {formatBytes(usage.quotaBytes)}
        </>
      )}
    </span>
  );
}
