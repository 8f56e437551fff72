import type { SelectQueryBuilder } from 'kysely';
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

function encodeCursor(values: unknown[]): string {
  return Buffer.from(JSON.stringify(values), 'utf8').toString('base64url');
}

function decodeCursor(cursor: string, arity: number): (string | number)[] {
  try {
    const values: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(values) &&
      values.length === arity &&
      values.every((v) => (typeof v === 'string' && v.length <= 300 && !v.includes('\0')) || (typeof v === 'number' && Number.isFinite(v)))
    ) {
      return values as (string | number)[];
    }
  } catch {
    // fall through
  }
  throw new AppError('INVALID_CURSOR', '/query/cursor: not a cursor this list issued', {
    errors: [{ pointer: '/query/cursor', message: 'is not a cursor this list issued' }],
  });
}

/**
 * Keyset pagination, the one list convention: rows ordered by `columns` (the last one unique),
 * all ascending or all descending; the cursor holds the last row's values of those columns.
 */
export async function keysetPage<Row extends Record<string, unknown>>(
  // biome-ignore lint/suspicious/noExplicitAny: the helper is generic over every table's query builder
  query: SelectQueryBuilder<any, any, Row>,
  order: { columns: [string, ...string[]]; direction: 'asc' | 'desc' },
  page: PageRequest,
): Promise<Page<Row>> {
  const { columns, direction } = order;
  let q = query;
  if (page.cursor !== undefined) {
    const values = decodeCursor(page.cursor, columns.length);
    const op = direction === 'desc' ? '<' : '>';
    q = q.where((eb) => {
      // (a, b) after (x, y)  ≡  a op x OR (a = x AND b op y), spelled out for both dialects.
      const ors = columns.map((column, i) =>
        eb.and([...columns.slice(0, i).map((c, j) => eb(eb.ref(c), '=', values[j])), eb(eb.ref(column), op, values[i])]),
      );
      return eb.or(ors);
    });
  }
  for (const column of columns) q = q.orderBy(column, direction);
  const rows = await q.limit(page.limit + 1).execute();
  const items = rows.slice(0, page.limit);
  const last = items[items.length - 1];
  const nextCursor =
    rows.length > page.limit && last ? encodeCursor(columns.map((c) => last[c.includes('.') ? (c.split('.').pop() as string) : c])) : null;
  return { items, nextCursor };
}
