import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { isPrivateAddress } from '../../src/server/outgoing/addresses.ts';
import { OutgoingError, sendOutgoing } from '../../src/server/outgoing/request.ts';

// The outgoing-request module webhooks and code-host integrations share (HOOK-5).

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server;
let base: string;
const seen: Seen[] = [];
const routes = new Map<string, (req: IncomingMessage, res: ServerResponse) => void>();

before(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const route = routes.get(new URL(req.url ?? '/', 'http://x').pathname);
      if (route) route(req, res);
      else res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function refusal(promise: Promise<unknown>): Promise<OutgoingError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof OutgoingError, `an OutgoingError, not ${String(error)}`);
    return error;
  }
  assert.fail('the request was not refused');
}

describe('isPrivateAddress', () => {
  test('loopback, link-local, private, shared, multicast and mapped forms are private; public addresses are not', () => {
    for (const address of [
      '127.0.0.1',
      '127.5.5.5',
      '0.0.0.0',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '[::1]',
      '::',
      'fe80::1',
      'fd00::1',
      'fc12:3456::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '[::ffff:a9fe:a9fe]',
      '64:ff9b::10.0.0.1',
      'not-an-address',
    ]) {
      assert.equal(isPrivateAddress(address), true, address);
    }
    for (const address of [
      '93.184.216.34',
      '8.8.8.8',
      '172.32.0.1',
      '192.169.0.1',
      '2606:4700::1111',
      '::ffff:8.8.8.8',
      '64:ff9b::8.8.8.8',
    ]) {
      assert.equal(isPrivateAddress(address), false, address);
    }
  });
});

describe('sendOutgoing', () => {
  test('refuses loopback, private and link-local targets before connecting, names that resolve to them included', async () => {
    routes.set('/hook', (_req, res) => res.writeHead(204).end());
    const before = seen.length;
    const port = new URL(base).port;
    for (const host of ['127.0.0.1', 'localhost', '[::1]', '[::ffff:127.0.0.1]', '169.254.169.254', '10.0.0.1', '2130706433']) {
      const error = await refusal(
        sendOutgoing({ url: `http://${host}:${port}/hook`, method: 'POST', body: '{}' }, { allowPrivate: false }),
      );
      assert.equal(error.code, 'private_address', host);
      assert.match(error.message, /ATTEST_WEBHOOK_ALLOW_PRIVATE/);
    }
    assert.equal(seen.length, before, 'nothing reached the server');
  });

  test('with private targets allowed it sends the method, headers and body and returns status, headers, text and latency', async () => {
    routes.set('/echo', (req, res) =>
      res.writeHead(201, { 'x-answer': 'yes', 'content-type': 'text/plain' }).end(`got ${req.headers['x-custom']}`),
    );
    const response = await sendOutgoing(
      { url: `${base}/echo?a=1`, method: 'PATCH', headers: { 'x-custom': 'hello', 'content-type': 'application/json' }, body: '{"ü":1}' },
      { allowPrivate: true },
    );
    assert.equal(response.status, 201);
    assert.equal(response.headers['x-answer'], 'yes');
    assert.equal(response.text, 'got hello');
    assert.equal(response.truncated, false);
    assert.ok(response.latencyMs >= 0);
    const request = seen.at(-1) as Seen;
    assert.equal(request.method, 'PATCH');
    assert.equal(request.url, '/echo?a=1');
    assert.equal(request.body, '{"ü":1}');
    assert.equal(request.headers['content-length'], String(Buffer.byteLength('{"ü":1}')));
    assert.match(String(request.headers['user-agent']), /^Attest\//);
    // A name is resolved and the connection made to the checked address.
    const byName = await sendOutgoing({ url: `http://localhost:${new URL(base).port}/echo`, method: 'GET' }, { allowPrivate: true });
    assert.equal(byName.status, 201);
  });

  test('reads the answer only up to the cap', async () => {
    routes.set('/big', (_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('x'.repeat(2_000_000));
    });
    const response = await sendOutgoing({ url: `${base}/big`, method: 'GET' }, { allowPrivate: true, maxResponseBytes: 1000 });
    assert.equal(response.status, 500);
    assert.equal(response.text.length, 1000);
    assert.equal(response.truncated, true);
  });

  test('does not follow redirects: a 3xx is the answer', async () => {
    routes.set('/moved', (_req, res) => res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' }).end());
    const response = await sendOutgoing({ url: `${base}/moved`, method: 'GET' }, { allowPrivate: true });
    assert.equal(response.status, 302);
    assert.equal(response.headers.location, 'http://169.254.169.254/latest/meta-data');
  });

  test('gives up with `timeout` when no complete answer comes within the deadline', async () => {
    routes.set('/slow', (_req, res) => {
      res.writeHead(200);
      res.write('partial');
      // never ends
    });
    const error = await refusal(sendOutgoing({ url: `${base}/slow`, method: 'GET', timeoutMs: 300 }, { allowPrivate: true }));
    assert.equal(error.code, 'timeout');
  });

  test('says `connection` when nothing listens, and `invalid_url` for what is not an http(s) URL', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    assert.equal(
      (await refusal(sendOutgoing({ url: `http://127.0.0.1:${port}/`, method: 'GET' }, { allowPrivate: true }))).code,
      'connection',
    );
    for (const url of ['ftp://example.com/x', 'not a url', '/relative', `https://example.com/${'a'.repeat(2100)}`]) {
      assert.equal((await refusal(sendOutgoing({ url, method: 'GET' }, { allowPrivate: true }))).code, 'invalid_url', url);
    }
  });
});
