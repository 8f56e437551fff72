import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import { describeError } from '../data.ts';
import { api, startSession } from '../session.ts';
import { nextPath, SSO_STORAGE_KEY } from './login.tsx';

/**
 * Where the provider sends the browser back (/login/sso, the redirect URL): the answer goes to the
 * server, which exchanges the code (SSO-2), and the session it answers starts as a password login's
 * does. The code and state leave the address bar at once, so they are in no history entry.
 */
export function SsoCallbackPage() {
  const { query, route } = useLocation();
  const [error, setError] = useState<string | undefined>();
  const started = useRef(false);
  document.title = 'Signing in · Attest';

  useEffect(() => {
    if (started.current) return;
    started.current = true;
    const { state, code, iss, error: refused, error_description } = query;
    history.replaceState(null, '', '/login/sso');
    const text = sessionStorage.getItem(SSO_STORAGE_KEY);
    sessionStorage.removeItem(SSO_STORAGE_KEY);
    const pending = text ? (JSON.parse(text) as { state: string; next: string }) : undefined;
    if (!state || pending?.state !== state) {
      setError('This sign-in was not started in this tab, or has been used already. Start again.');
      return;
    }
    api()
      .call(v1.meta.finishSsoLogin, {
        body: {
          state,
          ...(code ? { code } : {}),
          ...(iss ? { iss } : {}),
          ...(refused ? { error: refused } : {}),
          ...(error_description ? { error_description } : {}),
        },
      })
      .then(
        (session) => {
          startSession({ key: session.key, expiresAt: session.expiresAt, email: session.email });
          route(nextPath({ next: pending.next }), true);
        },
        (failure: Error) => setError(describeError(failure)),
      );
  }, [query, route]);

  return (
    <main class="login" id="main">
      <div class="login-form">
        <h1>{error ? 'Sign-in did not complete' : 'Signing in…'}</h1>
        {error ? (
          <>
            <p class="error" role="alert">
              {error}
            </p>
            <a href="/login">Back to sign in</a>
          </>
        ) : (
          <p class="muted">Checking the answer of your sign-in provider.</p>
        )}
      </div>
    </main>
  );
}
