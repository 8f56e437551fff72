import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import Fastify from 'fastify';
import { RequestLogger, redactUrl, requestLogger } from '../../src/server/http/request-logger.ts';
import { generateKey, keyDigest } from '../../src/server/security/api-key.ts';
import { LegacyKeyDigests } from '../../src/server/security/legacy-key-digests.ts';

// The per-request logger (AUTH-9): pino's child is made only for a line at an enabled level, and
// every line names the request, then its key and user, as a child made at once would.

type Logger = ReturnType<typeof requestLogger> & { setBindings(b: Record<string, unknown>): void; isLevelEnabled(level: string): boolean };

function pinoAt(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
  });
  let children = 0;
  const app = Fastify({ logger: { level, stream, onChild: () => children++ } });
  return {
    app,
    /** What Fastify's childLoggerFactory hook gets for a request. */
    lazy: (bindings: Record<string, unknown>, options: object = {}) => requestLogger(app.log, bindings, options) as Logger,
    eager: (bindings: Record<string, unknown>) => app.log.child(bindings) as Logger,
    lines,
    children: () => children,
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('lines below the level make no child; the first line written carries every binding given so far', async () => {
  const pino = pinoAt('warn');
  const logger = pino.lazy({ reqId: 'r-1' });
  logger.info('request completed');
  logger.debug({ detail: 1 }, 'noise');
  logger.setBindings({ keyId: 'k-1', userId: 'u-1' });
  assert.equal(pino.children(), 0, 'no child for lines nobody writes');
  assert.equal(logger.isLevelEnabled('info'), false);
  logger.warn({ err: new Error('disk') }, 'a write could not be made durable');
  logger.setBindings({ extra: true });
  logger.error('later');
  await settle();
  assert.equal(pino.children(), 1);
  assert.equal(pino.lines.length, 2);
  const [first, second] = pino.lines;
  assert.equal(first?.msg, 'a write could not be made durable');
  assert.deepEqual([first?.reqId, first?.keyId, first?.userId], ['r-1', 'k-1', 'u-1']);
  assert.equal((first?.err as { message: string } | undefined)?.message, 'disk');
  assert.deepEqual([second?.reqId, second?.keyId, second?.extra], ['r-1', 'k-1', true]);
});

test('the lines equal those of pino child made at once', async () => {
  const lazy = pinoAt('info');
  const eager = pinoAt('info');
  for (const logger of [lazy.lazy({ reqId: 'r-2' }), eager.eager({ reqId: 'r-2' })]) {
    logger.setBindings({ keyId: 'k-2' });
    logger.info({ responseTime: 1.5 }, 'request completed');
  }
  await settle();
  const strip = (line: Record<string, unknown> | undefined) => ({ ...line, time: 0, pid: 0, hostname: '' });
  assert.deepEqual(strip(lazy.lines[0]), strip(eager.lines[0]));
});

test('a route with its own level or serializers gets pino child at once', () => {
  const pino = pinoAt('warn');
  pino.lazy({ reqId: 'r-3' }, { level: 'debug' });
  assert.equal(pino.children(), 1);
});

test('Fastify gives each request the lazy logger through childLoggerFactory, bound to its request id', async () => {
  const lines: Record<string, unknown>[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
  });
  const app = Fastify({ logger: { level: 'warn', stream }, childLoggerFactory: requestLogger, genReqId: () => 'r-4' });
  let kind = '';
  app.get('/', async (request) => {
    kind = request.log.constructor.name;
    request.log.warn('from the route');
    return {};
  });
  await app.inject({ url: '/' });
  await app.close();
  await settle();
  assert.equal(kind, RequestLogger.name);
  assert.deepEqual(
    lines.filter((line) => line.msg === 'from the route').map((line) => line.reqId),
    ['r-4'],
  );
});

test('credential-looking query values are masked in logged URLs', () => {
  assert.equal(redactUrl('/api/v1/me?api_key=atk_x&limit=5'), '/api/v1/me?api_key=%5Bredacted%5D&limit=5');
  assert.equal(redactUrl('/api/v1/health'), '/api/v1/health');
});

