import type { FastifyBaseLogger } from 'fastify';
import { type TaskPeers, TaskRunner } from './background.ts';
import type { BlobStore } from './blob/blob-store.ts';
import { createBlobStore } from './blob/create-blob-store.ts';
import { type Change, Changes } from './changes.ts';
import { relayChanges } from './cluster/change-relay.ts';
import { authLimits, type Cluster, createCluster } from './cluster/cluster.ts';
import type { NotificationBus } from './cluster/notification-bus.ts';
import type { Config } from './config.ts';
import { type CrashPoint, crashTrigger } from './crash-points.ts';
import { createDatabase, type DatabaseHandle } from './db/database.ts';
import { legacyKeyDigests } from './db/repositories/api-keys.ts';
import { DatabaseBlobFence } from './db/repositories/blob-fence.ts';
import { taskStore } from './db/repositories/tasks.ts';
import type { DB, Dialect } from './db/types.ts';
import { FrozenAnswers } from './http/frozen-answers.ts';
import { HotBlobs } from './http/hot-blobs.ts';
import {
  type AnswerSwitch,
  DEVICE_ANSWERS_BYTES,
  IMAGE_USES_BYTES,
  type ImageUses,
  imageUsesBytes,
  KeptAnswers,
  KeptOwners,
} from './http/kept-answers.ts';
import { KeptTexts } from './http/kept-routes.ts';
import { ThumbnailRenderer } from './media/thumbnails.ts';
import { CREDENTIALS_CACHE_ENTRIES, CredentialsCache } from './security/credentials-cache.ts';
import type { FailureCounts } from './security/failure-limiter.ts';
import { LegacyKeyDigests } from './security/legacy-key-digests.ts';
import type { LoginAttempts } from './security/login-throttle.ts';
import type { Principal } from './security/principal.ts';

/**
 * What services are handed: the ports they use (database, blobs, clock, config, log), the
 * security state that authentication keeps, the background task runner and the thumbnail decoder, and
 * `changes`, where they say what a write changed. Not the answers the HTTP layer keeps.
 */
export interface ServiceContext {
  config: Config;
  /** Whether start-up recovery is done and the process is not shutting down. */
  readiness: () => 'starting' | 'ready' | 'stopping';
  db: DB;
  dialect: Dialect;
  database: DatabaseHandle;
  /** Where artifact and image bytes live; rows reference blobs by SHA-256. */
  blobs: BlobStore;
  /** Marks a durability step; kills the process there when a test asks to (see crash-points.ts). */
  crashPoint: (point: CrashPoint) => void;
  clock: () => Date;
  log: FastifyBaseLogger;
  /** What committed writes changed, for whoever keeps answers that may show it. */
  changes: Changes;
  /** Last-used timestamps already written, per key id: the write is throttled to once a minute. */
  lastUsedWrites: Map<string, number>;
  /** The other instances of the service: notifications between them (SCALE-3), the store their limits share (SCALE-4). */
  cluster: Cluster;
  /** Failed authentications per client address (SEC-2b), shared by the key check and the login. */
  authFailures: FailureCounts;
  /** Password guesses per account, and the clients each account signed in from (SEC-2d). */
  logins: LoginAttempts;
  /** Digests of the stored old-format keys, so the request log can mask one pasted into a URL (SEC-2a). */
  legacyKeys: LegacyKeyDigests;
  /** Principals of keys that authenticated, until access changes (PERF-1). */
  credentials: CredentialsCache<Principal>;
  /** The bounded thumbnail decoder (FILE-3). */
  thumbnails: ThumbnailRenderer;
  /** Background tasks through the database (SCALE-5): imports being written (IMP-4), retention, garbage collection. */
  background: TaskRunner;
}

