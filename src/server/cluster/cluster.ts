import type { Config } from '../config.ts';
import type { DatabaseHandle } from '../db/database.ts';
import { databaseName } from '../db/repositories/instances.ts';
import { StartupError } from '../errors.ts';
import { type FailureCounts, FailureLimiter } from '../security/failure-limiter.ts';
import { type LoginAttempts, LoginThrottle } from '../security/login-throttle.ts';
import type { SharedCounts } from '../security/shared-counts.ts';
import { SharedFailureLimiter, SharedLoginThrottle } from '../security/shared-limits.ts';
import { type NotificationBus, SingleInstanceBus } from './notification-bus.ts';
import type { BusLog } from './pg-notification-bus.ts';

/**
 * What an instance shares with the other instances of its service (SCALE-3, SCALE-4): the bus
 * they tell each other of changes on, and the store the limits count in. On SQLite there are no
 * others: a bus that reaches nobody, and no shared store (the limits count in memory).
 */
export interface Cluster {
  notifications: NotificationBus;
  /** Where the limits count: PostgreSQL, or Redis when `ATTEST_REDIS_URL` is set; undefined on SQLite. */
  counts: SharedCounts | undefined;
  /** Which store `counts` is, for the log and the tests. */
  countsIn: 'memory' | 'postgres' | 'redis';
  /** Reports a failure of the shared store: logged at most once a minute (the limits count locally meanwhile). */
  onStoreError: (error: unknown) => void;
  /** Connects what the server needs (the listening connection, Redis); a command never calls it. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** How long the log keeps quiet after reporting that the shared store failed. */
const STORE_ERROR_QUIET_MS = 60_000;

/** Makes the instance's part of the cluster; connects nothing until `start`. */
export async function createCluster(config: Config, database: DatabaseHandle, log: BusLog): Promise<Cluster> {
  let lastReport = Number.NEGATIVE_INFINITY;
  const onStoreError = (error: unknown) => {
    if (Date.now() - lastReport < STORE_ERROR_QUIET_MS) return;
    lastReport = Date.now();
    log.warn({ err: error }, 'the shared limits store failed: each instance counts on its own until it answers again');
  };
  if (database.dialect !== 'postgres' || config.databaseUrl === undefined) {
    if (config.redisUrl !== undefined) log.warn({}, 'ATTEST_REDIS_URL is not used with SQLite: one process serves, and counts in memory');
    return {
      notifications: new SingleInstanceBus(),
      counts: undefined,
      countsIn: 'memory',
      onStoreError,
      async start() {},
      async close() {},
    };
  }
  // PostgreSQL's and Redis's clients are loaded only where they are used: an instance on SQLite
  // carries neither (Redis's took about 9 MB of F6's idle RSS, PostgreSQL's about 4 MB).
  const { PgNotificationBus } = await import('./pg-notification-bus.ts');
  const notifications = new PgNotificationBus(config.databaseUrl, database.db, log);
  if (config.redisUrl !== undefined) {
    const redisUrl = config.redisUrl;
    const { RedisSharedCounts } = await import('./redis-shared-counts.ts');
    const counts = new RedisSharedCounts(redisUrl, await redisPrefix(database), onStoreError);
    return {
      notifications,
      counts,
      countsIn: 'redis',
      onStoreError,
      async start() {
        await counts.start().catch((error: unknown) => {
          throw new StartupError(`Cannot reach Redis at ${redacted(redisUrl)} (ATTEST_REDIS_URL): ${(error as Error).message}`);
        });
        await notifications.start();
      },
      async close() {
        await notifications.close();
        await counts.close();
      },
    };
  }
  const { PgSharedCounts } = await import('./pg-shared-counts.ts');
  const counts = new PgSharedCounts(config.databaseUrl, onStoreError);
  return {
    notifications,
    counts,
    countsIn: 'postgres',
    onStoreError,
    async start() {
      await notifications.start();
      counts.start();
    },
    async close() {
      await notifications.close();
      await counts.close();
    },
  };
}

/**
 * The failed-authentication limiter (SEC-2b) and the login throttle (SEC-2d): in the shared store
 * when there is one, else in this process.
 */
export function authLimits(cluster: Cluster, config: Config): { authFailures: FailureCounts; logins: LoginAttempts } {
  const { counts, onStoreError } = cluster;
  return counts === undefined
    ? { authFailures: new FailureLimiter(config.authFailuresPerMinute), logins: new LoginThrottle() }
    : {
        authFailures: new SharedFailureLimiter(counts, config.authFailuresPerMinute, onStoreError),
        logins: new SharedLoginThrottle(counts, onStoreError),
      };
}

/**
 * The key prefix of this service in Redis: its database's name, which every instance of the
 * service shares and which another service on the same Redis (or another test's database) does not.
 */
async function redisPrefix(database: DatabaseHandle): Promise<string> {
  return `attest:${await databaseName(database.db)}:`;
}

/** The URL without its password, for a message. */
function redacted(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}
