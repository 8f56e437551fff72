import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { AttestClient } from '../../src/client/index.ts';
import { buildApp, onListening } from '../../src/server/app.ts';
import { type Config, loadConfig } from '../../src/server/config.ts';
import type { Dialect } from '../../src/server/db/types.ts';
import { generateKey } from '../../src/server/security/api-key.ts';
import { createPostgresDatabase } from './dialects.ts';
import { NO_RETRY } from './http.ts';
import { waitFor } from './wait.ts';

export interface TestClock {
  now: Date;
  (): Date;
  advance(ms: number): void;
}

/** A clock the test moves by hand; starts at the real time so key expiry rules behave. */
export function testClock(start = new Date()): TestClock {
  const clock = (() => new Date(clock.now.getTime())) as TestClock;
  clock.now = start;
  clock.advance = (ms: number) => {
    clock.now = new Date(clock.now.getTime() + ms);
  };
  return clock;
}

export interface TestServer {
  dialect: Dialect;
  url: string;
  app: FastifyInstance;
  config: Config;
  clock: TestClock;
  dataDir: string;
  admin: { email: string; key: string; client: AttestClient };
  /** Every log line the server wrote, for leak checks. */
  logs: string[];
  client(apiKey?: string, user?: string): AttestClient;
  close(): Promise<void>;
}

/**
 * Builds the production app with `buildApp` on 127.0.0.1:0 against an isolated database (a temp
 * SQLite folder, or a fresh PostgreSQL database) and talks to it over real HTTP.
 */
export async function startTestServer(dialect: Dialect, env: Record<string, string> = {}): Promise<TestServer> {
  return startServer(dialect, env, undefined);
}

/**
 * A second instance of `first`'s service: its own app and data folder, on the same PostgreSQL
 * database (and whatever `env` shares, such as `ATTEST_BLOB_URL`), with the same admin. Closing it
 * leaves the database to `first`.
 */
export async function startPeerServer(first: TestServer, env: Record<string, string> = {}): Promise<TestServer> {
  if (first.dialect !== 'postgres' || !first.config.databaseUrl) throw new Error('instances share a PostgreSQL database only');
  return startServer('postgres', env, { databaseUrl: first.config.databaseUrl, adminKey: first.admin.key });
}

async function startServer(
  dialect: Dialect,
  env: Record<string, string>,
  shared: { databaseUrl: string; adminKey: string } | undefined,
): Promise<TestServer> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-test-'));
  const pgDb = dialect === 'postgres' && !shared ? await createPostgresDatabase() : undefined;
  const databaseUrl = shared?.databaseUrl ?? pgDb?.url;
  const adminKey = shared?.adminKey ?? generateKey('standard');
  const config = loadConfig({
    ATTEST_DATA_DIR: dataDir,
    ATTEST_ADMIN_EMAIL: 'admin@example.test',
    ATTEST_ADMIN_API_KEY: adminKey,
    ATTEST_LOG_LEVEL: 'info',
    ATTEST_AUTH_FAILURES_PER_MINUTE: '100000',
    ATTEST_RATE_LIMIT_PER_MINUTE: '0',
    ...(databaseUrl ? { ATTEST_DATABASE_URL: databaseUrl } : {}),
    ...env,
  });
  const logs: string[] = [];
  const logStream = new PassThrough();
  logStream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
  const clock = testClock();
  const app = await buildApp({ config, clock, logStream });
  await app.listen({ port: 0, host: '127.0.0.1' });
  await onListening(app, () => {});
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  const client = (apiKey?: string, user?: string) => new AttestClient({ baseUrl: url, apiKey, user, retry: NO_RETRY });
  return {
    dialect,
    url,
    app,
    config,
    clock,
    dataDir,
    logs,
    admin: { email: 'admin@example.test', key: adminKey, client: client(adminKey) },
    client,
    async close() {
      // A test may leave a response unread (a download it only checked the headers of); that
      // connection is never idle, so it is cut rather than waited for until keep-alive expires.
      const closing = app.close();
      app.server.closeAllConnections();
      await closing;
      await pgDb?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Waits until the database work that earlier requests left running off their critical path (the
 * key-use write, AUTH-8) is done: after the scheduled writes have started (one turn of the event
 * loop), the count of statements the app has run stays the same over two polls. Use it before
 * counting a request's statements or asserting that something was NOT written.
 */
export async function databaseSettled(server: TestServer): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  const stats = server.app.attest.database.stats;
  let last = stats.statements;
  let stable = 0;
  await waitFor(
    () => {
      stable = stats.statements === last ? stable + 1 : 0;
      last = stats.statements;
      return stable >= 2;
    },
    { intervalMs: 10, message: () => `the database went quiet (still running statements: ${stats.statements})` },
  );
}