/** Answers the HTTP layer keeps in memory, each until a change may have made it stale. */
export interface KeptHttpAnswers {
  /**
   * Whether any answer is kept (`ATTEST_ANSWER_CACHES`, PERF-8): read by every keeper here and by
   * `credentials`. Off from the start when configured so; the coherence test turns it off for a moment.
   */
  answerCaches: AnswerSwitch;
  /** Completed runs' results as bytes (PERF-2). */
  frozenResults: FrozenAnswers;
  /** Serialised device answers, each until a write to its device (PERF-5). */
  deviceAnswers: KeptTexts;
  /** Images with the projects known to use them, until a deletion (PERF-6). */
  imageUses: KeptAnswers<ImageUses>;
  /** The project that owns a run, test, job or artifact, or has a key or an id, until a deletion (PERF-7). */
  owners: KeptOwners;
  /** Bytes of often-read images (PERF-3). */
  hotBlobs: HotBlobs;
}

/** What routes and plugins are handed: the services' context and the answers kept for HTTP. */
export interface AppContext extends ServiceContext, KeptHttpAnswers {}

/** What a caller of `createContext` may supply instead of what it would make. */
export interface ContextParts {
  /** The server's logger; a silent one by default (commands). */
  log?: FastifyBaseLogger;
  /** Injected time (tests); the wall clock by default. */
  clock?: () => Date;
  readiness?: () => 'starting' | 'ready' | 'stopping';
  /** A database already open (a command that opened the instance itself); else one is opened. */
  database?: DatabaseHandle;
  blobs?: BlobStore;
}

/**
 * The one way to build the context, for the server, the commands and tests: opens the database
 * (unless given) and the blob store, makes the security state and the kept answers, wires the
 * kept answers to `changes`, and `changes` to the other instances (SCALE-3; the server's cluster
 * plugin starts listening to them). The old-format key digests are read once here (SEC-2a).
 */
export async function createContext(config: Config, parts: ContextParts = {}): Promise<AppContext> {
  const log = parts.log ?? silentLogger;
  const database =
    parts.database ??
    (await createDatabase(config, {
      onConnectionLost: (error) => log.warn({ err: error }, 'a PostgreSQL connection broke while idle; the pool opens a new one'),
      log,
    }));
  const crashPoint = crashTrigger(config.crashAt);
  const lostConnection = (error: Error) =>
    log.warn({ err: error }, 'a PostgreSQL connection of the task runner broke while idle; the pool opens a new one');
  const cluster = await createCluster(config, database, log);
  const limits = authLimits(cluster, config);
  const answerCaches: AnswerSwitch = { on: config.answerCaches === 'on' };
  const ctx: AppContext = {
    config,
    readiness: parts.readiness ?? (() => 'starting'),
    db: database.db,
    dialect: database.dialect,
    database,
    blobs: parts.blobs ?? (await openBlobStore(config, database, { crashPoint, log })),
    crashPoint,
    clock: parts.clock ?? (() => new Date()),
    log,
    changes: new Changes(),
    lastUsedWrites: new Map(),
    cluster,
    authFailures: limits.authFailures,
    logins: limits.logins,
    legacyKeys: new LegacyKeyDigests(),
    credentials: new CredentialsCache(CREDENTIALS_CACHE_ENTRIES, config.cacheTtlSeconds * 1000, answerCaches),
    thumbnails: new ThumbnailRenderer(config),
    background: new TaskRunner({
      // On PostgreSQL the runner claims and renews on connections of its own (lease-connections.ts).
      store: taskStore(
        database.db,
        config.databaseUrl
          ? (await import('./db/lease-connections.ts')).openLeaseConnections(config.databaseUrl, lostConnection)
          : undefined,
      ),
      log,
      leaseMs: config.taskLeaseSeconds * 1000,
      pollMs: config.taskPollMs,
      timeoutMs: config.taskTimeoutSeconds * 1000,
      peers: taskPeers(cluster.notifications, log),
    }),
    answerCaches,
    frozenResults: new FrozenAnswers(config.resultsCacheBytes, answerCaches),
    deviceAnswers: new KeptTexts(DEVICE_ANSWERS_BYTES, answerCaches),
    imageUses: new KeptAnswers(IMAGE_USES_BYTES, imageUsesBytes, answerCaches),
    owners: new KeptOwners(undefined, answerCaches),
    hotBlobs: new HotBlobs(config.imageCacheBytes, answerCaches),
  };
  ctx.changes.on((change) => forgetStale(ctx, change));
  relayChanges(ctx.changes, cluster.notifications, log);
  await refreshLegacyKeyDigests(ctx);
  return ctx;
}

