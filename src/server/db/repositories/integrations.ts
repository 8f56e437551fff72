import type {
  Executor,
  ForgeChecksTable,
  ForgeSettingsTable,
  IssueLinksTable,
  IssueTrackersTable,
  StepsTable,
  TestRunsTable,
} from '../types.ts';

// Integrations (FORGE-*, docs/integrations.md): a project's code host and issue tracker, the jobs
// that report to the code host, and the issues filed from Attest.

export async function findForgeSettings(executor: Executor, projectId: string): Promise<ForgeSettingsTable | undefined> {
  return executor.selectFrom('forge_settings').selectAll().where('project_id', '=', projectId).executeTakeFirst();
}

export async function saveForgeSettings(executor: Executor, row: ForgeSettingsTable): Promise<void> {
  const { project_id: _, ...changes } = row;
  await executor
    .insertInto('forge_settings')
    .values(row)
    .onConflict((conflict) => conflict.column('project_id').doUpdateSet(changes))
    .execute();
}

export async function deleteForgeSettings(executor: Executor, projectId: string): Promise<boolean> {
  const result = await executor.deleteFrom('forge_settings').where('project_id', '=', projectId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Adds a job's check unless it has one. */
export async function insertForgeCheck(executor: Executor, row: ForgeChecksTable): Promise<void> {
  await executor
    .insertInto('forge_checks')
    .values(row)
    .onConflict((conflict) => conflict.column('job_id').doNothing())
    .execute();
}

export async function findForgeCheck(executor: Executor, jobId: string): Promise<ForgeChecksTable | undefined> {
  return executor.selectFrom('forge_checks').selectAll().where('job_id', '=', jobId).executeTakeFirst();
}

export async function updateForgeCheck(
  executor: Executor,
  jobId: string,
  changes: Partial<Pick<ForgeChecksTable, 'check_run_id' | 'synced' | 'settled' | 'last_error' | 'updated_at'>>,
): Promise<void> {
  await executor.updateTable('forge_checks').set(changes).where('job_id', '=', jobId).execute();
}

/** Of these jobs, those that report to a code host and have not sent their final state. */
export async function unsettledChecksOf(executor: Executor, jobIds: readonly string[]): Promise<string[]> {
  if (jobIds.length === 0) return [];
  const rows = await executor
    .selectFrom('forge_checks')
    .select('job_id')
    .where('job_id', 'in', [...jobIds])
    .where('settled', '=', 0)
    .execute();
  return rows.map((r) => r.job_id);
}

/** The oldest-synced unsettled checks: what the sweep looks at again. */
export async function unsettledChecks(executor: Executor, limit: number): Promise<string[]> {
  const rows = await executor
    .selectFrom('forge_checks')
    .select('job_id')
    .where('settled', '=', 0)
    .orderBy('updated_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.job_id);
}

/** The job's runs that failed or broke, with the error group that names their failure. */
export async function failedRunsOfJob(
  executor: Executor,
  jobId: string,
  limit: number,
): Promise<(Pick<TestRunsTable, 'id' | 'name' | 'verdict' | 'test_id' | 'attempt'> & { group_title: string | null })[]> {
  return executor
    .selectFrom('test_runs')
    .leftJoin('failure_groups', 'failure_groups.id', 'test_runs.failure_group_id')
    .select([
      'test_runs.id',
      'test_runs.name',
      'test_runs.verdict',
      'test_runs.test_id',
      'test_runs.attempt',
      'failure_groups.title as group_title',
    ])
    .where('test_runs.job_id', '=', jobId)
    .where('test_runs.status', '=', 'completed')
    .where('test_runs.verdict', 'in', ['failed', 'broken'])
    .orderBy('test_runs.created_at')
    .orderBy('test_runs.id')
    .limit(limit)
    .execute();
}

/** The runs' steps, in order: an issue lists them. */
export async function stepsOfRun(
  executor: Executor,
  runId: string,
  limit: number,
): Promise<Pick<StepsTable, 'title' | 'status' | 'depth' | 'error_message'>[]> {
  return executor
    .selectFrom('steps')
    .select(['title', 'status', 'depth', 'error_message'])
    .where('run_id', '=', runId)
    .orderBy('position')
    .limit(limit)
    .execute();
}

export async function findIssueTracker(executor: Executor, projectId: string): Promise<IssueTrackersTable | undefined> {
  return executor.selectFrom('issue_trackers').selectAll().where('project_id', '=', projectId).executeTakeFirst();
}

export async function saveIssueTracker(executor: Executor, row: IssueTrackersTable): Promise<void> {
  const { project_id: _, ...changes } = row;
  await executor
    .insertInto('issue_trackers')
    .values(row)
    .onConflict((conflict) => conflict.column('project_id').doUpdateSet(changes))
    .execute();
}

export async function deleteIssueTracker(executor: Executor, projectId: string): Promise<boolean> {
  const result = await executor.deleteFrom('issue_trackers').where('project_id', '=', projectId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function insertIssueLink(executor: Executor, row: IssueLinksTable): Promise<void> {
  await executor.insertInto('issue_links').values(row).execute();
}

export async function findIssueLink(executor: Executor, id: string): Promise<IssueLinksTable | undefined> {
  return executor.selectFrom('issue_links').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listIssueLinks(
  executor: Executor,
  projectId: string,
  filter: { failureGroupId?: string; runId?: string },
  limit: number,
): Promise<IssueLinksTable[]> {
  let query = executor.selectFrom('issue_links').selectAll().where('project_id', '=', projectId);
  const { failureGroupId, runId } = filter;
  if (failureGroupId !== undefined && runId !== undefined) {
    query = query.where((eb) => eb.or([eb('failure_group_id', '=', failureGroupId), eb('run_id', '=', runId)]));
  } else if (failureGroupId !== undefined) query = query.where('failure_group_id', '=', failureGroupId);
  else if (runId !== undefined) query = query.where('run_id', '=', runId);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

export async function updateIssueLink(
  executor: Executor,
  id: string,
  changes: Partial<Pick<IssueLinksTable, 'title' | 'status' | 'refreshed_at'>>,
): Promise<void> {
  await executor.updateTable('issue_links').set(changes).where('id', '=', id).execute();
}

/** Links of projects that still have a tracker, least recently refreshed first: what the refresh reads again. */
export async function staleIssueLinks(executor: Executor, before: string, limit: number): Promise<IssueLinksTable[]> {
  return executor
    .selectFrom('issue_links')
    .selectAll()
    .where('project_id', 'in', executor.selectFrom('issue_trackers').select('project_id'))
    .where((eb) => eb.or([eb('refreshed_at', 'is', null), eb('refreshed_at', '<', before)]))
    .orderBy('refreshed_at')
    .limit(limit)
    .execute();
}
