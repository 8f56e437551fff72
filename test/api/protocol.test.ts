import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { v1 } from '../../src/client/index.ts';
import { loadConfig } from '../../src/server/config.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, type TestUser, unique } from '../helpers/factories.ts';
import { logEntries } from '../helpers/logs.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { delay, waitFor } from '../helpers/wait.ts';

// HTTP-level behaviour every endpoint shares: request deadlines (ERR-2 408),
// content negotiation (SPEC-1.2) and what the request log says about the caller (AUTH-9).

interface RawAnswer {
  /** Everything the server wrote before it closed the connection. */
  text: string;
  /** Whether the server closed the connection (rather than the test giving up waiting). */
  closed: boolean;
  elapsedMs: number;
}

/** Opens a raw TCP connection, writes `head` and waits until the server closes it (or `waitMs` passes). */
function rawExchange(url: string, head: string, waitMs: number): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(port), hostname);
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text: Buffer.concat(chunks).toString('utf8'), closed, elapsedMs: Date.now() - started });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('close', () => finish(true));
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? finish(true) : reject(error)));
    socket.write(head);
  });
}

function parseRawResponse(text: string) {
  const split = text.indexOf('\r\n\r\n');
  const head = text.slice(0, split);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = new Map(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(text.slice(split + 4)) as Record<string, unknown> };
}

describe('ATTEST_REQUEST_TIMEOUT_MS', () => {
  test('defaults to five minutes and refuses values outside 100 ms to 24 h', () => {
    assert.equal(loadConfig({}).requestTimeoutMs, 300_000);
    assert.equal(loadConfig({ ATTEST_REQUEST_TIMEOUT_MS: '1500' }).requestTimeoutMs, 1500);
    for (const value of ['0', '99', '86400001', '5s']) {
      assert.throws(() => loadConfig({ ATTEST_REQUEST_TIMEOUT_MS: value }), /ATTEST_REQUEST_TIMEOUT_MS/, value);
    }
  });
});

