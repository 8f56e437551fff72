import fs from 'node:fs';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { BackgroundTasks } from '../server/background.ts';
import { createBlobStore } from '../server/blob/create-blob-store.ts';
import { type Config, loadConfig } from '../server/config.ts';
import type { AppContext } from '../server/context.ts';
import { createDatabase, DataFolderBusyError } from '../server/db/database.ts';
import { FrozenAnswers } from '../server/http/frozen-answers.ts';
import { HotBlobs } from '../server/http/hot-blobs.ts';
import { KeptAnswers, KeptOwners, textBytes } from '../server/http/kept-answers.ts';
import { ThumbnailRenderer } from '../server/media/thumbnails.ts';
import { CREDENTIALS_CACHE_ENTRIES, CredentialsCache } from '../server/security/credentials-cache.ts';
import { FailureLimiter } from '../server/security/failure-limiter.ts';
import { LegacyKeyDigests } from '../server/security/legacy-key-digests.ts';
import { LoginThrottle } from '../server/security/login-throttle.ts';
import { CliError } from './output.ts';

/**
 * Refuses an embedded instance whose data folder does not exist or holds no database: opening it
 * would create an empty one and report on that. PostgreSQL instances keep their records elsewhere.
 */
export function requireDatabase(config: Config): void {
  if (config.databaseUrl) return;
  const dir = config.dataDir;
  if (!fs.existsSync(dir)) {
    throw new CliError(`the data folder ${dir} does not exist; set ATTEST_DATA_DIR to the folder the server uses`);
  }
  if (!fs.existsSync(path.join(dir, 'attest.db'))) {
    throw new CliError(`${dir} holds no Attest database (no attest.db); set ATTEST_DATA_DIR to the folder the server uses`);
  }
}

/**
 * Opens the configured instance exclusively, as the server does. `whileRunning` says what to do
 * instead when a server holds the data folder (for example the online command that does the same).
 */
export async function openInstance(whileRunning: string) {
  const config = loadConfig();
  requireDatabase(config);
  const database = await createDatabase(config).catch((error: unknown) => {
    if (error instanceof DataFolderBusyError) {
      throw new CliError(`${error.message} A running server holds it: stop the server first, ${whileRunning}.`);
    }
    throw error;
  });
  const blobs = createBlobStore(config, () => {});
  return { config, database, blobs };
}

const silent = () => {};
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
};

/** The services' context for a command that reuses them outside the server (no requests, no logs). */
export function commandContext(instance: Awaited<ReturnType<typeof openInstance>>): AppContext {
  const { config, database, blobs } = instance;
  return {
    config,
    readiness: () => 'starting',
    db: database.db,
    dialect: database.dialect,
    database,
    blobs,
    crashPoint: () => {},
    clock: () => new Date(),
    log: silentLogger as unknown as FastifyBaseLogger,
    lastUsedWrites: new Map(),
    legacyKeys: new LegacyKeyDigests(),
    authFailures: new FailureLimiter(config.authFailuresPerMinute),
    logins: new LoginThrottle(),
    credentials: new CredentialsCache(CREDENTIALS_CACHE_ENTRIES),
    frozenResults: new FrozenAnswers(config.resultsCacheBytes),
    deviceAnswers: new KeptAnswers(0, textBytes),
    imageUses: new KeptAnswers(0, () => 0),
    owners: new KeptOwners(0),
    hotBlobs: new HotBlobs(config.imageCacheBytes),
    thumbnails: new ThumbnailRenderer(config),
    background: new BackgroundTasks(() => undefined),
  };
}
