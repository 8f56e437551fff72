import { type AttestClient, createClient } from '../../src/client/index.ts';

// The session: the short-lived key `POST /auth/login` gave, kept in sessionStorage (this tab only,
// gone with it), never in a URL. Every page talks to the server through the typed client with it.

const STORAGE_KEY = 'attest.session';

export interface Session {
  key: string;
  expiresAt: string;
  email: string;
}

export function currentSession(): Session | undefined {
  const text = sessionStorage.getItem(STORAGE_KEY);
  if (!text) return undefined;
  try {
    const session = JSON.parse(text) as Session;
    if (Date.parse(session.expiresAt) > Date.now()) return session;
  } catch {
    // A damaged entry is no session.
  }
  sessionStorage.removeItem(STORAGE_KEY);
  return undefined;
}

export function startSession(session: Session): void {
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session));
  cached = undefined;
}

export function endSession(): void {
  sessionStorage.removeItem(STORAGE_KEY);
  cached = undefined;
}

let cached: { key: string; client: AttestClient } | undefined;

/** The API client of the current session (or an anonymous one, for the login call). */
export function api(): AttestClient {
  const key = currentSession()?.key ?? '';
  if (cached?.key !== key) {
    // The browser retries nothing on its own: a person sees an error and can try again.
    const client = createClient({
      baseUrl: location.origin,
      apiKey: key || undefined,
      retry: { attempts: 1 },
      // Bound to the window: a detached `fetch` called as a method throws "Illegal invocation".
      fetch: (input, init) => fetch(input, init),
    });
    cached = { key, client };
  }
  return cached.client;
}
