import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import Fastify from 'fastify';
import { lazyChildren, redactUrl } from '../../src/server/http/request-logger.ts';

// The per-request logger (AUTH-9): pino's child is made only for a line at an enabled level, and
// every line names the request, then its key and user, as a child made at once would.

function pinoAt(level: string, lazy = true) {
  const lines: Record<string, unknown>[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
  });
  let children = 0;
  const app = Fastify({ logger: { level, stream, onChild: () => children++ } });
  if (lazy) lazyChildren(app.log);
  return { log: app.log, lines, children: () => children };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('lines below the level make no child; the first line written carries every binding given so far', async () => {
  const pino = pinoAt('warn');
  const logger = pino.log.child({ reqId: 'r-1' }, {}) as ReturnType<typeof pino.log.child> & {
    setBindings(b: Record<string, unknown>): void;
    isLevelEnabled(level: string): boolean;
  };
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
  const eager = pinoAt('info', false);
  const a = lazy.log.child({ reqId: 'r-2' }, {}) as unknown as { setBindings(b: object): void; info(o: object, m: string): void };
  const b = eager.log.child({ reqId: 'r-2' }) as unknown as { setBindings(b: object): void; info(o: object, m: string): void };
  for (const logger of [a, b]) {
    logger.setBindings({ keyId: 'k-2' });
    logger.info({ responseTime: 1.5 }, 'request completed');
  }
  await settle();
  const strip = (line: Record<string, unknown> | undefined) => ({ ...line, time: 0, pid: 0, hostname: '' });
  assert.deepEqual(strip(lazy.lines[0]), strip(eager.lines[0]));
});

test('a route with its own level or serializers gets pino child at once', () => {
  const pino = pinoAt('warn');
  pino.log.child({ reqId: 'r-3' }, { level: 'debug' });
  assert.equal(pino.children(), 1);
});

test('credential-looking query values are masked in logged URLs', () => {
  assert.equal(redactUrl('/api/v1/me?api_key=atk_x&limit=5'), '/api/v1/me?api_key=%5Bredacted%5D&limit=5');
  assert.equal(redactUrl('/api/v1/health'), '/api/v1/health');
});
