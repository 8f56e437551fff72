import type { ServiceContext } from '../context.ts';
import type { Executor, TestRunsTable } from '../db/types.ts';

// Being built (issue 30, helper "failures"): fingerprints, groups and occurrences of completed runs.
export async function recordFailures(_ctx: ServiceContext, _trx: Executor, _runs: readonly TestRunsTable[]): Promise<void> {}
