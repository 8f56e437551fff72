import { type SelectQueryBuilder, sql } from 'kysely';
import { AppError } from '../errors.ts';

/** One page asked of a list: the cursor a previous page handed out, and the page size (already bounded). */
export interface PageRequest {
  cursor?: string;
  limit: number;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export function encodeCursor(values: unknown[]): string {
  return Buffer.from(JSON.stringify(values), 'utf8').toString('base64url');
}

const notOurs = () =>
  new AppError('INVALID_CURSOR', '/query/cursor: not a cursor this list issued', {
    errors: [{ pointer: '/query/cursor', message: 'is not a cursor this list issued' }],
  });

/** How a list is ordered, as its cursors record it: what the cursor must hold to be used again. */
export interface CursorShape {
  arity: number;
  /** The name of the order (a list's `sort`), held first in the cursor: a cursor of another order is refused. */
  name?: string;
  /** Positions of the columns that hold integers: their values must be integers, the others' text. */
  integers?: readonly number[];
}

export function decodeCursor(cursor: string, shape: CursorShape): (string | number)[] {
  let values: unknown;
  try {
    values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw notOurs();
  }
  if (!Array.isArray(values)) throw notOurs();
  if (shape.name !== undefined) {
    if (values[0] !== shape.name) {
      if (typeof values[0] === 'string' && values.length === shape.arity + 1)
        throw new AppError('INVALID_CURSOR', `/query/cursor: issued for another sort than ${shape.name}`, {
          errors: [
            { pointer: '/query/cursor', message: `was issued for another sort; ask again from the first page with sort ${shape.name}` },
          ],
        });
      throw notOurs();
    }
    values = values.slice(1);
  }
  const list = values as unknown[];
  const valid =
    list.length === shape.arity &&
    list.every((v, i) => {
      if (shape.integers?.includes(i)) return Number.isSafeInteger(v);
      if (shape.integers !== undefined) return typeof v === 'string' && v.length <= 300 && !v.includes('\0');
      return (typeof v === 'string' && v.length <= 300 && !v.includes('\0')) || (typeof v === 'number' && Number.isFinite(v));
    });
  if (!valid) throw notOurs();
  return list as (string | number)[];
}

/** The order of a keyset page. */
export interface KeysetOrder {
  /** The columns, the last one unique. */
  columns: [string, ...string[]];
  direction: 'asc' | 'desc';
  /**
   * For a list that can be sorted several ways, the sort's name: the cursor holds it, and a cursor
   * of another sort is refused (400 INVALID_CURSOR) rather than compared with the wrong column.
   */
  name?: string;
  /** The columns that hold integers (the others hold text): a cursor holding another type is refused. */
  integers?: readonly string[];
}

/**
 * Keyset pagination, the one list convention: rows ordered by `columns` (the last one unique),
 * all ascending or all descending; the cursor holds the last row's values of those columns, after
 * the order's name when it has one.
 */
export async function keysetPage<Row extends Record<string, unknown>>(
  // biome-ignore lint/suspicious/noExplicitAny: the helper is generic over every table's query builder
  query: SelectQueryBuilder<any, any, Row>,
  order: KeysetOrder,
  page: PageRequest,
): Promise<Page<Row>> {
  const { columns, direction, name } = order;
  let q = query;
  if (page.cursor !== undefined) {
    const integers = order.integers?.map((column) => columns.indexOf(column));
    const values = decodeCursor(page.cursor, {
      arity: columns.length,
      ...(name !== undefined ? { name } : {}),
      ...(integers ? { integers } : {}),
    });
    // (a, b) after (x, y) as a row-value comparison, which both dialects seek in the order's index
    // (SCALE-11): spelled out as `a op x OR (a = x AND b op y)`, PostgreSQL read every row of a run
    // of equal `a` (an import's thousands of runs share their creation time) to reach a deep page.
    const op = direction === 'desc' ? '<' : '>';
    const after = sql<boolean>`(${sql.join(columns.map((column) => sql.ref(column)))}) ${sql.raw(op)} (${sql.join(values)})`;
    q = q.where(after);
  }
  for (const column of columns) q = q.orderBy(column, direction);
  const rows = await q.limit(page.limit + 1).execute();
  const items = rows.slice(0, page.limit);
  const last = items[items.length - 1];
  const lastValues = () => columns.map((c) => last?.[c.includes('.') ? (c.split('.').pop() as string) : c]);
  const nextCursor = rows.length > page.limit && last ? encodeCursor(name === undefined ? lastValues() : [name, ...lastValues()]) : null;
  return { items, nextCursor };
}
