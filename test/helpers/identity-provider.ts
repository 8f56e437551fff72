import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

// A real OpenID provider (`oidc-provider`, the certified implementation) run inside a test on a
// free loopback port, for the single sign-on suites (SSO-*). Its accounts are a map the test edits:
// removing a group there is what an identity admin does at a real provider. PKCE (S256) is
// required of every client; the sign-in form is a page of this helper (one field, the account).

export interface TestAccount {
  email: string;
  name: string;
  groups: string[];
  emailVerified?: boolean;
}

export interface TestIdentityProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The accounts by login (their `sub`). */
  accounts: Map<string, TestAccount>;
  /** Every authorization request the provider received, as its query. */
  authorizations: URLSearchParams[];
  /** Codes the token endpoint was asked to exchange, with whether it handed tokens for them. */
  exchanges: { grantType: string; verifierSent: boolean }[];
  /** The environment that points Attest at this provider (plus `extra`). */
  env(extra?: Record<string, string>): Record<string, string>;
  /** Registers Attest's redirect URL (`<attest>/login/sso`) and starts answering; call once Attest listens. */
  allow(redirectUrl: string): void;
  /**
   * Plays the browser for API tests: follows `authorizationUrl` through the sign-in form as `login`
   * and answers the query the provider sends back to the redirect URL (code, state, iss).
   */
  authorize(authorizationUrl: string, login: string): Promise<URLSearchParams>;
  close(): Promise<void>;
}

const CLIENT_ID = 'attest-web';
const CLIENT_SECRET = 'a client secret long enough for HS256 and then some';

export async function startIdentityProvider(): Promise<TestIdentityProvider> {
  const accounts = new Map<string, TestAccount>();
  const authorizations: URLSearchParams[] = [];
  const exchanges: { grantType: string; verifierSent: boolean }[] = [];
  let provider: Provider | undefined;
  let redirectUrl = '';

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.statusCode = 500;
      res.end(String(error));
    });
  });
  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (!provider) {
      res.statusCode = 503;
      res.end('not ready');
      return;
    }
    const url = new URL(req.url ?? '/', issuer);
    if (url.pathname === '/auth' && req.method === 'GET') authorizations.push(url.searchParams);
    const interaction = /^\/interaction\/([^/]+)(\/login)?$/.exec(url.pathname);
    if (interaction && req.method === 'GET') {
      const details = await provider.interactionDetails(req, res);
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(`<!doctype html><html lang="en"><head><title>Test provider sign-in</title></head><body><main>
<h1>Test provider</h1><form method="post" action="/interaction/${details.uid}/login">
<label>Account <input name="login" autocomplete="username"></label> <button type="submit">Continue</button></form></main></body></html>`);
      return;
    }
    if (interaction?.[2] && req.method === 'POST') {
      const body = new URLSearchParams(await readBody(req));
      const login = body.get('login') ?? '';
      const result = accounts.has(login)
        ? { login: { accountId: login } }
        : { error: 'access_denied', error_description: 'no such account at the test provider' };
      await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
      return;
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      // Read what the client sends without consuming it for the provider: peek, then replay.
      const raw = await readBody(req);
      const form = new URLSearchParams(raw);
      exchanges.push({ grantType: form.get('grant_type') ?? '', verifierSent: form.has('code_verifier') });
      const replay = Object.assign(req, { body: Object.fromEntries(form) });
      provider.callback()(replay, res);
      return;
    }
    provider.callback()(req, res);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    issuer,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    accounts,
    authorizations,
    exchanges,
    env: (extra = {}) => ({
      ATTEST_OIDC_ISSUER: issuer,
      ATTEST_OIDC_CLIENT_ID: CLIENT_ID,
      ATTEST_OIDC_CLIENT_SECRET: CLIENT_SECRET,
      ATTEST_OIDC_SCOPES: 'openid email profile groups',
      ...extra,
    }),
    allow(url: string) {
      redirectUrl = url;
      provider = new Provider(issuer, {
        clients: [
          {
            client_id: CLIENT_ID,
            client_secret: CLIENT_SECRET,
            redirect_uris: [url],
            grant_types: ['authorization_code'],
            response_types: ['code'],
            token_endpoint_auth_method: 'client_secret_basic',
          },
        ],
        // A signing key of its own (the provider's built-in development key prints a warning).
        jwks: {
          keys: [
            {
              ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
              kid: 'test',
              use: 'sig',
              alg: 'RS256',
            },
          ],
        },
        pkce: { methods: ['S256'], required: () => true },
        cookies: { keys: ['test provider cookie key'] },
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
        features: { devInteractions: { enabled: false } },
        interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
        // Attest is a first-party client: no consent screen, every scope it asks for is granted.
        async loadExistingGrant(ctx) {
          const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client?.clientId, accountId: ctx.oidc.session?.accountId });
          grant.addOIDCScope(String(ctx.oidc.params?.scope ?? 'openid'));
          await grant.save();
          return grant;
        },
        async findAccount(_ctx, sub) {
          const account = accounts.get(sub);
          if (!account) return undefined;
          return {
            accountId: sub,
            // Read at every sign-in: the groups are those of the moment.
            claims: async () => {
              const now = accounts.get(sub) ?? account;
              return { sub, email: now.email, email_verified: now.emailVerified ?? true, name: now.name, groups: [...now.groups] };
            },
          };
        },
      });
    },
    async authorize(authorizationUrl: string, login: string) {
      const jar = new Map<string, string>();
      let next = new URL(authorizationUrl);
      let method: 'GET' | 'POST' = 'GET';
      let body: string | undefined;
      for (let hop = 0; hop < 10; hop++) {
        const response = await fetch(next, {
          method,
          redirect: 'manual',
          headers: {
            cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
            ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
          },
          body,
        });
        for (const cookie of response.headers.getSetCookie()) {
          const [pair] = cookie.split(';');
          const at = (pair as string).indexOf('=');
          jar.set((pair as string).slice(0, at), (pair as string).slice(at + 1));
        }
        const location = response.headers.get('location');
        if (location) {
          const target = new URL(location, next);
          if (target.href.startsWith(redirectUrl)) return target.searchParams;
          [next, method, body] = [target, 'GET', undefined];
          continue;
        }
        const page = await response.text();
        const action = /action="([^"]+)"/.exec(page)?.[1];
        if (response.status !== 200 || !action) throw new Error(`the test provider answered ${response.status}: ${page.slice(0, 300)}`);
        [next, method, body] = [new URL(action, next), 'POST', new URLSearchParams({ login }).toString()];
      }
      throw new Error('the test provider redirected more than 10 times');
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
