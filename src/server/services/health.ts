import type { ServiceContext } from '../context.ts';
import type { Executor, TestRunsTable } from '../db/types.ts';

// Being built (issue 30, helper "health"): the health of the tests of completed runs.
export async function refreshHealth(_ctx: ServiceContext, _trx: Executor, _runs: readonly TestRunsTable[]): Promise<void> {}
