import type { Executor, TestRunsTable } from '../types.ts';

// Runs executed by hand (TCM-7, UI-10) that nobody finishes: a run of a test with steps of its own,
// running without a runner's lease, as the execution page leaves it when its tab is closed.

/** A manual run that is running, and when anything was last recorded on it. */
export type OpenManualRun = Pick<TestRunsTable, 'id' | 'project_id' | 'job_id'> & { last_activity: string };

/**
 * The running manual runs, each with its last activity: its start (or creation), and the newest
 * step, text cell, results post or artifact it holds. A run is manual when the version of its test
 * it executes has steps of its own (imports and reporters make tests without any, as Xray's
 * export tells them apart) and no runner holds a lease on it (a runner's run ends by its lease,
 * SCALE-6). `runId` narrows it to one run.
 */
export async function openManualRuns(executor: Executor, runId?: string): Promise<OpenManualRun[]> {
  let query = executor
    .selectFrom('test_runs as r')
    .innerJoin('tests as t', 't.id', 'r.test_id')
    .leftJoin('test_versions as v', (join) => join.onRef('v.test_id', '=', 'r.test_id').onRef('v.version', '=', 'r.test_version'))
    .select((eb) => [
      'r.id',
      'r.project_id',
      'r.job_id',
      'r.created_at',
      'r.started_at',
      eb.fn.coalesce('v.steps', 't.steps').as('steps'),
      eb
        .selectFrom('steps')
        .select((s) => s.fn.max('created_at').as('at'))
        .whereRef('steps.run_id', '=', 'r.id')
        .as('last_step'),
      eb
        .selectFrom('text_cells')
        .select((s) => s.fn.max('created_at').as('at'))
        .whereRef('text_cells.run_id', '=', 'r.id')
        .as('last_cell'),
      eb
        .selectFrom('result_posts')
        .select((s) => s.fn.max('created_at').as('at'))
        .whereRef('result_posts.run_id', '=', 'r.id')
        .as('last_post'),
      eb
        .selectFrom('artifacts')
        .select((s) => s.fn.max('created_at').as('at'))
        .whereRef('artifacts.run_id', '=', 'r.id')
        .as('last_artifact'),
    ])
    .where('r.status', '=', 'running')
    .where('r.lease_owner', 'is', null);
  if (runId !== undefined) query = query.where('r.id', '=', runId);
  const rows = await query.execute();
  return rows
    .filter((row) => row.steps !== null && row.steps !== '[]')
    .map((row) => {
      const times = [row.created_at, row.started_at, row.last_step, row.last_cell, row.last_post, row.last_artifact];
      // ISO-8601 UTC text: the greatest string is the latest time.
      const last = times
        .filter((at): at is string => typeof at === 'string')
        .sort()
        .at(-1) as string;
      return { id: row.id, project_id: row.project_id, job_id: row.job_id, last_activity: last };
    });
}
