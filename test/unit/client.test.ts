import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ApiError, AttestClient, ClientConfigError, retryAfterMs, v1 } from '../../src/client/index.ts';

// EXP-4: the client's own behaviour towards a server that throttles, is
// overloaded or drops connections. The far side is a scripted node:http server standing in for
// those conditions (Attest itself answers 429 only after a minute's budget); everything the
// client does is real: its fetch, its headers, its waits.

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  at: number;
}

function scriptedServer() {
  const seen: Seen[] = [];
  let script: ((request: http.IncomingMessage, response: http.ServerResponse, n: number) => void)[] = [];
  const server = http.createServer((request, response) => {
    seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, at: Date.now() });
    request.resume();
    const next = script.shift() ?? ((_q, r) => r.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
    next(request, response, seen.length);
  });
  return {
    seen,
    play(...steps: typeof script) {
      script = steps;
      seen.length = 0;
    },
    listen: () =>
      new Promise<string>((resolve) =>
        server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
      ),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

const problem =
  (status: number, code: string, headers: Record<string, string> = {}) =>
  (_q: http.IncomingMessage, r: http.ServerResponse) =>
    r
      .writeHead(status, { 'content-type': 'application/problem+json', ...headers })
      .end(JSON.stringify({ status, code, title: code, detail: `${code} detail` }));
const drop = (q: http.IncomingMessage) => q.socket.destroy();

describe('the typed client', () => {
  const server = scriptedServer();
  let url: string;
  const STANDARD = 'atk_0123456789abcdefghijklmnopqrstuvwxyzABCD_x';
  const OLD = '5c0e1f3a-8d0b-4b59-9e3c-2a7f4d1e6b90';
  before(async () => {
    url = await server.listen();
  });
  after(() => server.close());

  test('a GET answered 503 then 429 with Retry-After is retried, waiting as long as it was told', async () => {
    server.play(problem(503, 'UNAVAILABLE', { 'retry-after': '1' }), problem(429, 'RATE_LIMITED', { 'retry-after': '0' }));
    const client = new AttestClient({ baseUrl: url, apiKey: STANDARD, retry: { baseDelayMs: 10 } });
    const me = await client.call(v1.meta.getMe);
    assert.deepEqual(me, { ok: true });
    assert.equal(server.seen.length, 3);
    const waited = server.seen[1]!.at - server.seen[0]!.at;
    assert.ok(waited >= 950, `waited ${waited} ms after Retry-After: 1`);
  });

  test('completeJob, an idempotent POST, is retried after a dropped connection and a 503 (JOB-1)', async () => {
    server.play(drop, problem(503, 'UNAVAILABLE', { 'retry-after': '0' }));
    const client = new AttestClient({ baseUrl: url, apiKey: STANDARD, retry: { baseDelayMs: 5 } });
    const jobId = 'c5e7a9b1-3d4f-4b6c-8a2e-7f9d1c3b5e04';
    assert.deepEqual(await client.completeJob(jobId), { ok: true });
    assert.deepEqual(
      server.seen.map((s) => `${s.method} ${s.url}`),
      Array.from({ length: 3 }, () => `POST /api/v1/testmgmt/jobs/${jobId}/complete`),
    );
    // Any other POST is sent once.
    server.play(problem(503, 'UNAVAILABLE', { 'retry-after': '0' }));
    await assert.rejects(client.call(v1.jobs.cancelJob, { params: { jobId } }), (e: ApiError) => e.status === 503);
    assert.equal(server.seen.length, 1);
  });

  test('heartbeatRun is retried like completeJob (a lease extended twice is one lease); claimRun is sent once, and a 204 is undefined (SCALE-6)', async () => {
    const client = new AttestClient({ baseUrl: url, apiKey: STANDARD, retry: { baseDelayMs: 5 } });
    const testRunId = 'd1f3b5c7-9e2a-4c4d-b6f8-0a2c4e6b8d15';
    server.play(drop, problem(503, 'UNAVAILABLE', { 'retry-after': '0' }));
    assert.deepEqual(await client.heartbeatRun(testRunId, { runner: 'r1' }), { ok: true });
    assert.equal(server.seen.length, 3);
    assert.equal(server.seen[2]?.url, `/api/v1/testmgmt/testruns/${testRunId}/heartbeat`);

    server.play(problem(503, 'UNAVAILABLE', { 'retry-after': '0' }));
    await assert.rejects(client.claimRun({ runner: 'r1' }), (e: ApiError) => e.status === 503);
    assert.equal(server.seen.length, 1, 'a retried claim could take a second run');
    server.play((_q, r) => r.writeHead(204).end());
    assert.equal(await client.claimRun({ runner: 'r1' }), undefined);
  });

  test('a dropped connection is retried; after the last attempt the last answer is the result, as an ApiError with its code', async () => {
    server.play(drop, drop);
    const client = new AttestClient({ baseUrl: url, apiKey: STANDARD, retry: { baseDelayMs: 5 } });
    assert.deepEqual(await client.call(v1.meta.getMe), { ok: true });
    assert.equal(server.seen.length, 3);

    server.play(...Array.from({ length: 5 }, () => problem(503, 'UNAVAILABLE', { 'retry-after': '0' })));
    const error = await client.call(v1.meta.getMe).catch((e: unknown) => e);
    assert.ok(error instanceof ApiError);
    assert.equal(error.code, 'UNAVAILABLE');
    assert.equal(error.status, 503);
    assert.equal(server.seen.length, 5, 'five attempts in all');
  });

  test('a POST is never retried (it may have happened); an upload with an idempotency key is', async () => {
    server.play(problem(503, 'UNAVAILABLE', { 'retry-after': '0' }));
    const client = new AttestClient({ baseUrl: url, apiKey: STANDARD, retry: { baseDelayMs: 5 } });
    await assert.rejects(
      client.call(v1.projects.createProject, { body: { key: 'WEB', name: 'Web' } }),
      (e: unknown) => e instanceof ApiError && e.status === 503,
    );
    assert.equal(server.seen.length, 1);

    server.play(problem(503, 'UNAVAILABLE', { 'retry-after': '0' }));
    await client.upload('WEB', { testRunId: 'r', kind: 'log', name: 'a.log', idempotencyKey: 'k1' }, [
      { name: 'a.log', bytes: Buffer.from('x') },
    ]);
    assert.equal(server.seen.length, 2);
    assert.match(String(server.seen[1]!.headers['content-type']), /^multipart\/form-data; boundary=/);

    server.play(problem(503, 'UNAVAILABLE', { 'retry-after': '0' }));
    await assert.rejects(
      client.upload('WEB', { testRunId: 'r', kind: 'log', name: 'a.log' }, [{ name: 'a.log', bytes: Buffer.from('x') }]),
    );
    assert.equal(server.seen.length, 1, 'no retry without an idempotency key');
  });

  test('service.user goes only beside an old-format key, and an old-format key without e-mail is refused before any call', async () => {
    server.play();
    await new AttestClient({ baseUrl: url, apiKey: STANDARD, user: 'ann@example.test' }).call(v1.meta.getMe);
    assert.equal(server.seen[0]!.headers['service.api-token'], STANDARD);
    assert.equal(server.seen[0]!.headers['service.user'], undefined);

    await new AttestClient({ baseUrl: url, apiKey: OLD, user: 'ann@example.test' }).call(v1.meta.getMe);
    assert.equal(server.seen[1]!.headers['service.user'], 'ann@example.test');

    server.play();
    await assert.rejects(new AttestClient({ baseUrl: url, apiKey: OLD }).call(v1.meta.getMe), ClientConfigError);
    assert.equal(server.seen.length, 0);
  });

  test('Retry-After is read as seconds or as an HTTP date', () => {
    assert.equal(retryAfterMs('3'), 3000);
    const fromDate = retryAfterMs(new Date(Date.now() + 5000).toUTCString()) ?? 0;
    assert.ok(fromDate > 3000 && fromDate <= 5000, `${fromDate} ms`);
    assert.equal(retryAfterMs('soon'), undefined);
    assert.equal(retryAfterMs(null), undefined);
  });
});