for (const dialect of DIALECTS) {
  describe(`[${dialect}] protocol`, () => {
    describe('slow or incomplete requests (ERR-2: 408)', () => {
      const timeoutMs = 400;
      let server: TestServer;
      before(async () => {
        server = await startTestServer(dialect, { ATTEST_REQUEST_TIMEOUT_MS: String(timeoutMs) });
      });
      after(() => server.close());

      const assertTimedOut = (answer: RawAnswer) => {
        assert.ok(answer.closed, `the connection was still open after ${answer.elapsedMs} ms`);
        assert.ok(answer.elapsedMs >= timeoutMs - 50, `cut after ${answer.elapsedMs} ms, before the deadline`);
        const response = parseRawResponse(answer.text);
        assert.equal(response.status, 408);
        assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
        assert.equal(response.headers.get('connection'), 'close');
        assert.equal(response.body.status, 408);
        assert.equal(response.body.code, 'REQUEST_TIMEOUT');
        assert.equal(response.body.type, 'urn:attest:problem:request-timeout');
        assert.match(String(response.body.instance), /^urn:attest:request:/);
        const id = String(response.body.instance).split(':').pop();
        assert.equal(response.headers.get('x-request-id'), id);
        assert.ok(
          logEntries(server).some((entry) => entry.reqId === id && entry.code === 'ERR_HTTP_REQUEST_TIMEOUT'),
          'the log names the answer by its instance id',
        );
      };

      test('a body that stops short of its Content-Length is answered 408 and the connection closed', async () => {
        const { port } = new URL(server.url);
        const answer = await rawExchange(
          server.url,
          `POST /api/v1/projects HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nAccept: application/json\r\n` +
            `service.api-token: ${server.admin.key}\r\nContent-Length: 50\r\n\r\n{`,
          timeoutMs + 5000,
        );
        assertTimedOut(answer);
      });

      test('headers that never finish are answered 408 and the connection closed', async () => {
        const { port } = new URL(server.url);
        const answer = await rawExchange(server.url, `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: app`, timeoutMs + 5000);
        assertTimedOut(answer);
      });

      test('the deadline applies to each request, not to an idle keep-alive connection', async () => {
        const { hostname, port } = new URL(server.url);
        const socket = net.connect(Number(port), hostname);
        const received: string[] = [];
        socket.on('data', (chunk: Buffer) => received.push(chunk.toString('utf8')));
        const request = `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: application/json\r\n\r\n`;
        const statusLines = () => received.join('').match(/HTTP\/1\.1 \d+/g) ?? [];
        const answers = async (count: number) => {
          await waitFor(() => statusLines().length >= count, { message: () => `${count} answers (got ${statusLines().join(', ')})` });
          return statusLines();
        };
        try {
          socket.write(request);
          assert.deepEqual(await answers(1), ['HTTP/1.1 200']);
          // Deliberate: the connection must sit idle well past the request deadline.
          await delay(timeoutMs * 3);
          assert.deepEqual(await answers(1), ['HTTP/1.1 200'], 'nothing was written to the idle connection');
          socket.write(request);
          assert.deepEqual(await answers(2), ['HTTP/1.1 200', 'HTTP/1.1 200']);
        } finally {
          socket.destroy();
        }
      });
    });

    describe('pipelined requests', () => {
      // Its own server, with the default request deadline: the 8 MB upload it needs takes longer than
      // the short deadline above on a loaded machine (a CI run answered it 408).
      let server: TestServer;
      before(async () => {
        server = await startTestServer(dialect);
      });
      after(() => server.close());

      test('a malformed request behind an answer under way closes the connection, never writes a second status line', async () => {
        // An 8 MB log, read by a client that pauses after the first bytes: the answer stays under way
        // (more than the socket buffers hold) when the garbage after it is parsed.
        const project = await createProject(server);
        const run = await server.admin.client.call(v1.runs.createRun, { body: { projectId: project.id, name: unique('long answer ') } });
        const form = new FormData();
        form.append('metadata', JSON.stringify({ testRunId: run.id, kind: 'log', name: 'big.log' }));
        form.append('file', new Blob([Buffer.alloc(8 * 1024 * 1024, 'x')]), 'big.log');
        const upload = await fetch(`${server.url}/api/v1/projects/${project.id}/artifact`, {
          method: 'POST',
          headers: { 'service.api-token': server.admin.key, accept: 'application/json' },
          body: form,
        });
        assert.equal(upload.status, 201, await upload.clone().text());
        const artifact = (await upload.json()) as { id: string };

        const { hostname, port } = new URL(server.url);
        const socket = net.connect(Number(port), hostname);
        const chunks: Buffer[] = [];
        const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
        socket.once('data', async (first: Buffer) => {
          chunks.push(first);
          socket.pause();
          socket.write('NOT-A-METHOD / HTTP/1.1\r\n\r\n');
          await delay(200);
          socket.on('data', (chunk: Buffer) => chunks.push(chunk));
          socket.resume();
        });
        socket.write(
          `GET /api/v1/artifact/artifacts/${artifact.id}/content HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
            `service.api-token: ${server.admin.key}\r\n\r\n`,
        );
        await closed;
        const text = Buffer.concat(chunks).toString('latin1');
        assert.deepEqual(text.match(/HTTP\/1\.1 \d{3}/g), ['HTTP/1.1 200'], 'one status line: the download’s');
        assert.ok(!text.includes('problem+json'), 'no problem written into the download');
      });
    });

    describe('content negotiation (SPEC-1.2)', () => {
      let server: TestServer;
      let projectId: string;
      before(async () => {
        server = await startTestServer(dialect);
        projectId = (await createProject(server)).id;
      });
      after(() => server.close());

      const key = () => server.admin.key;
      /** JSON operations: the open ones outside the contract, open contract ones, and authenticated reads and writes. */
      const targets = (): { method: string; path: string; body?: string }[] => [
        { method: 'GET', path: '/api' },
        { method: 'GET', path: '/health' },
        { method: 'GET', path: '/api/v1/health' },
        { method: 'GET', path: '/api/v1/health/ready' },
        { method: 'GET', path: '/api/v1/me' },
        { method: 'GET', path: '/api/v1/openapi.json' },
        { method: 'GET', path: '/api/v1/projects' },
        { method: 'GET', path: `/api/v1/projects/${projectId}/members` },
        { method: 'PATCH', path: `/api/v1/projects/${projectId}`, body: JSON.stringify({ name: 'renamed' }) },
        { method: 'POST', path: '/api/v1/projects', body: JSON.stringify({ key: `N${unique().toUpperCase()}`.slice(0, 16), name: 'no' }) },
      ];
      const send = (target: { method: string; path: string; body?: string }, accept: string | undefined) =>
        fetch(`${server.url}${target.path}`, {
          method: target.method,
          headers: {
            'content-type': 'application/json',
            'service.api-token': key(),
            ...(accept === undefined ? {} : { accept }),
          },
          body: target.body,
        });

      test('an Accept that excludes JSON is answered 406 with a problem, by every JSON endpoint, and changes nothing', async () => {
        const before = await server.admin.client.call(v1.projects.listProjects, { query: { limit: 200 } });
        for (const accept of ['text/html', 'application/xml', 'image/png', 'text/html, application/json;q=0', 'text/*']) {
          for (const target of targets()) {
            const response = await send(target, accept);
            const name = `${target.method} ${target.path} with Accept: ${accept}`;
            assert.equal(response.status, 406, name);
            assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/, name);
            const problem = (await response.json()) as Record<string, unknown>;
            assert.equal(problem.code, 'NOT_ACCEPTABLE', name);
            assert.equal(problem.status, 406, name);
            assert.ok(response.headers.get('x-request-id'), name);
          }
        }
        const afterwards = await server.admin.client.call(v1.projects.listProjects, { query: { limit: 200 } });
        assert.deepEqual(afterwards, before, 'a refused write wrote nothing');
      });

      test('an Accept that admits JSON, or none at all, is served', async () => {
        for (const accept of [
          undefined,
          'application/json',
          'application/json; charset=utf-8',
          '*/*',
          'application/*',
          'text/html, */*;q=0.1',
        ]) {
          for (const target of targets().filter((t) => t.method === 'GET')) {
            const response = await send(target, accept);
            assert.equal(response.status, 200, `${target.method} ${target.path} with Accept: ${accept}`);
            assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
            await response.arrayBuffer();
          }
        }
      });

      test('the HTML API reference still answers text/html', async () => {
        const response = await fetch(`${server.url}/docs/api`, { headers: { accept: 'text/html' } });
        assert.equal(response.status, 200);
        assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
        await response.arrayBuffer();
      });
    });

    describe('request log lines name the key (AUTH-9)', () => {
      let server: TestServer;
      let user: TestUser;
      let userId: string;
      before(async () => {
        server = await startTestServer(dialect);
        user = await createUser(server, ['viewer']);
        userId = (await user.client.call(v1.meta.getMe)).id;
      });
      after(() => server.close());

      const linesOf = (requestId: string) => logEntries(server).filter((entry) => entry.reqId === requestId);

      test('"request completed" carries the key id and the user id, never the key', async () => {
        const response = await user.client.fetchRaw('GET', '/me');
        assert.equal(response.status, 200);
        await response.arrayBuffer();
        const requestId = response.headers.get('x-request-id') ?? '';
        const lines = linesOf(requestId);
        const completed = lines.find((entry) => entry.msg === 'request completed');
        assert.ok(completed, `no "request completed" line for ${requestId}`);
        assert.equal(completed.keyId, user.keyId);
        assert.equal(completed.userId, userId);
        for (const line of lines) assert.ok(!JSON.stringify(line).includes(user.key), 'the key reached the logs');
      });

      test('a refused call is logged with its key id too; an unauthenticated one names no key', async () => {
        const refused = await user.client.fetchRaw('POST', '/projects', { body: JSON.stringify({ key: 'NOPE', name: 'x' }) });
        assert.equal(refused.status, 403);
        await refused.arrayBuffer();
        const refusedLine = linesOf(refused.headers.get('x-request-id') ?? '').find((entry) => entry.msg === 'request completed');
        assert.equal(refusedLine?.keyId, user.keyId);
        assert.equal(refusedLine?.userId, userId);

        const anonymous = await server.client('atk_not_a_real_key').fetchRaw('GET', '/me');
        assert.equal(anonymous.status, 401);
        await anonymous.arrayBuffer();
        const anonymousLine = linesOf(anonymous.headers.get('x-request-id') ?? '').find((entry) => entry.msg === 'request completed');
        assert.ok(anonymousLine, 'the refused request was logged');
        assert.equal(anonymousLine.keyId, undefined);
        assert.equal(anonymousLine.userId, undefined);
      });
    });
  });
}
