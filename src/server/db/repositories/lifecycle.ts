import { chunk, IN_LIST_SIZE } from '../chunks.ts';
import { dialectOf } from '../dialect.ts';
import type { Executor, TestHealthTable, TestLifecyclesTable, TestQuarantinesTable } from '../types.ts';

// The quarantine lifecycle of tests (TRIAGE-13, docs/triage.md): one row per test that left
// `active` through it; the quarantines themselves are in test_quarantines (repositories/health.ts).

/** The lifecycle rows of these tests, by test id; on PostgreSQL with `lock`, locked in test id order for the caller's transaction. */
export async function lifecyclesOfTests(
  executor: Executor,
  testIds: readonly string[],
  options: { lock?: boolean } = {},
): Promise<Map<string, TestLifecyclesTable>> {
  const rows = new Map<string, TestLifecyclesTable>();
  const lock = options.lock === true && dialectOf(executor) === 'postgres';
  for (const ids of chunk([...new Set(testIds)].sort(), IN_LIST_SIZE)) {
    const query = executor.selectFrom('test_lifecycles').selectAll().where('test_id', 'in', ids).orderBy('test_id');
    for (const row of await (lock ? query.forUpdate() : query).execute()) {
      rows.set(row.test_id, {
        ...row,
        attempt_passes: Number(row.attempt_passes),
        attempt_required: row.attempt_required === null ? null : Number(row.attempt_required),
      });
    }
  }
  return rows;
}

/** Writes a test's lifecycle row, replacing the one it had. */
export async function upsertLifecycle(executor: Executor, row: TestLifecyclesTable): Promise<void> {
  const { test_id: _testId, project_id: _projectId, ...changes } = row;
  await executor
    .insertInto('test_lifecycles')
    .values(row)
    .onConflict((oc) => oc.column('test_id').doUpdateSet(changes))
    .execute();
}

export async function deleteLifecycle(executor: Executor, testId: string): Promise<void> {
  await executor.deleteFrom('test_lifecycles').where('test_id', '=', testId).execute();
}

/** The quarantines of these tests, by test id. */
export async function quarantinesOfTests(executor: Executor, testIds: readonly string[]): Promise<Map<string, TestQuarantinesTable>> {
  const rows = new Map<string, TestQuarantinesTable>();
  for (const ids of chunk([...new Set(testIds)], IN_LIST_SIZE)) {
    for (const row of await executor.selectFrom('test_quarantines').selectAll().where('test_id', 'in', ids).execute())
      rows.set(row.test_id, row);
  }
  return rows;
}

/** The stored health states of these tests, by test id (absent: never scored). */
export async function healthStatesOfTests(executor: Executor, testIds: readonly string[]): Promise<Map<string, TestHealthTable>> {
  const rows = new Map<string, TestHealthTable>();
  for (const ids of chunk([...new Set(testIds)], IN_LIST_SIZE)) {
    for (const row of await executor.selectFrom('test_health').selectAll().where('test_id', 'in', ids).execute()) {
      rows.set(row.test_id, { ...row, flaky_score: Number(row.flaky_score) });
    }
  }
  return rows;
}
