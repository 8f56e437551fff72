import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import { describeError } from '../data.ts';
import { api, startSession } from '../session.ts';

/** Where to go after signing in: the page asked for, if it is one of ours (never another origin). */
function nextPath(query: Record<string, string>): string {
  const next = query.next ?? '/';
  return next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/login') ? next : '/';
}

export function LoginPage() {
  const { query, route } = useLocation();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  document.title = 'Sign in · Attest';

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

  return (
    <main class="login" id="main">
      <form class="login-form" onSubmit={submit} aria-labelledby="login-title">
        <h1 id="login-title">Sign in to Attest</h1>
        {query.next ? <p class="muted">Sign in to continue to {nextPath(query)}.</p> : null}
        <label>
          E-mail
          <input
            type="email"
            name="email"
            autoComplete="username"
            required
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </label>
        <label>
          Password
          <input
            type="password"
            name="password"
            autoComplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        {error ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
