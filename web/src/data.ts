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

/**
 * Data from the API for a page: loads when `deps` change, and again every `refreshMs` while
 * `refreshWhile` says so (a run still running). A 401 ends the session and goes to the login page.
 */
export function useApi<T>(
  load: (client: AttestClient) => Promise<T>,
  deps: unknown[],
  live?: { refreshMs: number; refreshWhile: (data: T) => boolean },
): Loaded<T> {
  const { route, url } = useLocation();
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
        if (call !== latest.current) return;
        if (error instanceof ApiError && error.status === 401) {
          endSession();
          route(loginPath(url), true);
          return;
        }
        setState({ error, loading: false });
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
