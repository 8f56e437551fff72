import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { loadConfig } from '../../src/server/config.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser } from '../helpers/factories.ts';
import { encodeForm, jsonHeaders, rawRequest } from '../helpers/http.ts';
import { randomGif, randomPng } from '../helpers/png.ts';
import { assertProblem } from '../helpers/problems.ts';
import { startRun } from '../helpers/records.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { adminUpload, upload } from '../helpers/uploads.ts';
import { waitFor } from '../helpers/wait.ts';

/**
 * A raw connection to the server that records what it receives, and how the connection ended: the
 * server's FIN (`ended`), the socket closing, and any error (a reset shows as ECONNRESET or EPIPE).
 */
class RawConnection {
  readonly socket: net.Socket;
  private readonly chunks: Buffer[] = [];
  readonly started = Date.now();
  ended = false;
  closedAfterMs: number | undefined;
  error: string | undefined;

  constructor(url: string) {
    const { hostname, port } = new URL(url);
    // Half-open, as a client still sending is: the server's FIN does not end this side.
    this.socket = net.connect({ port: Number(port), host: hostname, allowHalfOpen: true });
    this.socket.on('data', (chunk: Buffer) => this.chunks.push(chunk));
    this.socket.on('end', () => {
      this.ended = true;
    });
    this.socket.on('error', (error: NodeJS.ErrnoException) => {
      this.error ??= error.code ?? error.message;
    });
    this.socket.on('close', () => {
      this.closedAfterMs = Date.now() - this.started;
    });
  }

  get text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }

  /** Writes, resolving once the bytes are handed to the kernel (or the connection failed). */
  write(data: string | Buffer): Promise<void> {
    return new Promise((resolve) => {
      if (this.socket.destroyed) resolve();
      else this.socket.write(data, () => resolve());
    });
  }

  /** Waits until the received text matches. */
  async received(pattern: RegExp, timeoutMs = 5000): Promise<string> {
    await waitFor(() => pattern.test(this.text), { timeoutMs, message: () => `${pattern} in ${JSON.stringify(this.text.slice(0, 300))}` });
    return this.text;
  }

  /** Waits until the socket is closed; resolves with how long after the start. */
  async closed(timeoutMs: number): Promise<number> {
    await waitFor(() => this.closedAfterMs !== undefined, { timeoutMs, intervalMs: 20, message: 'the connection closed' });
    return this.closedAfterMs as number;
  }

  /** Ends this side (the client's FIN) once what was written is sent. */
  end(): void {
    this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** How many connections the server holds open. */
const openConnections = (server: TestServer): Promise<number> =>
  new Promise((resolve, reject) => server.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))));

/** Waits until the server holds no connection; resolves with the time it happened. */
async function serverClosedAll(server: TestServer, timeoutMs = 30_000): Promise<number> {
  await waitFor(async () => (await openConnections(server)) === 0, {
    timeoutMs,
    intervalMs: 20,
    message: 'the server closed the connection',
  });
  return Date.now();
}

/** Writes one byte every `everyMs` until the connection goes; stop() ends it. */
function trickle(connection: RawConnection, everyMs: number): { stop(): void } {
  const timer = setInterval(() => {
    if (connection.socket.destroyed) clearInterval(timer);
    else connection.socket.write('x');
  }, everyMs);
  return { stop: () => clearInterval(timer) };
}

const postHead = (key: string | undefined, length: number, extra = '') =>
  'POST /api/v1/projects HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n' +
  `${key ? `service.api-token: ${key}\r\n` : ''}${extra}Content-Length: ${length}\r\n\r\n`;

