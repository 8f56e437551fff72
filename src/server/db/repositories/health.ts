import { sql } from 'kysely';
import { chunk, IN_LIST_SIZE } from '../chunks.ts';
import { keysetPage, type Page, type PageRequest } from '../pagination.ts';
import type { Executor, TestHealthTable, TestQuarantinesTable, TestsTable } from '../types.ts';

// Tests' health and quarantines (TRIAGE-6, docs/triage.md).

/** Rows per upsert statement: 10 parameters each, well under both dialects' limits. */
const HEALTH_ROWS_PER_STATEMENT = 100;

/**
 * Writes the health of these tests, replacing what each had: an upsert, so two transactions
 * completing runs of the same test at once both succeed (the later one's row wins), in test id
 * order, so two of them never wait on each other's rows in opposite orders.
 */
export async function upsertTestHealth(executor: Executor, rows: readonly TestHealthTable[]): Promise<void> {
  const sorted = [...rows].sort((a, b) => (a.test_id < b.test_id ? -1 : a.test_id > b.test_id ? 1 : 0));
  for (const part of chunk(sorted, HEALTH_ROWS_PER_STATEMENT)) {
    await executor
      .insertInto('test_health')
      .values(part)
      .onConflict((conflict) =>
        conflict.column('test_id').doUpdateSet((eb) => ({
          state: eb.ref('excluded.state'),
          flaky_score: eb.ref('excluded.flaky_score'),
          runs_considered: eb.ref('excluded.runs_considered'),
          failing_streak: eb.ref('excluded.failing_streak'),
          updated_at: eb.ref('excluded.updated_at'),
          monitor: eb.ref('excluded.monitor'),
          branch: eb.ref('excluded.branch'),
          evidence: eb.ref('excluded.evidence'),
        })),
      )
      .execute();
  }
}

/** The health and quarantine of each test given, by test id (absent when it has neither). */
export async function healthOfTests(
  executor: Executor,
  testIds: readonly string[],
): Promise<Map<string, { health?: TestHealthTable; quarantine?: TestQuarantinesTable }>> {
  const found = new Map<string, { health?: TestHealthTable; quarantine?: TestQuarantinesTable }>();
  const entry = (testId: string) => {
    let value = found.get(testId);
    if (!value) {
      value = {};
      found.set(testId, value);
    }
    return value;
  };
  for (const ids of chunk([...new Set(testIds)], IN_LIST_SIZE)) {
    for (const row of await executor.selectFrom('test_health').selectAll().where('test_id', 'in', ids).execute()) {
      entry(row.test_id).health = { ...row, flaky_score: Number(row.flaky_score), runs_considered: Number(row.runs_considered) };
    }
    for (const row of await executor.selectFrom('test_quarantines').selectAll().where('test_id', 'in', ids).execute()) {
      entry(row.test_id).quarantine = row;
    }
  }
  return found;
}

export async function upsertQuarantine(executor: Executor, row: TestQuarantinesTable): Promise<void> {
  await executor
    .insertInto('test_quarantines')
    .values(row)
    .onConflict((oc) =>
      oc.column('test_id').doUpdateSet({
        owner: row.owner,
        reason: row.reason,
        expires_at: row.expires_at,
        created_at: row.created_at,
        created_by: row.created_by,
        // A renewed quarantine expires anew, and is announced anew (HOOK-7).
        expiry_announced_at: null,
      }),
    )
    .execute();
}

export async function findQuarantine(executor: Executor, testId: string): Promise<TestQuarantinesTable | undefined> {
  return executor.selectFrom('test_quarantines').selectAll().where('test_id', '=', testId).executeTakeFirst();
}

