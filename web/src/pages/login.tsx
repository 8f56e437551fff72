import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import { LabelledInput } from '../components.tsx';
import { describeError } from '../data.ts';
import { api, startSession } from '../session.ts';

/** Where to go after signing in: the page asked for, if it is one of ours (never another origin). */
export function nextPath(query: Record<string, string | undefined>): string {
  const next = query.next ?? '/';
  return next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/login') ? next : '/';
}

/** A single sign-on under way in this tab: its state (compared with the one the provider sends back) and where to go after. */
export const SSO_STORAGE_KEY = 'attest.sso';

interface Methods {
  password: boolean;
  sso: { name: string } | null;
}

/** Signing in by password or by single sign-on: one at a time (`busy`), the last refusal in `error`. */
function useSignIn(email: string, password: string) {
  const { query, route } = useLocation();
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const session = await api().call(v1.meta.login, { body: { email, password } });
      startSession({ key: session.key, expiresAt: session.expiresAt, email });
      route(nextPath(query), true);
    } catch (failure) {
      setError(describeError(failure as Error));
    } finally {
      setBusy(false);
    }
  };

  // The server keeps the PKCE verifier and the nonce; this tab keeps the state, to know the answer is for it.
  const signOn = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const started = await api().call(v1.meta.startSsoLogin);
      sessionStorage.setItem(SSO_STORAGE_KEY, JSON.stringify({ state: started.state, next: nextPath(query) }));
      location.assign(started.authorizationUrl);
    } catch (failure) {
      setError(describeError(failure as Error));
      setBusy(false);
    }
  };
  return { submit, signOn, error, busy };
}

export function LoginPage() {
  const { query } = useLocation();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const { submit, signOn, error, busy } = useSignIn(email, password);
  // Until the server says, the password form shows (what every instance without single sign-on has).
  const [methods, setMethods] = useState<Methods>({ password: true, sso: null });
  document.title = 'Sign in · Attest';

  useEffect(() => {
    api()
      .call(v1.meta.getAuthMethods)
      .then(setMethods, () => undefined);
  }, []);

  return (
    <main class="login" id="main">
      <form class="login-form" onSubmit={submit} aria-labelledby="login-title">
        <h1 id="login-title">Sign in to Attest</h1>
        {query.next ? <p class="muted">Sign in to continue to {nextPath(query)}.</p> : null}
        {methods.sso ? (
          <button type="button" class="sso" onClick={signOn} disabled={busy}>
            Sign in with {methods.sso.name}
          </button>
        ) : null}
        {methods.password ? (
          <>
            {methods.sso ? <p class="muted or">or with your Attest password</p> : null}
            <LabelledInput label="E-mail" type="email" name="email" autoComplete="username" value={email} onInput={setEmail} />
            <LabelledInput
              label="Password"
              type="password"
              name="password"
              autoComplete="current-password"
              value={password}
              onInput={setPassword}
            />
          </>
        ) : null}
        {error ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : null}
        {methods.password ? (
          <button type="submit" disabled={busy}>
            {busy ? 'Signing in…' : 'Sign in'}
          </button>
        ) : null}
      </form>
    </main>
  );
}