describe('lingering close and Expect: 100-continue settings', () => {
  test('ATTEST_LINGER_MS, ATTEST_LINGER_IDLE_MS and ATTEST_LINGER_MAX_BYTES default to 30 s, 5 s and 64 MiB, and are range-checked', () => {
    const config = loadConfig({});
    assert.deepEqual([config.lingerMs, config.lingerIdleMs, config.lingerMaxBytes], [30_000, 5_000, 64 * 1024 * 1024]);
    const set = loadConfig({ ATTEST_LINGER_MS: '0', ATTEST_LINGER_IDLE_MS: '250', ATTEST_LINGER_MAX_BYTES: '1024' });
    assert.deepEqual([set.lingerMs, set.lingerIdleMs, set.lingerMaxBytes], [0, 250, 1024]);
    for (const [name, value] of [
      ['ATTEST_LINGER_MS', '-1'],
      ['ATTEST_LINGER_MS', '3600001'],
      ['ATTEST_LINGER_IDLE_MS', '99'],
      ['ATTEST_LINGER_MAX_BYTES', '5MB'],
    ] as const) {
      assert.throws(() => loadConfig({ [name]: value }), new RegExp(name), `${name}=${value}`);
    }
  });
});

// Bad input refused early and precisely: deep bodies, long pointers, and early refusals that close
// lingering (LOAD-4b) after an `Expect: 100-continue` that was never answered (LOAD-4c).

/** `{"a":{"a":…{"a":"x\u0000y"}…}}`, `depth` objects deep. */
const nestedWithNul = (depth: number): string => `${'{"a":'.repeat(depth)}"x\\u0000y"${'}'.repeat(depth)}`;

