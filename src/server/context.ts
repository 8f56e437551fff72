import type { FastifyBaseLogger } from 'fastify';
import type { Role } from '../api/endpoint.ts';
import type { BackgroundTasks } from './background.ts';
import type { BlobStore } from './blob/blob-store.ts';
import type { Config } from './config.ts';
import type { CrashPoint } from './crash-points.ts';
import type { DatabaseHandle } from './db/database.ts';
import type { DB, Dialect, ImagesTable } from './db/types.ts';
import type { FrozenAnswers } from './http/frozen-answers.ts';
import type { HotBlobs } from './http/hot-blobs.ts';
import type { KeptAnswers, KeptOwners } from './http/kept-answers.ts';
import type { ThumbnailRenderer } from './media/thumbnails.ts';
import type { CredentialsCache } from './security/credentials-cache.ts';
import type { FailureLimiter } from './security/failure-limiter.ts';
import type { LegacyKeyDigests } from './security/legacy-key-digests.ts';
import type { LoginThrottle } from './security/login-throttle.ts';

/** An image and the projects known to use it: a positive fact learned from the database (PERF-6). */
export interface ImageUses {
  image: ImagesTable;
  projects: ReadonlySet<string>;
}

/** Explicit dependencies handed to services and routes; tests build it with their own clock. */
export interface AppContext {
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
  /** Last-used timestamps already written, per key id: the write is throttled to once a minute. */
  lastUsedWrites: Map<string, number>;
  /** Failed authentications per client address (SEC-2b), shared by the key check and the login. */
  authFailures: FailureLimiter;
  /** Password guesses per account, and the clients each account signed in from (SEC-2d). */
  logins: LoginThrottle;
  /** Digests of the stored old-format keys, so the request log can mask one pasted into a URL (SEC-2a). */
  legacyKeys: LegacyKeyDigests;
  /** Principals of keys that authenticated, until access changes (PERF-1). */
  credentials: CredentialsCache<Principal>;
  /** Completed runs' results as bytes (PERF-2). */
  frozenResults: FrozenAnswers;
  /** Serialised device answers, each until a write to its device (PERF-5). */
  deviceAnswers: KeptAnswers<string>;
  /** Images with the projects known to use them, until a deletion (PERF-6). */
  imageUses: KeptAnswers<ImageUses>;
  /** The project that owns a run, test, job or artifact, or has a key or an id, until a deletion (PERF-7). */
  owners: KeptOwners;
  /** Bytes of often-read images (PERF-3). */
  hotBlobs: HotBlobs;
  /** The bounded thumbnail decoder (FILE-3). */
  thumbnails: ThumbnailRenderer;
  /** Work after the answer: imports being written (IMP-4). */
  background: BackgroundTasks;
}

/** The authenticated caller of a request. */
export interface Principal {
  user: { id: string; email: string; name: string; roles: Role[] };
  /** The effective role: the user's highest role, capped at viewer for a read-only key. */
  role: Role;
  key: { id: string; format: 'standard' | 'legacy' | 'session'; scope: 'full' | 'read'; expiresAt: string | null };
  /** Projects the caller may see: every project for admins, else their memberships. */
  projects: 'all' | Set<string>;
}

export const nowIso = (ctx: { clock: () => Date }) => ctx.clock().toISOString();
