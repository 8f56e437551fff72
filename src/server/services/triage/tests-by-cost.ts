import type { ServiceContext } from '../../context.ts';
import { decodeCursor, encodeCursor, type Page, type PageRequest } from '../../db/pagination.ts';
import { firstTestsAmong, type TestListFilter } from '../../db/repositories/health.ts';
import type { TestsTable } from '../../db/types.ts';
import { flakyCostOfTests } from './flaky-cost.ts';

// The tests list ordered by what flakiness cost (TRIAGE-15): `sort=flakyCost`. The cost is the one
// `GET /projects/{id}/flaky-cost` answers for each test over the same window, so the list and the
// figure agree; it is read from the window's retried failures (an index), not kept on the test.
// Only tests with a cost are listed. A page's cursor holds the last (cost, id): the next page
// carries on below it, whatever the costs became meanwhile.

const SHAPE = { arity: 2, name: 'flakyCost', integers: [0] } as const;

export async function testsByFlakyCost(
  ctx: ServiceContext,
  projectId: string,
  filter: TestListFilter,
  days: number,
  page: PageRequest,
): Promise<Page<TestsTable>> {
  const after = page.cursor === undefined ? undefined : decodeCursor(page.cursor, SHAPE);
  const below = (cost: { durationMs: number; testId: string }) =>
    after === undefined || cost.durationMs < (after[0] as number) || (cost.durationMs === after[0] && cost.testId > (after[1] as string));
  const ranked = (await flakyCostOfTests(ctx, projectId, days)).filter(below);
  const { rows, more } = await firstTestsAmong(
    ctx.db,
    projectId,
    filter,
    ranked.map((cost) => cost.testId),
    page.limit,
  );
  const last = ranked.find((cost) => cost.testId === rows.at(-1)?.id);
  return { items: rows, nextCursor: more && last ? encodeCursor([SHAPE.name, last.durationMs, last.testId]) : null };
}
