import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, test } from 'node:test';
import { DIALECTS, PG_ADMIN_URL, probePostgres } from '../helpers/dialects.ts';

// The suite's PostgreSQL probe (test/helpers/dialects.ts) on a loaded machine: a server slow to
// accept is tried again with backoff instead of skipping (or, in CI, failing) the file, and a
// probe that gives up says what the last try met.

/**
 * A TCP server on a free port that holds the first `stall` connections open without a word (as a
 * server too loaded to answer in time) and passes later ones through to `target`, if any.
 */
async function stallingProxy(stall: number, target?: { host: string; port: number }) {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    connections++;
    if (connections <= stall || !target) return;
    const upstream = net.connect(target.port, target.host);
    upstream.on('error', () => socket.destroy());
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    socket.pipe(upstream).pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const url = new URL(PG_ADMIN_URL);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('the PostgreSQL probe of the test suite', () => {
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const close of closers) await close();
  });

  test('a server that does not answer the first two connections is reached on the third try', {
    skip: !DIALECTS.includes('postgres') && 'no PostgreSQL server',
  }, async () => {
    const real = new URL(PG_ADMIN_URL);
    const proxy = await stallingProxy(2, { host: real.hostname, port: Number(real.port || 5432) });
    closers.push(proxy.close);
    const result = await probePostgres(proxy.url, { connectTimeoutMs: 200, pauseMs: 10, deadlineMs: 60_000 });
    assert.deepEqual(result, { ok: true, attempts: 3 });
    assert.equal(proxy.connections(), 3);
  });

  test('a server that never answers is given up at the deadline, with the last error', async () => {
    const proxy = await stallingProxy(Number.POSITIVE_INFINITY);
    closers.push(proxy.close);
    const result = await probePostgres(proxy.url, { connectTimeoutMs: 100, pauseMs: 10, deadlineMs: 3000 });
    assert.equal(result.ok, false);
    assert.ok(result.attempts >= 2, `tried ${result.attempts} times`);
    assert.equal(proxy.connections(), result.attempts, 'one connection per try');
    assert.match(result.ok ? '' : result.error, /timeout/i);
  });

  test('outside CI, a refused connection ends the probe at once and names the refusal', async () => {
    // A port nothing listens on: bound, then closed.
    const closed = await stallingProxy(0);
    await closed.close();
    const result = await probePostgres(closed.url, { retryRefused: false, deadlineMs: 60_000 });
    assert.equal(result.ok, false);
    assert.equal(result.attempts, 1);
    assert.match(result.ok ? '' : result.error, /ECONNREFUSED/);
  });

  test('in CI, a refused connection is tried again until the deadline', async () => {
    const closed = await stallingProxy(0);
    await closed.close();
    const result = await probePostgres(closed.url, { retryRefused: true, pauseMs: 10, deadlineMs: 1000 });
    assert.equal(result.ok, false);
    assert.ok(result.attempts >= 2, `tried ${result.attempts} times`);
    assert.match(result.ok ? '' : result.error, /ECONNREFUSED/);
  });
});
