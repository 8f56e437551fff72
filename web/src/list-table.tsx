import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ErrorBox, Loading } from './components.tsx';
import { withQuery } from './url.ts';
import { DRAW_WHOLE_UP_TO, useWindowList } from './virtual.ts';

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

/** What a row of a list table draws: its cells. */
function Cells<T>({ row, columns }: { row: T; columns: readonly Column<T>[] }) {
  return (
    <>
      {columns.map((column) => (
        <td key={column.header} class={column.class}>
          {column.href ? <a href={column.href(row)}>{column.cell(row)}</a> : column.cell(row)}
        </td>
      ))}
    </>
  );
}

/** Rows of a table are this tall, about, until they are measured. */
const ROW_ESTIMATE = 37;

/**
 * The body of a long table: only the rows near the viewport are drawn, with empty rows, hidden
 * from assistive technologies, holding the place of the rest. Each row says its place
 * (`aria-rowindex`, the table its `aria-rowcount`), and the row holding the focus stays drawn.
 */
function VirtualBody<T>({
  items,
  columns,
  rowKey,
  rowClass,
}: {
  items: readonly T[];
  columns: readonly Column<T>[];
  rowKey: (row: T) => string;
  rowClass?: (row: T) => string | undefined;
}) {
  const [focused, setFocused] = useState<number | undefined>();
  const list = useWindowList<HTMLTableSectionElement>({
    count: items.length,
    estimate: () => ROW_ESTIMATE,
    key: (index) => rowKey(items[index] as T),
    keep: focused,
  });
  const spacer = (key: string, height: number) =>
    height > 0 ? (
      // biome-ignore lint/a11y/noAriaHiddenOnFocusable: an empty row holding the place of rows not drawn: nothing in it takes the focus
      <tr key={key} class="virtual-gap" aria-hidden="true">
        <td colSpan={columns.length} style={{ height: `${height}px` }} />
      </tr>
    ) : null;
  return (
    <tbody
      ref={list.ref}
      onFocusIn={(event) => {
        const index = (event.target as Element).closest('tr')?.getAttribute('data-index');
        if (index) setFocused(Number(index));
      }}
    >
      {list.items.map((item) => {
        const row = items[item.index] as T;
        return [
          spacer(`gap-${item.key}`, item.gap),
          <tr key={item.key} class={rowClass?.(row)} data-index={item.index} aria-rowindex={item.index + 2} ref={list.measure}>
            <Cells row={row} columns={columns} />
          </tr>,
        ];
      })}
      {spacer('gap-end', list.after)}
    </tbody>
  );
}

/**
 * A list as a table, one row an item and its columns described by `columns`, in its list states.
 * A list longer than `DRAW_WHOLE_UP_TO` draws only the rows near the viewport (docs/web.md, "Pages
 * at scale").
 */
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
      {(items) => {
        const virtual = items.length > DRAW_WHOLE_UP_TO;
        return (
          <table class={className ? `list ${className}` : 'list'} aria-label={label} aria-rowcount={virtual ? items.length + 1 : undefined}>
            <thead>
              <tr aria-rowindex={virtual ? 1 : undefined}>
                {columns.map((column) => (
                  <th key={column.header} scope="col">
                    {column.hideHeader ? <span class="visually-hidden">{column.header}</span> : column.header}
                  </th>
                ))}
              </tr>
            </thead>
            {virtual ? (
              <VirtualBody items={items} columns={columns} rowKey={rowKey} rowClass={rowClass} />
            ) : (
              <tbody>
                {items.map((row) => (
                  <tr key={rowKey(row)} class={rowClass?.(row)}>
                    <Cells row={row} columns={columns} />
                  </tr>
                ))}
              </tbody>
            )}
          </table>
        );
      }}
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

/**
 * "Load more" under a list read page by page: a button (for the keyboard, and as the list's
 * visible end), pressed by itself when it comes near the viewport, so scrolling reaches the end.
 */
export function LoadMore({ more, loading, label }: { more: (() => void) | undefined; loading: boolean; label: string }) {
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const element = button.current;
    if (!element || !more || typeof IntersectionObserver === 'undefined') return;
    const observer = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && more(), { rootMargin: '600px' });
    observer.observe(element);
    return () => observer.disconnect();
  }, [more]);
  if (!more && !loading) return null;
  return (
    <p class="load-more">
      <button ref={button} type="button" class="secondary" onClick={more} disabled={!more} aria-busy={loading}>
        {loading ? 'Loading…' : label}
      </button>
    </p>
  );
}