/** Releases a test's quarantine; false when it had none. */
export async function deleteQuarantine(executor: Executor, testId: string): Promise<boolean> {
  const result = await executor.deleteFrom('test_quarantines').where('test_id', '=', testId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export type QuarantineRow = TestQuarantinesTable & Pick<TestsTable, 'name' | 'full_name'>;

/** A project's quarantines, each with its test's names (a `QuarantineRow`), for the caller to order. */
export function quarantinesWithNames(executor: Executor, projectId: string) {
  return executor
    .selectFrom('test_quarantines')
    .innerJoin('tests', 'tests.id', 'test_quarantines.test_id')
    .selectAll('test_quarantines')
    .select(['tests.name', 'tests.full_name'])
    .where('test_quarantines.project_id', '=', projectId);
}

/** A project's quarantines with their tests' names: those expiring last first (so active ones before expired ones). */
export async function quarantinesOfProject(executor: Executor, projectId: string): Promise<QuarantineRow[]> {
  return quarantinesWithNames(executor, projectId)
    .orderBy('test_quarantines.expires_at', 'desc')
    .orderBy('test_quarantines.test_id')
    .execute();
}

/** Which of a project's tests a list shows, and in which order. */
export interface TestListFilter {
  /** `flakyCost` is ordered by the service, from the flaky cost of the window (TRIAGE-15). */
  sort: 'newest' | 'flaky' | 'flakyCost';
  health?: 'stable' | 'flaky' | 'broken' | 'quarantined';
  /** Now, for `quarantined` (a quarantine that has not expired). */
  now: string;
  /** A folder and everything under it; '' for the tests in no folder (TCM-5). */
  suite?: string;
  /** A tag, in any case. */
  tag?: string;
  /** A part of the name, in any case. */
  q?: string;
  /** A link key (any case) or URL (exactly). */
  link?: string;
}

/** `text` as a LIKE pattern that matches it literally (the escape character is a backslash). */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * A project's tests, newest first or flakiest first (then newest), filtered by health, each order an
 * index's (tests_project_created, tests_flaky). A test with no health row yet is stable with score
 * 0. The score is paged on in thousandths (`tests.flaky_milli`, kept by triggers on test_health), an
 * integer: a PostgreSQL `real` read back and compared with the cursor's double would never be equal.
 */
export async function listTestsByHealth(
  executor: Executor,
  projectId: string,
  filter: TestListFilter & { sort: 'newest' | 'flaky' },
  page: PageRequest,
): Promise<Page<TestsTable>> {
  const columns: [string, ...string[]] =
    filter.sort === 'flaky' ? ['tests.flaky_milli', 'tests.created_at', 'tests.id'] : ['tests.created_at', 'tests.id'];
  return keysetPage(filteredTests(executor, projectId, filter), { columns, direction: 'desc' }, page);
}

/**
 * The first `limit` of `ids` (in their order) that are tests of the project the filter keeps, and
 * whether more follow: asked a slice of ids at a time, until the page is full.
 */
export async function firstTestsAmong(
  executor: Executor,
  projectId: string,
  filter: TestListFilter,
  ids: readonly string[],
  limit: number,
): Promise<{ rows: TestsTable[]; more: boolean }> {
  const rows: TestsTable[] = [];
  for (const slice of chunk(ids, IN_LIST_SIZE)) {
    const kept = new Map((await filteredTests(executor, projectId, filter).where('tests.id', 'in', slice).execute()).map((r) => [r.id, r]));
    for (const id of slice) {
      const row = kept.get(id);
      if (!row) continue;
      if (rows.length === limit) return { rows, more: true };
      rows.push(row);
    }
  }
  return { rows, more: false };
}

/** The project's tests the filter keeps, unordered. */
function filteredTests(executor: Executor, projectId: string, filter: TestListFilter) {
  let inner = executor
    .selectFrom('tests')
    .leftJoin('test_health', 'test_health.test_id', 'tests.id')
    .selectAll('tests')
    .where('tests.project_id', '=', projectId);
  if (filter.health === 'quarantined') {
    inner = inner.where((eb) =>
      eb.exists(
        eb
          .selectFrom('test_quarantines')
          .select('test_quarantines.test_id')
          .whereRef('test_quarantines.test_id', '=', 'tests.id')
          .where('test_quarantines.expires_at', '>', filter.now),
      ),
    );
  } else if (filter.health === 'stable') {
    inner = inner.where((eb) => eb.or([eb('test_health.state', 'is', null), eb('test_health.state', '=', 'stable')]));
  } else if (filter.health !== undefined) {
    inner = inner.where('test_health.state', '=', filter.health);
  }
  if (filter.suite === '') {
    inner = inner.where('tests.suite', 'is', null);
  } else if (filter.suite !== undefined) {
    // The folder itself, or a path under it: compared by prefix, case and all (LIKE would ignore case on SQLite).
    const under = `${filter.suite}/`;
    const suite = filter.suite;
    inner = inner.where((eb) => eb.or([eb('tests.suite', '=', suite), eb(sql`substr(tests.suite, 1, ${[...under].length})`, '=', under)]));
  }
  if (filter.tag !== undefined) {
    // Tags are stored as a JSON array: the tag as a JSON string, quotes included, is one element.
    const pattern = `%${likeLiteral(JSON.stringify(filter.tag).toLowerCase())}%`;
    inner = inner.where(sql<boolean>`lower(tests.tags) like ${pattern} escape '\\'`);
  }
  if (filter.q !== undefined) {
    const pattern = `%${likeLiteral(filter.q.toLowerCase())}%`;
    inner = inner.where(sql<boolean>`lower(tests.name) like ${pattern} escape '\\'`);
  }
  if (filter.link !== undefined) {
    const link = filter.link;
    inner = inner.where((eb) =>
      eb.exists(
        eb
          .selectFrom('test_links')
          .select('test_links.test_id')
          .whereRef('test_links.test_id', '=', 'tests.id')
          .where((l) => l.or([l('test_links.ref', '=', link.toLowerCase()), l('test_links.url', '=', link)])),
      ),
    );
  }
  return inner;
}
