import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject } from '../helpers/factories.ts';
import { jsonHeaders, rawRequest } from '../helpers/http.ts';
import { randomGif, randomPng } from '../helpers/png.ts';
import { assertProblem } from '../helpers/problems.ts';
import { startRun } from '../helpers/records.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { upload } from '../helpers/uploads.ts';

/**
 * Sends the head of a request and the first part of its body on a raw socket, then keeps the
 * socket open (a client still trickling): resolves with what the server wrote and whether, and how
 * soon, it closed the connection, within `withinMs`.
 */
function sendPartly(url: string, head: string, bodyStart: string, withinMs: number): Promise<{ text: string; closedAfterMs?: number }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    const started = Date.now();
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text: Buffer.concat(chunks).toString('utf8'), closedAfterMs: closed ? Date.now() - started : undefined });
    };
    // The window in which the server must close: after it, the test looks at what it saw.
    const timer = setTimeout(() => finish(false), withinMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', (error) => (settled ? undefined : reject(error)));
    socket.write(head + bodyStart);
  });
}

// Bad input refused early and precisely: deep bodies, long pointers, early refusals that close.

/** `{"a":{"a":…{"a":"x\u0000y"}…}}`, `depth` objects deep. */
const nestedWithNul = (depth: number): string => `${'{"a":'.repeat(depth)}"x\\u0000y"${'}'.repeat(depth)}`;

for (const dialect of DIALECTS) {
  describe(`[${dialect}] bad input refused early and precisely`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(dialect);
    });
    after(() => server.close());

    describe('early refusals', () => {
      test('a POST refused with 401 before its body is read closes the connection at once (Connection: close)', async () => {
        const head =
          'POST /api/v1/projects HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n' +
          'service.api-token: not-a-key\r\nContent-Length: 1000000\r\n\r\n';
        const seen = await sendPartly(server.url, head, '{"name":"', 3000);
        assert.match(seen.text, /^HTTP\/1\.1 401 /);
        assert.match(seen.text, /\r\nconnection: close\r\n/i);
        assert.ok(seen.closedAfterMs !== undefined, 'the server closed the connection instead of waiting for the rest of the body');
      });

      test('an upload refused with 404 (an invisible project) before its body is read closes the connection too', async () => {
        const head =
          'POST /api/v1/projects/00000000-0000-4000-8000-000000000000/artifact HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
          'Content-Type: multipart/form-data; boundary=xyz\r\nAccept: application/json\r\n' +
          `service.api-token: ${server.admin.key}\r\nContent-Length: 5000000\r\n\r\n`;
        const seen = await sendPartly(server.url, head, '--xyz\r\n', 3000);
        assert.match(seen.text, /^HTTP\/1\.1 404 /);
        assert.match(seen.text, /\r\nconnection: close\r\n/i);
        assert.ok(seen.closedAfterMs !== undefined, 'the server closed the connection');
      });

      test('a refusal after the body was read (a 400 from validation) keeps the connection', async () => {
        const body = '{"key":"not a key"}';
        const head =
          'POST /api/v1/projects HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n' +
          `service.api-token: ${server.admin.key}\r\nContent-Length: ${body.length}\r\n\r\n`;
        // The window is the test: the connection must stay open for it.
        const seen = await sendPartly(server.url, head, body, 500);
        assert.match(seen.text, /^HTTP\/1\.1 400 /);
        assert.doesNotMatch(seen.text, /\r\nconnection: close\r\n/i);
        assert.equal(seen.closedAfterMs, undefined);
      });
    });

    describe('POST /projects/{projectId}/artifact: images decode before they are acknowledged (FILE-3)', () => {
      const rowsOf = async (runId: string) =>
        (await server.app.attest.db.selectFrom('artifacts').select('id').where('run_id', '=', runId).execute()).length;
      const screenshot = async (bytes: Buffer, name: string) => {
        const project = await createProject(server);
        const run = await startRun(server.admin.client, project.id);
        const answer = await upload(
          server.url,
          server.admin.key,
          project.id,
          { testRunId: run.id, kind: 'screenshot', name },
          { file: { bytes } },
        );
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