/**
 * The configured blob store (createBlobStore). Instances that share a bucket and a PostgreSQL
 * database fence uploads against garbage collection through the database (SCALE-2); otherwise one
 * process owns the blobs and the store fences them itself.
 */
export function openBlobStore(
  config: Config,
  database: DatabaseHandle,
  parts: { crashPoint: (point: CrashPoint) => void; log?: FastifyBaseLogger },
): Promise<BlobStore> {
  const shared = config.blobUrl !== undefined && database.dialect === 'postgres';
  const fence = shared
    ? new DatabaseBlobFence(database.db, {
        holdMs: config.gcGraceMinutes * 60_000,
        // A deletion's removal (HEAD, DELETE) must end within half the mark's time: each request may
        // take its attempts, each up to the timeout plus the SDK's longest backoff (20 s).
        deletionMs: 4 * config.s3MaxAttempts * (config.s3TimeoutMs + 20_000),
        log: parts.log ?? silentLogger,
      })
    : undefined;
  return createBlobStore(config, { crashPoint: parts.crashPoint, fence });
}

/**
 * Reads the stored old-format keys' digests again (SEC-2a): at start, and every minute from the
 * upkeep timer, so keys another instance or the CLI stored join the set.
 */
export async function refreshLegacyKeyDigests(ctx: Pick<ServiceContext, 'db' | 'legacyKeys'>): Promise<void> {
  ctx.legacyKeys.replace(await legacyKeyDigests(ctx.db));
}

/** The topic on which instances announce new background tasks (SCALE-5). */
const TASKS_TOPIC = 'tasks';

/**
 * The other instances' task runners, through the bus: a new task wakes the idle ones at once (the
 * poll would find it within `ATTEST_TASK_POLL_MS`), and so does a reconnection of the bus, after
 * which announcements may have been missed.
 */
function taskPeers(bus: NotificationBus, log: FastifyBaseLogger): TaskPeers {
  return {
    announce: () => {
      bus.publish(TASKS_TOPIC, {}).catch((error: unknown) => log.warn({ err: error }, 'could not tell the other instances of a new task'));
    },
    listen: (wake) => {
      bus.subscribe(TASKS_TOPIC, wake);
      bus.onConnected(wake);
    },
  };
}

/** Forgets the kept answers a change, made here or on another instance, may have made stale. */
function forgetStale(kept: KeptHttpAnswers & Pick<ServiceContext, 'credentials'>, change: Change): void {
  switch (change.kind) {
    case 'runs-deleted':
      kept.frozenResults.invalidate();
      kept.imageUses.forgetAll();
      kept.owners.forgetAll();
      return;
    case 'test-deleted':
      kept.owners.forget('test', change.testId);
      return;
    case 'artifact-deleted':
      // Its images may have no visible use left; no run's results show artifacts, so those stay kept.
      kept.imageUses.forgetAll();
      kept.owners.forget('artifact', change.artifactId);
      return;
    case 'device-written':
      kept.deviceAnswers.forget(change.deviceId);
      return;
    case 'thumbnail-stored':
      kept.imageUses.forget(change.imageId);
      return;
    case 'access-changed':
      kept.credentials.forget(change);
      return;
    case 'changes-missed':
      // Images' bytes (hotBlobs) never change under their digest: they stay.
      kept.credentials.forget();
      kept.frozenResults.invalidate();
      kept.deviceAnswers.forgetAll();
      kept.imageUses.forgetAll();
      kept.owners.forgetAll();
      return;
  }
}

const silent = () => {};
/** The logger of a context nobody reads the log of (a command): every line dropped. */
const silentLogger = {
  level: 'silent',
  fatal: silent,
  error: silent,
  warn: silent,
  info: silent,
  debug: silent,
  trace: silent,
  silent,
  child: () => silentLogger,
} as unknown as FastifyBaseLogger;

export const nowIso = (ctx: { clock: () => Date }) => ctx.clock().toISOString();
