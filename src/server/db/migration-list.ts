import type { Migration } from 'kysely';
import * as initial from './migrations/2026-11-22-0001-initial.ts';
import * as idempotency from './migrations/2026-11-22-0002-idempotency.ts';
import * as imports from './migrations/2026-11-25-0003-imports.ts';
import * as testHistory from './migrations/2026-11-25-0004-test-history.ts';
import * as retention from './migrations/2026-11-25-0005-retention.ts';
import * as usage from './migrations/2026-11-25-0006-usage.ts';
import * as runArtifactCount from './migrations/2026-11-26-0007-run-artifact-count.ts';
import * as foreignKeyIndexes from './migrations/2026-11-26-0008-foreign-key-indexes.ts';
import * as textCellsByRun from './migrations/2026-11-26-0009-text-cells-by-run.ts';
import * as derivedResultPositions from './migrations/2026-11-26-0010-derived-result-positions.ts';
import * as launchCloseCiUrl from './migrations/2026-11-27-0011-launch-close-ci-url.ts';
import * as blobFences from './migrations/2026-11-27-0012-blob-fences.ts';
import * as tasks from './migrations/2026-11-27-0013-tasks.ts';
import * as runLeases from './migrations/2026-11-27-0014-run-leases.ts';
import * as sharedLimits from './migrations/2026-11-27-0015-shared-limits.ts';
import * as triage from './migrations/2026-11-27-0016-triage.ts';
import * as testCases from './migrations/2026-11-27-0017-test-cases.ts';
import * as webhooks from './migrations/2026-11-27-0018-webhooks.ts';
import * as sso from './migrations/2026-11-27-0019-sso.ts';
import * as integrations from './migrations/2026-11-27-0020-integrations.ts';
import * as flakinessOrder from './migrations/2026-11-27-0021-flakiness-order.ts';
import * as runDurations from './migrations/2026-11-27-0022-run-durations.ts';
import * as runDays from './migrations/2026-11-28-0023-run-days.ts';
import * as blobRefsByKey from './migrations/2026-11-28-0024-blob-refs-by-key.ts';
import * as groupDays from './migrations/2026-11-28-0025-group-days.ts';
import * as failureTargets from './migrations/2026-12-02-0027-failure-targets.ts';
import * as webhookExchanges from './migrations/2026-12-02-0028-webhook-exchanges.ts';
import * as mergeEqualGroups from './migrations/2026-12-02-0029-merge-equal-groups.ts';
import * as quarantineLifecycle from './migrations/2026-12-02-0030-quarantine-lifecycle.ts';
import * as projectDefaultBranch from './migrations/2026-12-02-0031-project-default-branch.ts';
import * as jobLookup from './migrations/2026-12-02-0032-job-lookup.ts';
import * as healthMonitors from './migrations/2026-12-02-0033-health-monitors.ts';
import * as signingKeys from './migrations/2026-12-03-0034-signing-keys.ts';
import * as jobRollups from './migrations/2026-12-06-0035-job-rollups.ts';
import * as supersedeByKey from './migrations/2026-12-08-0036-supersede-by-key.ts';

// The migrations this build knows, beside database.ts, which applies them (a list of its own, so
// that adding a migration touches this file only).

/** Migrations in the order they apply; names sort in time. */
export const MIGRATIONS: Record<string, Migration> = {
  '2026-11-22-0001-initial': initial,
  '2026-11-22-0002-idempotency': idempotency,
  '2026-11-25-0003-imports': imports,
  '2026-11-25-0004-test-history': testHistory,
  '2026-11-25-0005-retention': retention,
  '2026-11-25-0006-usage': usage,
  '2026-11-26-0007-run-artifact-count': runArtifactCount,
  '2026-11-26-0008-foreign-key-indexes': foreignKeyIndexes,
  '2026-11-26-0009-text-cells-by-run': textCellsByRun,
  '2026-11-26-0010-derived-result-positions': derivedResultPositions,
  '2026-11-27-0011-launch-close-ci-url': launchCloseCiUrl,
  '2026-11-27-0012-blob-fences': blobFences,
  '2026-11-27-0013-tasks': tasks,
  '2026-11-27-0014-run-leases': runLeases,
  '2026-11-27-0015-shared-limits': sharedLimits,
  '2026-11-27-0016-triage': triage,
  '2026-11-27-0017-test-cases': testCases,
  '2026-11-27-0019-sso': sso,
  '2026-11-27-0020-integrations': integrations,
  '2026-11-27-0021-flakiness-order': flakinessOrder,
  '2026-11-27-0022-run-durations': runDurations,
  '2026-11-28-0023-run-days': runDays,
  '2026-11-28-0024-blob-refs-by-key': blobRefsByKey,
  '2026-11-28-0025-group-days': groupDays,
  '2026-12-02-0027-failure-targets': failureTargets,
  '2026-12-02-0028-webhook-exchanges': webhookExchanges,
  '2026-12-02-0029-merge-equal-groups': mergeEqualGroups,
  '2026-12-02-0030-quarantine-lifecycle': quarantineLifecycle,
  '2026-12-02-0031-project-default-branch': projectDefaultBranch,
  '2026-12-02-0032-job-lookup': jobLookup,
  '2026-12-02-0033-health-monitors': healthMonitors,
  '2026-12-03-0034-signing-keys': signingKeys,
  '2026-12-06-0035-job-rollups': jobRollups,
  '2026-12-08-0036-supersede-by-key': supersedeByKey,
  '2026-11-27-0018-webhooks': webhooks,
};

/** The migrations this build applies, in order (test templates are keyed by them). */
export const MIGRATION_NAMES: readonly string[] = Object.keys(MIGRATIONS);
