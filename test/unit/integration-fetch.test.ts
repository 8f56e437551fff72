import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { ForgeSettingsTable } from '../../src/server/db/types.ts';
import { credentialsIn, IntegrationError, integrationFetch, masked, maskSecrets } from '../../src/server/services/integrations/fetch.ts';
import { forgeClient } from '../../src/server/services/integrations/forge-clients.ts';

// The integrations' fetch against real listeners (FORGE-8, FORGE-9): bound to the origin its
// secrets were given for, whatever Octokit is told to follow, and masking every credential it sent
// out of what comes back; and the masking of errors in every form a secret takes.

interface Listener {
  url: string;
  seen: { method: string; url: string; headers: IncomingMessage['headers'] }[];
  server: Server;
}

async function listen(answer: (req: IncomingMessage, res: ServerResponse) => void): Promise<Listener> {
  const seen: Listener['seen'] = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    req.resume();
    req.on('end', () => answer(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

const TOKEN = 'ghp_bound_fetch_secret_0123456789';
let github: Listener;
let elsewhere: Listener;

before(async () => {
  elsewhere = await listen((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('[]'));
  github = await listen((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    if (path.endsWith('/pulls')) return json(200, [{ number: 7, state: 'open' }]);
    // A first page of comments whose `Link` sends the next page to another host: Octokit follows it.
    if (path.endsWith('/issues/7/comments')) return json(200, [], { link: `<${elsewhere.url}/steal?page=2>; rel="next"` });
    if (path === '/echo') {
      return json(401, { message: `Bad credentials: ${req.headers.authorization}`, headers: req.headers });
    }
    return json(404, { message: 'Not Found' });
  });
});
after(() => {
  for (const l of [github, elsewhere]) {
    l.server.closeAllConnections();
    l.server.close();
  }
});

const settings = (apiUrl: string): ForgeSettingsTable => ({
  project_id: 'p',
  kind: 'github',
  api_url: apiUrl,
  auth: 'token',
  token: TOKEN,
  app_id: null,
  private_key: null,
  installation_id: null,
  check_name: 'Attest',
  pull_request_comment: 1,
  enabled: 1,
  updated_at: new Date().toISOString(),
  updated_by: null,
});

describe('integrationFetch bound to an origin (FORGE-8)', () => {
  test('a Link header pointing Octokit at another host is refused: the token never reaches it', async () => {
    const fetcher = integrationFetch({ allowPrivate: true, boundTo: github.url, secrets: [TOKEN] });
    const client = forgeClient(settings(github.url), fetcher, () => new Date());
    await assert.rejects(
      client.comment({ repository: 'acme/shop', commitSha: 'abc1234', checkRunId: null }, '<!-- m -->', 'body'),
      (e: unknown) =>
        e instanceof IntegrationError && /refused: the integration's credentials are for http:\/\/127\.0\.0\.1:\d+ only/.test(e.message),
    );
    assert.ok(
      github.seen.some((r) => r.url.includes('/issues/7/comments') && r.headers.authorization === `token ${TOKEN}`),
      'the first page was read',
    );
    assert.equal(elsewhere.seen.length, 0, 'nothing reached the other host');
  });

  test('a URL of another origin, or another port or scheme of the same host, is refused unsent', async () => {
    const fetcher = integrationFetch({ allowPrivate: true, boundTo: `${github.url}/api/v3` });
    const port = new URL(elsewhere.url).port;
    for (const url of [`${elsewhere.url}/x`, `https://${new URL(github.url).host}/x`, `http://localhost:${port}/x`]) {
      await assert.rejects(fetcher(url, { headers: { authorization: `token ${TOKEN}` } }), IntegrationError, url);
    }
    assert.equal(elsewhere.seen.length, 0);
    assert.equal((await fetcher(`${github.url}/api/v3/nothing`)).status, 404, 'its own origin is called');
  });
});

describe('masking what comes back (FORGE-9)', () => {
  test('an answer echoing the request headers comes back with every credential sent masked, in body and headers', async () => {
    const pair = `qa@example.test:${TOKEN}`;
    const basic = `Basic ${Buffer.from(pair).toString('base64')}`;
    const fetcher = integrationFetch({ allowPrivate: true, boundTo: github.url });
    for (const authorization of [`token ${TOKEN}`, `Bearer ${TOKEN}`, basic]) {
      const answer = await fetcher(`${github.url}/echo`, { headers: { authorization, 'private-token': TOKEN } });
      const text = await answer.text();
      assert.equal(answer.status, 401);
      for (const leak of [TOKEN, Buffer.from(TOKEN).toString('base64'), Buffer.from(pair).toString('base64'), authorization]) {
        assert.ok(!text.includes(leak), `${authorization.split(' ')[0]}: ${leak.slice(0, 10)}… came back in ${text}`);
      }
      assert.match(text, /\[redacted\]/);
      assert.doesNotThrow(() => JSON.parse(text), 'the answer stays JSON');
    }
  });

  test('masked() hides a secret as given, base64, base64url, percent-encoded and JSON-escaped, and credentials by their shape', () => {
    const token = 'jira/api+token=secret 42';
    const pair = `qa@example.test:${token}`;
    const forms = [
      token,
      Buffer.from(token).toString('base64'),
      Buffer.from(token).toString('base64url'),
      Buffer.from(pair).toString('base64'),
      Buffer.from(pair).toString('base64').replace(/=+$/, ''),
      encodeURIComponent(token),
      JSON.stringify(token).slice(1, -1).replaceAll('/', '\\/'),
    ];
    const text = forms.map((f, i) => `form ${i}: <${f}>`).join('\n');
    const out = masked(text, [token, pair]);
    for (const form of forms) assert.ok(!out.includes(form), `${form} left in ${out}`);
    assert.equal(out.match(/\[redacted\]/g)?.length, forms.length);

    // Whoever's they are: values after a scheme, PRIVATE-TOKEN headers, token prefixes, JWTs, PEM keys, Attest keys.
    const strangers = [
      'Authorization: Bearer abcdefghij0123456789',
      '"authorization":"Basic dXNlcjpwYXNzd29yZDEyMw=="',
      'authorization: token 0123456789abcdef0123456789abcdef01234567',
      '"PRIVATE-TOKEN": "glpat-abcdefghijklmnop1234"',
      'x-api-key=sk_live_123456789',
      'ghs_abcdefghijklmnopqrstuvwxyz0123',
      'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz',
      'eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiI0MjQyIn0.c2lnbmF0dXJl',
      '-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----',
      `atk_${'a1B2c3D4e5'.repeat(4)}abc${'Z9y8x7'}`,
    ];
    for (const stranger of strangers) {
      const hidden = masked(`upstream said: ${stranger} (end)`, []);
      assert.match(hidden, /\[redacted\]/, stranger);
      assert.ok(!hidden.includes(stranger.slice(-12)), `${stranger} → ${hidden}`);
    }
    // Ordinary words after a scheme name stay readable.
    assert.equal(masked('Basic authentication failed; token expired', []), 'Basic authentication failed; token expired');
  });

  test('masked() masks before it cuts, so a secret at the cut is not left half shown', () => {
    const token = 'cut-here-secret-0123456789';
    const b64 = Buffer.from(`qa@example.test:${token}`).toString('base64');
    const text = `${'x'.repeat(290)}Basic ${b64}`;
    const out = masked(text, [token, `qa@example.test:${token}`], 300);
    assert.equal(out.length, 300);
    for (let i = 0; i + 8 <= b64.length; i++) assert.ok(!out.includes(b64.slice(i, i + 8)), 'no 8 characters of it');
  });

  test('credentialsIn() finds the credential headers and decodes a Basic pair', () => {
    const basic = Buffer.from('me@example.test:pa55word!').toString('base64');
    assert.deepEqual(credentialsIn({ authorization: `Basic ${basic}`, accept: 'application/json' }), [
      `Basic ${basic}`,
      basic,
      'me@example.test:pa55word!',
      'pa55word!',
    ]);
    assert.deepEqual(credentialsIn({ 'private-token': 'glpat-x', 'user-agent': 'attest' }), ['glpat-x']);
    assert.equal(maskSecrets('abc is short', ['abc']), 'abc is short', 'secrets under four characters are not masked');
  });
});