for (const dialect of DIALECTS) {
  describe(`[${dialect}] bad input refused early and precisely`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    describe('early refusals close lingering (LOAD-4b)', () => {
      test('a POST refused with 401 before its body is read is answered at once; the rest of the body is dropped and the connection serves the next request', async () => {
        const connection = new RawConnection(server.url);
        try {
          await connection.write(`${postHead(undefined, 1_000_000)}{"name":"`);
          // The whole answer, while 999 991 bytes of the body are still to come.
          const text = await connection.received(/^HTTP\/1\.1 401 [\s\S]*\r\n\r\n\{[\s\S]*\}$/);
          // Node closes the socket right after an answer saying `Connection: close`, unread bytes or not.
          assert.doesNotMatch(text, /\r\nconnection: close\r\n/i);
          await connection.write(Buffer.alloc(1_000_000 - 9, 'a'));
          await connection.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n');
          await connection.received(/\}HTTP\/1\.1 200 /);
          assert.equal(connection.error, undefined, 'no reset');
          assert.equal(connection.ended, false, 'the connection is kept');
        } finally {
          connection.destroy();
        }
      });

      for (const [asked, version, header] of [
        ['Connection: close', '1.1', 'Connection: close\r\n'],
        ['HTTP/1.0, as nginx forwards', '1.0', ''],
      ] as const) {
        test(`a refused POST whose client closes after the answer (${asked}) is answered once the rest of its body is read, and the connection ends cleanly`, async () => {
          const connection = new RawConnection(server.url);
          const rest = Buffer.alloc(8 * 1024 * 1024, 'a');
          try {
            const head = postHead(undefined, rest.length + 9, header).replace(' HTTP/1.1\r\n', ` HTTP/${version}\r\n`);
            await connection.write(`${head}{"name":"`);
            // Node closes after this answer: had it gone out before the body was read, these bytes would meet a reset.
            await connection.write(rest);
            const text = await connection.received(/^HTTP\/1\.[01] 401 [\s\S]*\r\n\r\n\{[\s\S]*\}$/, 20_000);
            assert.match(text, /\r\nconnection: close\r\n/i);
            await waitFor(() => connection.ended, { message: "the server's FIN after the answer" });
            assert.equal(connection.error, undefined, 'no reset');
          } finally {
            connection.destroy();
          }
        });
      }

      test('the rest of the body is read after the answer: a client that sends it all sees the connection end cleanly, never reset', async () => {
        const connection = new RawConnection(server.url);
        const rest = Buffer.alloc(8 * 1024 * 1024, 'a');
        try {
          await connection.write(`${postHead(undefined, rest.length + 9)}{"name":"`);
          await connection.received(/^HTTP\/1\.1 401 /);
          // Sent after the answer and the server's FIN: closing without reading it would reset the connection.
          await connection.write(rest);
          connection.end();
          await connection.closed(20_000);
          assert.equal(connection.error, undefined, 'no reset');
          assert.match(connection.text, /^HTTP\/1\.1 401 [\s\S]*"code":"UNAUTHENTICATED"/);
        } finally {
          connection.destroy();
        }
      });

      test('a request line too long for Node (431) lingers too: the rest of it is read, and the connection ends cleanly, never reset', async () => {
        const connection = new RawConnection(server.url);
        try {
          // Node refuses the head at 16 KB, on the first chunk it reads; the rest arrives after its answer.
          await connection.write(`GET /api/v1/projects?q=${'x'.repeat(20_000)}`);
          await connection.received(/^HTTP\/1\.1 431 [\s\S]*\r\n\r\n\{[\s\S]*\}$/);
          for (let i = 0; i < 10; i++) await connection.write('x'.repeat(64 * 1024));
          await connection.write(' HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
          connection.end();
          await connection.closed(10_000);
          assert.equal(connection.error, undefined, 'no reset');
          assert.match(connection.text, /"code":"HEADERS_TOO_LARGE"/);
          await serverClosedAll(server, 5_000);
        } finally {
          connection.destroy();
        }
      });

      test('the next request on a kept connection, read with the end of a refused body, is answered (431), not reset', async () => {
        // What a keep-alive agent does: it reuses the connection once it has written the body, which
        // the server may not have read yet. Node then parses the new head in the same chunk as the
        // body's end, and refuses it before the refused request's `end` event has run.
        for (let attempt = 0; attempt < 5; attempt++) {
          const connection = new RawConnection(server.url);
          try {
            await connection.write(`${postHead(undefined, 1009)}{"name":"`);
            await connection.received(/^HTTP\/1\.1 401 [\s\S]*\r\n\r\n\{[\s\S]*\}$/);
            await connection.write(`${'a'.repeat(1000)}POST /api/v1/auth/sso/finish?${'x'.repeat(20_000)}`);
            await connection.received(/\}HTTP\/1\.1 431 [\s\S]*"code":"HEADERS_TOO_LARGE"/);
            await connection.write(`${'x'.repeat(64 * 1024)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
            connection.end();
            await connection.closed(10_000);
            assert.equal(connection.error, undefined, 'no reset');
          } finally {
            connection.destroy();
          }
        }
      });

      test('an upload refused with 404 (an invisible project) lingers the same way', async () => {
        const connection = new RawConnection(server.url);
        const rest = Buffer.alloc(4 * 1024 * 1024, 'a');
        try {
          await connection.write(
            'POST /api/v1/projects/00000000-0000-4000-8000-000000000000/artifact HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
              'Content-Type: multipart/form-data; boundary=xyz\r\nAccept: application/json\r\n' +
              `service.api-token: ${server.admin.key}\r\nContent-Length: ${rest.length + 7}\r\n\r\n--xyz\r\n`,
          );
          const text = await connection.received(/^HTTP\/1\.1 404 [\s\S]*\r\n\r\n\{[\s\S]*\}$/);
          assert.doesNotMatch(text, /\r\nconnection: close\r\n/i);
          await connection.write(rest);
          await connection.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n');
          await connection.received(/\}HTTP\/1\.1 200 /, 20_000);
          connection.end();
          await connection.closed(20_000);
          assert.equal(connection.error, undefined, 'no reset');
        } finally {
          connection.destroy();
        }
      });

      test('a refusal after the body was read (a 400 from validation) keeps the connection', async () => {
        const body = '{"key":"not a key"}';
        const connection = new RawConnection(server.url);
        try {
          await connection.write(postHead(server.admin.key, body.length) + body);
          const text = await connection.received(/^HTTP\/1\.1 400 [\s\S]*\r\n\r\n\{[\s\S]*\}$/);
          assert.doesNotMatch(text, /\r\nconnection: close\r\n/i);
          // The connection is reused: a second request on it is answered too.
          await connection.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n`);
          await connection.received(/HTTP\/1\.1 200 /);
          assert.equal(connection.ended, false);
        } finally {
          connection.destroy();
        }
      });
    });

    describe('a lingering close is bounded (LOAD-4b)', () => {
      let bounded: TestServer;
      before(async () => {
        bounded = await startTestServer(dialect, {
          ATTEST_LINGER_MS: '3000',
          ATTEST_LINGER_IDLE_MS: '1000',
          ATTEST_LINGER_MAX_BYTES: String(256 * 1024),
        });
      });
      after(() => bounded.close());

      /** Sends `bytes` and stops: after `answer`, the connection is cut once idle for ATTEST_LINGER_IDLE_MS, before the whole linger. */
      async function cutWhenIdle(bytes: string, answer: RegExp): Promise<void> {
        await serverClosedAll(bounded);
        const connection = new RawConnection(bounded.url);
        try {
          await connection.write(bytes);
          await connection.received(answer);
          const answered = Date.now();
          const lingered = (await serverClosedAll(bounded)) - answered;
          assert.ok(lingered >= 900, `closed ${lingered} ms after the answer, before the idle time`);
          assert.ok(lingered < 2900, `closed ${lingered} ms after the answer: the idle time, not the whole linger, ended it`);
        } finally {
          connection.destroy();
        }
      }

      test('a client that stops sending is cut after ATTEST_LINGER_IDLE_MS', async () => {
        await cutWhenIdle(`${postHead(undefined, 200_000)}{"name":"`, /^HTTP\/1\.1 401 /);
      });

      test('after a 431, a client that stops sending is cut after ATTEST_LINGER_IDLE_MS', async () => {
        await cutWhenIdle(`GET /api/v1/projects?q=${'x'.repeat(20_000)}`, /^HTTP\/1\.1 431 /);
      });

      test('a client that asked to close and stops sending gets its answer after ATTEST_LINGER_IDLE_MS, then the connection closes', async () => {
        await serverClosedAll(bounded);
        const connection = new RawConnection(bounded.url);
        try {
          await connection.write(`${postHead(undefined, 200_000, 'Connection: close\r\n')}{"name":"`);
          const sent = Date.now();
          await connection.received(/^HTTP\/1\.1 401 [\s\S]*\r\n\r\n\{[\s\S]*\}$/);
          const waited = Date.now() - sent;
          assert.ok(waited >= 900, `answered ${waited} ms after the body stopped, before the idle time`);
          assert.ok(waited < 2900, `answered ${waited} ms after the body stopped: the idle time, not the whole linger, ended the wait`);
          await waitFor(() => connection.ended, { message: "the server's FIN after the answer" });
          assert.equal(connection.error, undefined, 'no reset');
        } finally {
          connection.destroy();
        }
      });

      test('a client that keeps sending is cut after ATTEST_LINGER_MS', async () => {
        await serverClosedAll(bounded);
        const connection = new RawConnection(bounded.url);
        const drip = trickle(connection, 200);
        try {
          await connection.write(`${postHead(undefined, 200_000)}{"name":"`);
          await connection.received(/^HTTP\/1\.1 401 /);
          const closed = await serverClosedAll(bounded);
          assert.ok(closed - connection.started >= 2900, `closed after ${closed - connection.started} ms, before ATTEST_LINGER_MS`);
        } finally {
          drip.stop();
          connection.destroy();
        }
      });

      test('a body declared larger than ATTEST_LINGER_MAX_BYTES is not lingered on: the answer says Connection: close and the connection ends', async () => {
        await serverClosedAll(bounded);
        const connection = new RawConnection(bounded.url);
        try {
          await connection.write(`${postHead(undefined, 1_000_000)}{"name":"`);
          const text = await connection.received(/^HTTP\/1\.1 401 [\s\S]*\r\n\r\n\{[\s\S]*\}$/);
          assert.match(text, /\r\nconnection: close\r\n/i);
          await waitFor(() => connection.ended, { message: "the server's FIN after the answer" });
        } finally {
          connection.destroy();
        }
      });

      test('a client that sends more than ATTEST_LINGER_MAX_BYTES is cut (its connection reset)', async () => {
        await serverClosedAll(bounded);
        const connection = new RawConnection(bounded.url);
        // Far more than the loopback's socket buffers hold: the client cannot finish sending it.
        const rest = Buffer.alloc(64 * 1024 * 1024, 'a');
        try {
          // A chunked body announces no length: it is lingered on, and the bytes read are counted.
          const head = postHead(undefined, 0).replace('Content-Length: 0\r\n', 'Transfer-Encoding: chunked\r\n');
          await connection.write(`${head}9\r\n{"name":"\r\n`);
          const text = await connection.received(/^HTTP\/1\.1 401 [\s\S]*\r\n\r\n\{[\s\S]*\}$/);
          assert.doesNotMatch(text, /\r\nconnection: close\r\n/i);
          await connection.write(Buffer.concat([Buffer.from(`${rest.length.toString(16)}\r\n`), rest]));
          await waitFor(() => connection.error, { timeoutMs: 20_000, message: 'the client saw its connection reset' });
          assert.match(String(connection.error), /ECONNRESET|EPIPE/);
          // Well before the linger time or the idle time could have ended it.
          await serverClosedAll(bounded);
        } finally {
          connection.destroy();
        }
      });
    });

    describe('a body that never ends is cut off within the request timeout (LOAD-4b)', () => {
      const timeoutMs = 1500;
      let strict: TestServer;
      before(async () => {
        // Lingering alone would read for a minute: the request deadline ends it first.
        strict = await startTestServer(dialect, {
          ATTEST_REQUEST_TIMEOUT_MS: String(timeoutMs),
          ATTEST_LINGER_MS: '60000',
          ATTEST_LINGER_IDLE_MS: '60000',
        });
      });
      after(() => strict.close());

      test('a refused POST whose body trickles on forever is closed once the request timeout has passed', async () => {
        const connection = new RawConnection(strict.url);
        const drip = trickle(connection, 100);
        try {
          await connection.write(`${postHead(undefined, 60_000_000)}{"name":"`);
          await connection.received(/^HTTP\/1\.1 401 /);
          const closedAfter = (await serverClosedAll(strict)) - connection.started;
          assert.ok(closedAfter >= timeoutMs - 100, `closed after ${closedAfter} ms, before the request timeout`);
          assert.ok(closedAfter < 20_000, `closed after ${closedAfter} ms: the request timeout, not the linger time, ended it`);
        } finally {
          drip.stop();
          connection.destroy();
        }
      });
    });

    describe('graceful shutdown does not wait out a lingering close (LOAD-4b)', () => {
      let closing: TestServer;
      before(async () => {
        closing = await startTestServer(dialect, { ATTEST_LINGER_MS: '120000', ATTEST_LINGER_IDLE_MS: '120000' });
      });
      after(() => closing.close());

      test('closing the app ends a refused body still trickling in, and the close completes', async () => {
        const connection = new RawConnection(closing.url);
        const drip = trickle(connection, 100);
        try {
          await connection.write(`${postHead(undefined, 60_000_000)}{"name":"`);
          await connection.received(/^HTTP\/1\.1 401 /);
          const started = Date.now();
          // The app's own close (graceful shutdown), without the harness cutting connections.
          await closing.app.close();
          const tookMs = Date.now() - started;
          assert.ok(tookMs < 10_000, `the close took ${tookMs} ms (the default shutdown timeout is 10 s; the linger two minutes)`);
          assert.equal(await openConnections(closing), 0);
        } finally {
          drip.stop();
          connection.destroy();
        }
      });
    });

    describe('Expect: 100-continue is answered after authentication and authorisation (LOAD-4c)', () => {
      test('a POST without a key that expects 100-continue gets its 401 and no 100 Continue', async () => {
        const connection = new RawConnection(server.url);
        try {
          await connection.write(postHead(undefined, 100_000, 'Expect: 100-continue\r\n'));
          const text = await connection.received(/\r\n\r\n\{[\s\S]*\}$/);
          assert.match(text, /^HTTP\/1\.1 401 /);
          assert.doesNotMatch(text, /100 Continue/);
          await waitFor(() => connection.ended, { message: 'the connection ends (the client was never told to send)' });
        } finally {
          connection.destroy();
        }
      });

      test("a viewer's upload and an upload to an invisible project get 403 and 404 without 100 Continue", async () => {
        const project = await createProject(server);
        const viewer = await createUser(server, ['viewer'], { projects: [project.id] });
        for (const [key, projectId, status] of [
          [viewer.key, project.id, 403],
          [server.admin.key, '00000000-0000-4000-8000-000000000000', 404],
        ] as const) {
          const connection = new RawConnection(server.url);
          try {
            await connection.write(
              `POST /api/v1/projects/${projectId}/artifact HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
                'Content-Type: multipart/form-data; boundary=xyz\r\nAccept: application/json\r\nExpect: 100-continue\r\n' +
                `service.api-token: ${key}\r\nContent-Length: 5000000\r\n\r\n`,
            );
            const text = await connection.received(/\r\n\r\n\{[\s\S]*\}$/);
            assert.match(text, new RegExp(`^HTTP/1\\.1 ${status} `));
            assert.doesNotMatch(text, /100 Continue/);
          } finally {
            connection.destroy();
          }
        }
      });

      test('an accepted JSON POST that expects 100-continue gets it, then sends its body and is answered 201 on a kept connection', async () => {
        const body = JSON.stringify({ key: `E${randomBytes(4).toString('hex').toUpperCase()}`, name: 'expecting' });
        const connection = new RawConnection(server.url);
        try {
          await connection.write(postHead(server.admin.key, Buffer.byteLength(body), 'Expect: 100-continue\r\n'));
          await connection.received(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
          await connection.write(body);
          const text = await connection.received(/HTTP\/1\.1 201 [\s\S]*\r\n\r\n\{[\s\S]*\}$/);
          assert.doesNotMatch(text, /\r\nconnection: close\r\n/i);
        } finally {
          connection.destroy();
        }
      });

      test('an accepted upload that expects 100-continue gets it once its checks passed, then 201', async () => {
        const project = await createProject(server);
        const run = await startRun(server.admin.client, project.id);
        const form = new FormData();
        form.append('metadata', JSON.stringify({ testRunId: run.id, kind: 'log', name: 'expect.log' }));
        form.append('file', new Blob([randomBytes(50_000)], { type: 'application/octet-stream' }), 'expect.log');
        const { payload, contentType } = await encodeForm(form);
        const connection = new RawConnection(server.url);
        try {
          await connection.write(
            `POST /api/v1/projects/${project.id}/artifact HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${contentType}\r\n` +
              `Accept: application/json\r\nExpect: 100-continue\r\nservice.api-token: ${server.admin.key}\r\n` +
              `Content-Length: ${payload.length}\r\n\r\n`,
          );
          await connection.received(/^HTTP\/1\.1 100 Continue\r\n\r\n$/);
          await connection.write(payload);
          await connection.received(/HTTP\/1\.1 201 [\s\S]*\r\n\r\n\{[\s\S]*\}$/);
        } finally {
          connection.destroy();
        }
      });
    });

    describe('POST /projects/{projectId}/artifact: images decode before they are acknowledged (FILE-3)', () => {
      const rowsOf = async (runId: string) =>
        (await server.app.attest.db.selectFrom('artifacts').select('id').where('run_id', '=', runId).execute()).length;
      const screenshot = async (bytes: Buffer, name: string) => {
        const project = await createProject(server);
        const run = await startRun(server.admin.client, project.id);
        const answer = await adminUpload(server, project.id, { testRunId: run.id, kind: 'screenshot', name }, { bytes });
        return { answer, runId: run.id, projectId: project.id };
      };

      test('a truncated PNG is 422 UNPROCESSABLE and no artifact row is written', async () => {
        const png = await randomPng(64, 48);
        const { answer, runId } = await screenshot(png.subarray(0, Math.floor(png.length / 2)), 'cut.png');
        assert.equal(answer.status, 422, JSON.stringify(answer.body));
        assert.equal(answer.body.code, 'UNPROCESSABLE');
        assert.match(String(answer.body.detail), /does not decode/);
        assert.equal(await rowsOf(runId), 0);
      });

      test('garbage after a valid PNG header is 422 UNPROCESSABLE and no artifact row is written', async () => {
        const png = await randomPng(64, 48);
        // Signature (8 bytes) and IHDR (25) pass the type and dimension checks; the IDAT is well framed but holds noise.
        const idat = Buffer.concat([Buffer.from('IDAT'), randomBytes(4000)]);
        const framed = Buffer.alloc(idat.length + 8);
        framed.writeUInt32BE(idat.length - 4, 0);
        idat.copy(framed, 4);
        framed.writeUInt32BE(crc32(idat), idat.length + 4);
        const iend = Buffer.from([0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82]);
        const { answer, runId } = await screenshot(Buffer.concat([png.subarray(0, 33), framed, iend]), 'garbage.png');
        assert.equal(answer.status, 422, JSON.stringify(answer.body));
        assert.equal(answer.body.code, 'UNPROCESSABLE');
        assert.equal(await rowsOf(runId), 0);
      });

      test('a visual diff with one undecodable image is 422 and writes nothing', async () => {
        const project = await createProject(server);
        const run = await startRun(server.admin.client, project.id);
        const actual = await randomPng(32, 32);
        const answer = await upload(
          server.url,
          server.admin.key,
          project.id,
          { testRunId: run.id, kind: 'visual-diff', name: 'd' },
          {
            baseline: { bytes: await randomPng(32, 32) },
            actual: { bytes: actual.subarray(0, actual.length - 200) },
            diff: { bytes: await randomPng(32, 32) },
          },
        );
        assert.equal(answer.status, 422, JSON.stringify(answer.body));
        assert.equal(answer.body.code, 'UNPROCESSABLE');
        assert.equal(await rowsOf(run.id), 0);
      });

      test('valid PNG, JPEG, GIF and WebP screenshots are still 201', async () => {
        const png = await randomPng(40, 30);
        const samples: [string, Buffer][] = [
          ['a.png', png],
          ['a.jpg', await sharp(png).jpeg().toBuffer()],
          ['a.gif', await randomGif(40, 30)],
          ['a.webp', await sharp(png).webp().toBuffer()],
        ];
        for (const [name, bytes] of samples) {
          const { answer, runId } = await screenshot(bytes, name);
          assert.equal(answer.status, 201, `${name}: ${JSON.stringify(answer.body)}`);
          assert.equal(await rowsOf(runId), 1);
        }
      });
    });

    describe('POST /projects', () => {
      test('a NUL 5 000 levels deep is a 400 INVALID_INPUT naming the field, not MALFORMED_JSON', async () => {
        const response = await rawRequest(`${server.url}/api/v1/projects`, {
          method: 'POST',
          headers: jsonHeaders(server.admin.key),
          body: nestedWithNul(5000),
        });
        assertProblem(response, 400, 'INVALID_INPUT');
        const [error] = response.json.errors as { pointer: string; message: string }[];
        assert.match(error?.pointer ?? '', /^\/body\/a\/a\/a/);
        assert.match(error?.message ?? '', /NUL/);
      });

      test('a pointer 1 000 levels deep is echoed cut to 200 characters, ending in an ellipsis', async () => {
        const response = await rawRequest(`${server.url}/api/v1/projects`, {
          method: 'POST',
          headers: jsonHeaders(server.admin.key),
          body: nestedWithNul(1000),
        });
        assertProblem(response, 400, 'INVALID_INPUT');
        const [error] = response.json.errors as { pointer: string }[];
        const pointer = error?.pointer ?? '';
        assert.equal(pointer.length, 200, `pointer of ${pointer.length} characters`);
        assert.ok(pointer.startsWith('/body/a/a/'));
        assert.ok(pointer.endsWith('…'));
        assert.ok((response.json.detail as string).length < 300, 'the detail does not repeat the whole pointer either');
      });

      test('a validation error at a long property name is cut the same way', async () => {
        // A body that parses, holds no NUL, and fails the schema at a long path: an unknown property with a long name.
        const response = await rawRequest(`${server.url}/api/v1/projects`, {
          method: 'POST',
          headers: jsonHeaders(server.admin.key),
          body: JSON.stringify({ key: 'LONG', name: 'p', ['x'.repeat(1000)]: 1 }),
        });
        assertProblem(response, 400, 'INVALID_INPUT');
        const [error] = response.json.errors as { pointer: string }[];
        assert.equal(error?.pointer.length, 200);
        assert.ok(error?.pointer.startsWith('/body/xxx'));
        assert.ok(error?.pointer.endsWith('…'));
      });
    });
  });
}