describe('keys anywhere in a logged URL are masked; resource ids are kept (AUTH-9, SEC-2a)', () => {
  const key = generateKey('standard');
  const session = generateKey('session');
  const legacy = '3f2b8c1e-9d4a-4e7b-a1c2-0f9e8d7c6b5a';
  const runId = '7b1e2c3d-4f5a-4b6c-8d7e-9f0a1b2c3d4e';

  test('a standard or session key is masked in any path segment, glued to other text, cut short or percent-encoded', () => {
    assert.equal(redactUrl(`/api/v1/${key}`), '/api/v1/[redacted]');
    assert.equal(
      redactUrl(`/api/v1/testmgmt/testruns/${session}/results`, { testRunId: session }),
      '/api/v1/testmgmt/testruns/[redacted]/results',
    );
    assert.equal(redactUrl(`/api/v1/prefix-${key}-suffix/x`), '/api/v1/[redacted]/x');
    assert.equal(redactUrl(`/api/v1/${key.slice(0, 20)}`), '/api/v1/[redacted]', 'most of a key is still a secret');
    const encoded = `%61%74%6B_${key.slice(4)}`;
    assert.equal(redactUrl(`/api/v1/${encoded}`), '/api/v1/[redacted]');
  });

  test('a UUID in the path is kept only as the value of an id parameter of the matched route', () => {
    assert.equal(redactUrl(`/api/v1/testmgmt/testruns/${runId}`, { testRunId: runId }), `/api/v1/testmgmt/testruns/${runId}`);
    assert.equal(redactUrl(`/api/v1/${legacy}`), '/api/v1/[redacted]', 'no route: no id');
    assert.equal(
      redactUrl(`/api/v1/users/${legacy}/apikeys`, { email: legacy }),
      '/api/v1/users/[redacted]/apikeys',
      'not an id parameter',
    );
    assert.equal(
      redactUrl(`/api/v1/testmgmt/testruns/${runId}/${legacy.toUpperCase()}`, { testRunId: runId, '*': legacy }),
      `/api/v1/testmgmt/testruns/${runId}/[redacted]`,
    );
    assert.equal(redactUrl(`/api/v1/x/${legacy.replaceAll('-', '%2D')}`), '/api/v1/x/[redacted]');
  });

  test('in the query, keys are masked in any parameter and UUIDs in any but id parameters', () => {
    const masked = (url: string) => decodeURIComponent(redactUrl(url).replaceAll('+', ' '));
    assert.equal(masked(`/api/v1/projects?cursor=${legacy}&limit=5`), '/api/v1/projects?cursor=[redacted]&limit=5');
    assert.equal(masked(`/api/v1/projects?cursor=${key}`), '/api/v1/projects?cursor=[redacted]');
    assert.equal(masked(`/api/v1/projects?name=${legacy.toUpperCase()}`), '/api/v1/projects?name=[redacted]');
    assert.equal(masked(`/api/v1/projects?${key}=1&limit=2`), '/api/v1/projects?[redacted]=[redacted]&limit=2');
    assert.equal(masked(`/api/v1/testmgmt/testruns?jobId=${runId}&limit=2`), `/api/v1/testmgmt/testruns?jobId=${runId}&limit=2`);
    assert.equal(masked(`/api/v1/tests?ids=${runId},${legacy}`), `/api/v1/tests?ids=${runId},${legacy}`, 'a list of ids');
    assert.equal(masked(`/api/v1/testmgmt/testruns?jobId=x${legacy}`), '/api/v1/testmgmt/testruns?jobId=[redacted]', 'not an id');
    assert.equal(masked(`/api/v1/testmgmt/testruns?jobId=${key}`), '/api/v1/testmgmt/testruns?jobId=[redacted]');
    assert.equal(
      redactUrl('/api/v1/projects?limit=5&name=a%20b'),
      '/api/v1/projects?limit=5&name=a%20b',
      'nothing masked: the query as sent',
    );
  });

  test('a UUID in an id position that is a stored old-format key is masked, path and query alike', () => {
    const stored = new LegacyKeyDigests();
    stored.add(keyDigest(legacy, 'legacy'));
    const masked = (url: string, params?: unknown) => decodeURIComponent(redactUrl(url, params, stored.isKey));
    assert.equal(
      masked(`/api/v1/testmgmt/testruns/${legacy}/results`, { testRunId: legacy }),
      '/api/v1/testmgmt/testruns/[redacted]/results',
    );
    assert.equal(
      masked(`/api/v1/testmgmt/testruns/${legacy.toUpperCase()}`, { testRunId: legacy.toUpperCase() }),
      '/api/v1/testmgmt/testruns/[redacted]',
      'in capitals too',
    );
    assert.equal(masked(`/api/v1/testmgmt/testruns/${runId}`, { testRunId: runId }), `/api/v1/testmgmt/testruns/${runId}`, 'ids stay');
    assert.equal(masked(`/api/v1/testmgmt/testruns?jobId=${legacy}`), '/api/v1/testmgmt/testruns?jobId=[redacted]');
    assert.equal(masked(`/api/v1/tests?ids=${runId},${legacy}&limit=2`), '/api/v1/tests?ids=[redacted]&limit=2', 'a list holding one');
    assert.equal(masked(`/api/v1/tests?ids=${runId}`), `/api/v1/tests?ids=${runId}`);
  });

  test('the stored digests are replaced on a refresh, and an empty set hashes nothing', () => {
    const stored = new LegacyKeyDigests();
    assert.equal(stored.isKey(legacy), false);
    stored.replace([keyDigest(legacy, 'legacy')]);
    assert.equal(stored.isKey(legacy), true);
    assert.equal(stored.isKey(runId), false);
    stored.replace([]);
    assert.equal(stored.isKey(legacy), false, 'a refresh drops what the database no longer holds');
  });
});
