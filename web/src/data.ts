import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ApiError, type AttestClient } from '../../src/client/index.ts';
import { api, endSession } from './session.ts';

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  reload(): void;
}

/** Where an expired or revoked session goes: the login page, with the place it was going. */
export function loginPath(path: string): string {
  return `/login?next=${encodeURIComponent(path)}`;
}

/** A failed read's first check: a 401 ends the session and goes to the login page (true); anything else is the page's to show. */
function useSessionEnd(): (error: Error) => boolean {
  const { route, url } = useLocation();
  return (error) => {
    if (!(error instanceof ApiError && error.status === 401)) return false;
    endSession();
    route(loginPath(url), true);
    return true;
  };
}

/**
 * Data from the API for a page: loads when `deps` change, and again every `refreshMs` while
 * `refreshWhile` says so (a run still running). A 401 ends the session and goes to the login page.
 */
export function useApi<T>(
  load: (client: AttestClient) => Promise<T>,
  deps: unknown[],
  live?: { refreshMs: number; refreshWhile: (data: T) => boolean },
): Loaded<T> {
  const sessionEnded = useSessionEnd();
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  const latest = useRef(0);
  // The caller names what the load depends on (`deps`); `tick` is a reload.
  useEffect(() => {
    const call = ++latest.current;
    setState((s) => ({ ...s, loading: true }));
    load(api()).then(
      (data) => {
        if (call === latest.current) setState({ data, loading: false });
      },
      (error: Error) => {
        if (call === latest.current && !sessionEnded(error)) setState({ error, loading: false });
      },
    );
  }, [...deps, tick]);
  useEffect(() => {
    if (!live || state.data === undefined || !live.refreshWhile(state.data)) return;
    const timer = setTimeout(reload, live.refreshMs);
    return () => clearTimeout(timer);
  }, [state.data, live, reload]);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** The words of an API error, for the page. */
export function describeError(error: Error): string {
  if (error instanceof ApiError) return `${String(error.problem.detail ?? error.problem.title ?? error.code)} (${error.status})`;
  return error.message;
}

export interface Pages<T> {
  /** Every item of the pages loaded so far, in the API's order; undefined until the first page. */
  items: T[] | undefined;
  error: Error | undefined;
  loading: boolean;
  /** Loads the next page through the API's cursor; undefined once the last page is in. */
  more: (() => void) | undefined;
}

/**
 * A list read page by page through the API's keyset cursor (LOAD-6; docs/web.md, "Pages at scale"):
 * the first page when `deps` change, each next one when `more()` is called (a button, or the end of
 * the list coming into view).
 */
export function usePages<T>(
  load: (client: AttestClient, cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | null }>,
  deps: unknown[],
): Pages<T> {
  const sessionEnded = useSessionEnd();
  const [state, setState] = useState<{ items?: T[]; cursor?: string; error?: Error; loading: boolean }>({ loading: true });
  const latest = useRef(0);
  const fetchPage = (cursor: string | undefined, before: T[]) => {
    const call = ++latest.current;
    setState((s) => ({ ...s, loading: true }));
    load(api(), cursor).then(
      (page) => {
        if (call === latest.current) setState({ items: [...before, ...page.items], cursor: page.nextCursor ?? undefined, loading: false });
      },
      (error: Error) => {
        if (call === latest.current && !sessionEnded(error)) setState((s) => ({ ...s, error, loading: false }));
      },
    );
  };
  // The caller names what the list depends on (`deps`).
  useEffect(() => fetchPage(undefined, []), deps);
  const { items, cursor, loading } = state;
  return {
    items,
    error: state.error,
    loading,
    more: cursor && items && !loading ? () => fetchPage(cursor, items) : undefined,
  };
}
