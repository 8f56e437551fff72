import os from 'node:os';
import path from 'node:path';
import { type Env, MiB, Reader } from './config/reader.ts';
import { readSsoConfig, type SsoConfig } from './config/sso.ts';
import { CRASH_POINTS, type CrashSpec, parseCrashSpec } from './crash-points.ts';

export type { SsoConfig } from './config/sso.ts';

/**
 * Attest's configuration. Every field comes from one environment variable (see `.env.example`
 * and docs/configuration.md); `loadConfig` validates all of them and reports every problem at once.
 */
export interface Config {
  /** Listening port (`PORT`, default 8080; 0 picks a free port). */
  port: number;
  /** Listening address (`HOST`, default `0.0.0.0`). */
  host: string;
  /** Folder of the embedded database, blobs and lock file (`ATTEST_DATA_DIR`, default `./data`). */
  dataDir: string;
  /** `postgres://…` to use PostgreSQL; undefined means embedded SQLite in `dataDir`. */
  databaseUrl: string | undefined;
  /** `s3://bucket/prefix` for object storage; undefined means files in `dataDir`. */
  blobUrl: string | undefined;
  /**
   * The S3-compatible server (`ATTEST_S3_ENDPOINT`, e.g. `http://127.0.0.1:9000`; AWS when unset),
   * its region (`ATTEST_S3_REGION`, default `us-east-1`) and whether buckets are addressed by path
   * (`ATTEST_S3_FORCE_PATH_STYLE`, default true when an endpoint is set). Credentials come from the
   * AWS SDK's default chain (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, profiles, instance roles).
   */
  s3Endpoint: string | undefined;
  s3Region: string;
  s3ForcePathStyle: boolean;
  /** Longest wait for one S3 request (`ATTEST_S3_TIMEOUT_MS`), and attempts per request with backoff on 5xx and throttling (`ATTEST_S3_MAX_ATTEMPTS`). */
  s3TimeoutMs: number;
  s3MaxAttempts: number;
  /**
   * PostgreSQL's request pool (DUR-15): the longest wait for a connection (`ATTEST_DB_CONNECT_TIMEOUT_MS`)
   * and for one statement (`ATTEST_DB_STATEMENT_TIMEOUT_MS`, 0: none; the maintenance commands take none).
   */
  databaseConnectTimeoutMs: number;
  databaseStatementTimeoutMs: number;
  /** Longest wait for each store's answer in `GET /health/ready` (`ATTEST_READINESS_TIMEOUT_MS`). */
  readinessTimeoutMs: number;
  /**
   * `redis://…` (`ATTEST_REDIS_URL`): with PostgreSQL, the rate-limit, failed-authentication and
   * login-throttle counts are kept there, shared by every instance (keys prefixed with the
   * database's name); undefined: in PostgreSQL. On SQLite, one process serves and counts in memory,
   * and this is not used.
   */
  redisUrl: string | undefined;
  /**
   * Longest time an instance keeps an access decision (a key's principal) before reading it again
   * (`ATTEST_CACHE_TTL_SECONDS`, default 10): a safety net under the notifications that evict it
   * at once on every instance.
   */
  cacheTtlSeconds: number;
  /**
   * Whether answers are kept in memory at all (`ATTEST_ANSWER_CACHES`, `on` by default): `off`
   * turns every one off at once (completed runs' results, device answers, image uses, owners, hot
   * images, key principals), so every request reads the database; for diagnosis and the
   * coherence test (PERF-8).
   */
  answerCaches: 'on' | 'off';
  /**
   * Background tasks (imports, retention, garbage collection): how long a claimed task's lease
   * lasts before another instance may take it over (`ATTEST_TASK_LEASE_SECONDS`, default 30; the
   * holder renews it every third of that), and how often an idle instance looks for work
   * (`ATTEST_TASK_POLL_MS`, default 1000; on PostgreSQL new work also wakes it at once).
   */
  taskLeaseSeconds: number;
  taskPollMs: number;
  /** The longest one background task may run before it is stopped and fails (`ATTEST_TASK_TIMEOUT_SECONDS`, 900; SCALE-9). */
  taskTimeoutSeconds: number;
  /** Base URL absolute links are built from; undefined means "from the request". */
  publicUrl: string | undefined;
  /** First-start admin (only used when the database holds no user). */
  adminEmail: string | undefined;
  adminApiKey: string | undefined;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Proxy addresses whose `X-Forwarded-*` headers are trusted (comma-separated CIDRs); empty trusts none. */
  trustProxy: string[];
  /** Whether old-format (UUID) keys are accepted at all. */
  legacyKeys: boolean;
  /** When old-format keys stop working, announced in a `Sunset` header (RFC 8594); undefined: not planned. */
  legacyKeysSunset: Date | undefined;
  /** Lifetime of a new API key when the request names none, and the longest allowed. */
  keyDefaultDays: number;
  keyMaxDays: number;
  /** Whether an admin may create keys that never expire. */
  allowNonExpiringKeys: boolean;
  /** Lifetime of a web-interface session key. */
  sessionMinutes: number;
  /** OpenID Connect single sign-on for the web interface (`ATTEST_OIDC_*`, docs/sso.md); undefined: none. */
  sso: SsoConfig | undefined;
  /** Whether `POST /auth/login` accepts e-mail and password (`ATTEST_PASSWORD_LOGIN`, default true; off needs single sign-on). */
  passwordLogin: boolean;
  /** Most active keys one user may hold. */
  maxKeysPerUser: number;
  /** JSON body limit in bytes, and the larger one of the bulk results route. */
  bodyLimit: number;
  bulkBodyLimit: number;
  /** Page size used when a list request names none, and the largest accepted. */
  pageSizeDefault: number;
  pageSizeMax: number;
  /** Most ids in one batch lookup (`?ids=`). */
  maxIdsPerBatch: number;
  /** Requests per minute per API key (0 disables), and failed authentications per minute per client address. */
  rateLimitPerMinute: number;
  authFailuresPerMinute: number;
  /** Largest artifact file and largest image file, in bytes. */
  maxArtifactBytes: number;
  maxImageBytes: number;
  /** Largest image side and pixel count accepted before any decode. */
  maxImageSide: number;
  maxImagePixels: number;
  maxAnimationPixels: number;
  thumbnailConcurrency: number;
  thumbnailQueue: number;
  /** Bytes of completed runs' results kept ready to send, encodings included (`ATTEST_RESULTS_CACHE_MB`; 0 keeps none). */
  resultsCacheBytes: number;
  /** Bytes of often-read images kept in memory (`ATTEST_IMAGE_CACHE_MB`; 0 keeps none). */
  imageCacheBytes: number;
  /**
   * Who sends blob bytes (`ATTEST_BLOB_OFFLOAD`): Attest itself (`none`), or a front proxy told by
   * an `X-Accel-Redirect` (nginx) or `X-Sendfile` header, after Attest checked access.
   */
  blobOffload: 'none' | 'x-accel-redirect' | 'x-sendfile';
  /** The nginx `internal` location blobs are redirected to (`ATTEST_BLOB_OFFLOAD_PREFIX`). */
  blobOffloadPrefix: string;
  /** Most artifacts one run may hold; a run's artifact list then always fits one answer. */
  maxArtifactsPerRun: number;
  /** Largest import upload in bytes, what an imported archive may expand to, and its most entries (IMP-5). */
  maxImportBytes: number;
  maxImportExpandedBytes: number;
  maxImportEntries: number;
  /** The instance's retention default (RET-2): days, days for failed runs, last runs per test (0: no such rule); sweep period (0: no sweep). */
  retentionDays: number;
  retentionFailedDays: number;
  retentionLastRuns: number;
  retentionIntervalMinutes: number;
  /** SQLite `synchronous` level; FULL survives power loss, NORMAL only process crashes. */
  sqliteSynchronous: 'FULL' | 'NORMAL';
  /** SQLite's page cache in MiB (`ATTEST_SQLITE_CACHE_MB`): how much of the database's B-trees stays in memory. */
  sqliteCacheMb: number;
  /** Start even when the data folder is on a network filesystem (unsafe for SQLite WAL). */
  allowNetworkFs: boolean;
  /** Start even when PostgreSQL runs with fsync/synchronous_commit/full_page_writes off. */
  allowUnsafePostgres: boolean;
  /**
   * Longest time a client may take to send one whole request, headers and body (`ATTEST_REQUEST_TIMEOUT_MS`,
   * default 300000). Slower requests are answered 408 and their connection closed, so a client
   * trickling bytes cannot hold a connection forever. It bounds uploads too: raise it when clients
   * send the largest artifacts over slow links.
   */
  requestTimeoutMs: number;
  /**
   * Lingering close, as nginx does it (its `lingering_time` and `lingering_timeout`): the rest of
   * the body of a request refused before it was read to the end is read and discarded (behind the
   * answer on a keep-alive connection, before it on one that closes), for at most `lingerMs`
   * (`ATTEST_LINGER_MS`, default 30000; 0 closes at once) and `lingerMaxBytes` bytes
   * (`ATTEST_LINGER_MAX_BYTES`, default 64 MiB), and for no longer than `lingerIdleMs` without a
   * byte (`ATTEST_LINGER_IDLE_MS`, default 5000). Closing on unread bytes makes the kernel send a
   * reset, which destroys the answer before a client still sending has read it (LOAD-4b).
   */
  lingerMs: number;
  lingerIdleMs: number;
  lingerMaxBytes: number;
  /** How long graceful shutdown waits for in-flight requests. */
  shutdownTimeoutMs: number;
  /** Origins allowed by CORS; empty disables CORS. */
  corsOrigins: string[];
  /**
   * How long a launch (a job created with no tests) may stay idle before it counts as ended
   * (`ATTEST_LAUNCH_IDLE_MINUTES`, default 60): no run of it open, and none created or finished for
   * that long. Derived when the job is read, against the clock; nothing is written. A run executed
   * by hand with nothing recorded on it for as long is ended `aborted` (TCM-9).
   */
  launchIdleMinutes: number;
  /**
   * Whether the integrations (code hosts and issue trackers, docs/integrations.md) may call
   * loopback, link-local and private addresses (`ATTEST_INTEGRATIONS_ALLOW_PRIVATE`, default false):
   * a GitHub Enterprise, GitLab or Jira inside the network needs it; a manager's URL may otherwise
   * not reach the instance's own network.
   */
  integrationsAllowPrivate: boolean;
  /**
   * Minutes between the integrations' sweeps (`ATTEST_INTEGRATIONS_SWEEP_MINUTES`, default 5, 0
   * disables): jobs whose final state was not sent to their code host are synced again (launches
   * that ended by idling, syncs lost with an instance); issue links are refreshed every third sweep.
   */
  integrationsSweepMinutes: number;
  /** Minutes between blob garbage collections (0 disables), and how old an unreferenced blob must be to go. */
  gcIntervalMinutes: number;
  gcGraceMinutes: number;
  /**
   * Outgoing webhooks (docs/webhooks.md): whether they may reach loopback, link-local and private
   * addresses (`ATTEST_WEBHOOK_ALLOW_PRIVATE`, default false: such a URL is refused when a webhook
   * is saved and again, after resolving its host, at every delivery), and how long one delivery
   * attempt may take, connecting included (`ATTEST_WEBHOOK_TIMEOUT_MS`, default 10000).
   */
  webhookAllowPrivate: boolean;
  webhookTimeoutMs: number;
  /**
   * How long the signed screenshot links of webhook and chat messages open without a session
   * (`ATTEST_IMAGE_LINK_TTL_SECONDS`, default 86400: a day; HOOK-14).
   */
  imageLinkTtlSeconds: number;
  /**
   * Test hook (`ATTEST_CRASH_AT=<point>:<n>`): SIGKILL the process the n-th time it reaches a named
   * crash point. Accepted only with `NODE_ENV=test`; anywhere else the server refuses to start.
   */
  crashAt: CrashSpec | undefined;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Where the server listens and what it runs on: its data, database, blobs, cache and task runner. */
function serviceSettings(r: Reader) {
  return {
    port: r.int('PORT', 8080, 0, 65535),
    host: r.string('HOST') ?? '0.0.0.0',
    dataDir: path.resolve(r.string('ATTEST_DATA_DIR') ?? './data'),
    databaseUrl: r.url('ATTEST_DATABASE_URL', ['postgres:', 'postgresql:']),
    blobUrl: r.url('ATTEST_BLOB_URL', ['s3:']),
    s3Endpoint: r.url('ATTEST_S3_ENDPOINT', ['http:', 'https:']),
    s3Region: r.string('ATTEST_S3_REGION') ?? 'us-east-1',
    s3ForcePathStyle: r.bool('ATTEST_S3_FORCE_PATH_STYLE', r.string('ATTEST_S3_ENDPOINT') !== undefined),
    s3TimeoutMs: r.int('ATTEST_S3_TIMEOUT_MS', 15_000, 100, 600_000),
    s3MaxAttempts: r.int('ATTEST_S3_MAX_ATTEMPTS', 3, 1, 10),
    databaseConnectTimeoutMs: r.int('ATTEST_DB_CONNECT_TIMEOUT_MS', 5000, 100, 600_000),
    databaseStatementTimeoutMs: r.int('ATTEST_DB_STATEMENT_TIMEOUT_MS', 30_000, 0, 86_400_000),
    readinessTimeoutMs: r.int('ATTEST_READINESS_TIMEOUT_MS', 1500, 100, 60_000),
    redisUrl: r.url('ATTEST_REDIS_URL', ['redis:', 'rediss:']),
    cacheTtlSeconds: r.int('ATTEST_CACHE_TTL_SECONDS', 10, 1, 3600),
    answerCaches: r.oneOf('ATTEST_ANSWER_CACHES', 'on', ['on', 'off'] as const),
    taskLeaseSeconds: r.int('ATTEST_TASK_LEASE_SECONDS', 30, 3, 3600),
    taskPollMs: r.int('ATTEST_TASK_POLL_MS', 1000, 10, 60_000),
    taskTimeoutSeconds: r.int('ATTEST_TASK_TIMEOUT_SECONDS', 900, 1, 86_400),
  };
}

/** The public address and the admin key (both e-mail and key, or neither). */
function adminSettings(r: Reader) {
  const publicUrl = r.url('ATTEST_PUBLIC_URL', ['http:', 'https:']);
  const adminEmail = r.string('ATTEST_ADMIN_EMAIL');
  const adminApiKey = r.string('ATTEST_ADMIN_API_KEY');
  if ((adminEmail === undefined) !== (adminApiKey === undefined)) {
    r.problems.push('ATTEST_ADMIN_EMAIL and ATTEST_ADMIN_API_KEY must be set together');
  }
  if (adminEmail !== undefined && !/^[^\s@]+@[^\s@]+$/.test(adminEmail)) {
    r.problems.push('ATTEST_ADMIN_EMAIL must be an e-mail address');
  }
  return { publicUrl, adminEmail, adminApiKey };
}

/** Who may get in, and how: the admin key, keys, sessions and single sign-on. */
function accessSettings(r: Reader, { publicUrl, adminEmail, adminApiKey }: ReturnType<typeof adminSettings>) {
  return {
    publicUrl: publicUrl?.replace(/\/+$/, ''),
    adminEmail,
    adminApiKey,
    logLevel: r.oneOf('ATTEST_LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    trustProxy: r.list('ATTEST_TRUST_PROXY'),
    legacyKeys: r.bool('ATTEST_LEGACY_KEYS', true),
    legacyKeysSunset: r.date('ATTEST_LEGACY_KEYS_SUNSET'),
    keyDefaultDays: r.int('ATTEST_KEY_DEFAULT_DAYS', 90, 1, 3650),
    keyMaxDays: r.int('ATTEST_KEY_MAX_DAYS', 365, 1, 3650),
    allowNonExpiringKeys: r.bool('ATTEST_ALLOW_NON_EXPIRING_KEYS', false),
    sessionMinutes: r.int('ATTEST_SESSION_MINUTES', 720, 1, 7 * 24 * 60),
    sso: readSsoConfig(r),
    passwordLogin: r.bool('ATTEST_PASSWORD_LOGIN', true),
    maxKeysPerUser: r.int('ATTEST_MAX_KEYS_PER_USER', 50, 1, 10_000),
  };
}

/** The bounds on what a request may send and the server keeps in memory. */
function limitSettings(r: Reader) {
  return {
    bodyLimit: r.int('ATTEST_BODY_LIMIT', 1 * MiB, 1024, 1024 * MiB),
    bulkBodyLimit: r.int('ATTEST_BULK_BODY_LIMIT', 16 * MiB, 1024, 1024 * MiB),
    pageSizeDefault: r.int('ATTEST_PAGE_SIZE_DEFAULT', 50, 1, 10_000),
    pageSizeMax: r.int('ATTEST_PAGE_SIZE_MAX', 200, 1, 10_000),
    maxIdsPerBatch: r.int('ATTEST_MAX_IDS_PER_BATCH', 100, 1, 10_000),
    rateLimitPerMinute: r.int('ATTEST_RATE_LIMIT_PER_MINUTE', 60_000, 0, 10_000_000),
    authFailuresPerMinute: r.int('ATTEST_AUTH_FAILURES_PER_MINUTE', 30, 1, 10_000_000),
    maxArtifactBytes: r.int('ATTEST_MAX_ARTIFACT_BYTES', 1024 * MiB, 1, 1024 * 1024 * MiB),
    maxImageBytes: r.int('ATTEST_MAX_IMAGE_BYTES', 25 * MiB, 1, 1024 * MiB),
    maxImageSide: r.int('ATTEST_MAX_IMAGE_SIDE', 20_000, 1, 1_000_000),
    maxImagePixels: r.int('ATTEST_MAX_IMAGE_PIXELS', 50_000_000, 1, 1_000_000_000),
    maxAnimationPixels: r.int('ATTEST_MAX_ANIMATION_PIXELS', 500_000_000, 1, 100_000_000_000),
    thumbnailConcurrency: r.int('ATTEST_THUMBNAIL_CONCURRENCY', Math.min(4, os.availableParallelism()), 1, 64),
    thumbnailQueue: r.int('ATTEST_THUMBNAIL_QUEUE', 16, 0, 10_000),
    resultsCacheBytes: r.int('ATTEST_RESULTS_CACHE_MB', 64, 0, 1_000_000) * MiB,
    imageCacheBytes: r.int('ATTEST_IMAGE_CACHE_MB', 64, 0, 1_000_000) * MiB,
    blobOffload: r.oneOf('ATTEST_BLOB_OFFLOAD', 'none', ['none', 'x-accel-redirect', 'x-sendfile'] as const),
    blobOffloadPrefix: r.string('ATTEST_BLOB_OFFLOAD_PREFIX') ?? '/internal-blobs/',
    maxArtifactsPerRun: r.int('ATTEST_MAX_ARTIFACTS_PER_RUN', 10_000, 1, 10_000),
    maxImportBytes: r.int('ATTEST_MAX_IMPORT_BYTES', 256 * MiB, 1024, 4096 * MiB),
    maxImportExpandedBytes: r.int('ATTEST_MAX_IMPORT_EXPANDED_BYTES', 1024 * MiB, 1024, 16_384 * MiB),
    maxImportEntries: r.int('ATTEST_MAX_IMPORT_ENTRIES', 20_000, 1, 1_000_000),
  };
}

/** Retention, storage safety, timeouts and the background sweeps. */
function operationSettings(r: Reader) {
  return {
    retentionDays: r.int('ATTEST_RETENTION_DAYS', 0, 0, 36_500),
    retentionFailedDays: r.int('ATTEST_RETENTION_FAILED_DAYS', 0, 0, 36_500),
    retentionLastRuns: r.int('ATTEST_RETENTION_LAST_RUNS', 0, 0, 100_000),
    retentionIntervalMinutes: r.int('ATTEST_RETENTION_INTERVAL_MINUTES', 60, 0, 7 * 24 * 60),
    sqliteSynchronous: r.oneOf('ATTEST_SQLITE_SYNCHRONOUS', 'FULL', ['FULL', 'NORMAL'] as const),
    sqliteCacheMb: r.int('ATTEST_SQLITE_CACHE_MB', 64, 1, 65_536),
    allowNetworkFs: r.bool('ATTEST_ALLOW_NETWORK_FS', false),
    allowUnsafePostgres: r.bool('ATTEST_ALLOW_UNSAFE_POSTGRES', false),
    requestTimeoutMs: r.int('ATTEST_REQUEST_TIMEOUT_MS', 300_000, 100, 86_400_000),
    lingerMs: r.int('ATTEST_LINGER_MS', 30_000, 0, 3_600_000),
    lingerIdleMs: r.int('ATTEST_LINGER_IDLE_MS', 5_000, 100, 3_600_000),
    lingerMaxBytes: r.int('ATTEST_LINGER_MAX_BYTES', 64 * MiB, 0, 1024 * 1024 * MiB),
    shutdownTimeoutMs: r.int('ATTEST_SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    corsOrigins: r.list('ATTEST_CORS_ORIGINS'),
    launchIdleMinutes: r.int('ATTEST_LAUNCH_IDLE_MINUTES', 60, 1, 30 * 24 * 60),
    integrationsAllowPrivate: r.bool('ATTEST_INTEGRATIONS_ALLOW_PRIVATE', false),
    integrationsSweepMinutes: r.int('ATTEST_INTEGRATIONS_SWEEP_MINUTES', 5, 0, 24 * 60),
    gcIntervalMinutes: r.int('ATTEST_GC_INTERVAL_MINUTES', 60, 0, 7 * 24 * 60),
    gcGraceMinutes: r.int('ATTEST_GC_GRACE_MINUTES', 60, 1, 30 * 24 * 60),
    webhookAllowPrivate: r.bool('ATTEST_WEBHOOK_ALLOW_PRIVATE', false),
    webhookTimeoutMs: r.int('ATTEST_WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
    imageLinkTtlSeconds: r.int('ATTEST_IMAGE_LINK_TTL_SECONDS', 86_400, 60, 30 * 86_400),
  };
}

/** The test hook and the settings that contradict one another. */
function checkSettings(r: Reader, env: Env, config: Config): void {
  const crashAt = r.string('ATTEST_CRASH_AT');
  if (crashAt !== undefined) {
    // A production server must never kill itself on a leftover variable: the hook needs both.
    if (env.NODE_ENV !== 'test') {
      r.problems.push('ATTEST_CRASH_AT is a test hook and is only accepted with NODE_ENV=test');
    } else {
      config.crashAt = parseCrashSpec(crashAt);
      if (!config.crashAt) {
        r.problems.push(`ATTEST_CRASH_AT must be <point>:<n> with a point among ${CRASH_POINTS.join(', ')} (got "${crashAt}")`);
      }
    }
  }
  if (config.keyDefaultDays > config.keyMaxDays) {
    r.problems.push('ATTEST_KEY_DEFAULT_DAYS must not exceed ATTEST_KEY_MAX_DAYS');
  }
  if (!config.passwordLogin && config.sso === undefined) {
    r.problems.push('ATTEST_PASSWORD_LOGIN=false leaves the web interface without a way in: configure single sign-on (ATTEST_OIDC_ISSUER)');
  }
  if (config.pageSizeDefault > config.pageSizeMax) {
    r.problems.push('ATTEST_PAGE_SIZE_DEFAULT must not exceed ATTEST_PAGE_SIZE_MAX');
  }
  if (config.blobUrl !== undefined && !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(new URL(config.blobUrl).hostname)) {
    r.problems.push('ATTEST_BLOB_URL must name a bucket: s3://bucket/prefix (3 to 63 lower-case letters, digits, dots and hyphens)');
  }
  if (config.blobUrl !== undefined && config.blobOffload !== 'none') {
    r.problems.push('ATTEST_BLOB_OFFLOAD sends files from the data folder; it cannot be used with ATTEST_BLOB_URL (blobs in a bucket)');
  }
  if (config.corsOrigins.includes('*')) {
    r.problems.push('ATTEST_CORS_ORIGINS must list origins explicitly ("*" is not allowed)');
  }
}

/** Reads and validates the whole configuration; throws a ConfigError listing every problem. */
export function loadConfig(env: Env = process.env): Config {
  const r = new Reader(env);
  // Read in this order, so the problems are listed in it.
  const admin = adminSettings(r);
  const config: Config = {
    ...serviceSettings(r),
    ...accessSettings(r, admin),
    ...limitSettings(r),
    ...operationSettings(r),
    crashAt: undefined,
  };
  checkSettings(r, env, config);
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return config;
}
