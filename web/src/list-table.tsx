import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { ErrorBox, Loading } from './components.tsx';
import { withQuery } from './url.ts';

/** How many rows a paged list asks for at a time. */
export const PAGE_SIZE = 50;

/** One column of a list: its header and what each row shows in it. */
export interface Column<T> {
  header: string;
  /** A column of buttons: its header is read to screen readers but not shown. */
  hideHeader?: boolean;
  cell: (row: T) => ComponentChildren;
  /** Where the cell links to: the row's own page. */
  href?: (row: T) => string;
  /** The cells' class. */
  class?: string;
}

/**
 * The states of a list: the error above it, "Loading…" until its data comes, the `empty` sentence
 * when `isEmpty` says there is nothing to list, else the list itself.
 */
export function ListStates<D>({
  data,
  error,
  isEmpty,
  empty,
  children,
}: {
  data: D | undefined;
  error?: Error | undefined;
  isEmpty: (data: D) => boolean;
  empty?: string;
  children: (data: D) => ComponentChildren;
}) {
  let body: ComponentChildren;
  if (data === undefined) body = error ? null : <Loading />;
  else if (isEmpty(data)) body = empty ? <p class="muted">{empty}</p> : null;
  else body = children(data);
  return (
    <>
      {error ? <ErrorBox error={error} /> : null}
      {body}
    </>
  );
}

/** A list as a table, one row an item and its columns described by `columns`, in its list states. */
export function ListTable<T>({
  rows,
  columns,
  rowKey,
  rowClass,
  label,
  class: className,
  error,
  empty,
}: {
  rows: readonly T[] | undefined;
  columns: readonly Column<T>[];
  rowKey: (row: T) => string;
  rowClass?: (row: T) => string | undefined;
  /** The table's accessible name. */
  label?: string;
  class?: string;
  error?: Error | undefined;
  empty?: string;
}) {
  return (
    <ListStates data={rows} error={error} isEmpty={(items) => items.length === 0} empty={empty}>
      {(items) => (
        <table class={className ? `list ${className}` : 'list'} aria-label={label}>
          <thead>
            <tr>
              {columns.map((column) => (
                <th key={column.header} scope="col">
                  {column.hideHeader ? <span class="visually-hidden">{column.header}</span> : column.header}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {items.map((row) => (
              <tr key={rowKey(row)} class={rowClass?.(row)}>
                {columns.map((column) => (
                  <td key={column.header} class={column.class}>
                    {column.href ? <a href={column.href(row)}>{column.cell(row)}</a> : column.cell(row)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </ListStates>
  );
}

/** What a paged list asks the API for: a page of `PAGE_SIZE`, from the URL's cursor. */
export function pageQuery(query: Record<string, string>): { limit: number; cursor?: string } {
  return query.cursor ? { limit: PAGE_SIZE, cursor: query.cursor } : { limit: PAGE_SIZE };
}

/** The links between a list's pages: back to the first, and on to the next while there is one. */
export function Pager({ nextCursor, first, next }: { nextCursor: string | null | undefined; first: string; next: string }) {
  const { query, path } = useLocation();
  return (
    <nav class="pager" aria-label="Pages">
      {query.cursor ? <a href={withQuery(path, query, { cursor: undefined })}>{first}</a> : null}
      {nextCursor ? <a href={withQuery(path, query, { cursor: nextCursor })}>{next}</a> : null}
    </nav>
  );
}
