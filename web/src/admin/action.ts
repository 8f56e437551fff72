import { useCallback, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ApiError, type AttestClient } from '../../../src/client/index.ts';
import { loginPath } from '../data.ts';
import { api, endSession } from '../session.ts';

export interface ActionState {
  busy: boolean;
  error: Error | undefined;
  /** What the last successful action did, in words, for a status line. */
  done: string | undefined;
}

/**
 * A change the page makes through the API (save roles, create a key): one at a time, its outcome
 * kept for the page to show. The API decides who may do what, so a 403 is shown, not hidden; a
 * 401 ends the session, as a load does.
 */
export function useAction() {
  const { route, url } = useLocation();
  const [state, setState] = useState<ActionState>({ busy: false, error: undefined, done: undefined });
  const run = useCallback(
    async <T>(work: (client: AttestClient) => Promise<T>, summarize: (result: T) => string): Promise<T | undefined> => {
      setState({ busy: true, error: undefined, done: undefined });
      try {
        const result = await work(api());
        setState({ busy: false, error: undefined, done: summarize(result) });
        return result;
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) {
          endSession();
          route(loginPath(url), true);
          return undefined;
        }
        setState({ busy: false, error: error as Error, done: undefined });
        return undefined;
      }
    },
    [route, url],
  );
  const clear = useCallback(() => setState({ busy: false, error: undefined, done: undefined }), []);
  return { ...state, run, clear };
}
