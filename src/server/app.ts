import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { BackgroundTasks } from './background.ts';
import { createBlobStore } from './blob/create-blob-store.ts';
import type { Config } from './config.ts';
import type { AppContext } from './context.ts';
import { crashTrigger } from './crash-points.ts';
import { createDatabase } from './db/database.ts';
import { FrozenAnswers } from './http/frozen-answers.ts';
import { HotBlobs } from './http/hot-blobs.ts';
import { DEVICE_ANSWERS_BYTES, KeptAnswers, KeptOwners, textBytes } from './http/kept-answers.ts';
import { lazyChildren, redactUrl } from './http/request-logger.ts';
import { ThumbnailRenderer } from './media/thumbnails.ts';
import { compressionPlugin } from './plugins/compression.ts';
import { API_VERSIONS, contractPlugin } from './plugins/contract.ts';
import { durableAnswersPlugin } from './plugins/durable-answers.ts';
import { answerFrameworkError, clientErrorAnswerer, errorsPlugin } from './plugins/errors.ts';
import { importsPlugin } from './plugins/imports.ts';
import { methodNotAllowedPlugin } from './plugins/method-not-allowed.ts';
import { openRoutesPlugin } from './plugins/open-routes.ts';
import { parsersPlugin } from './plugins/parsers.ts';
import { rateLimitPlugin } from './plugins/rate-limit.ts';
import { recoveryPlugin } from './plugins/recovery.ts';
import { securityHeadersPlugin } from './plugins/security-headers.ts';
import { upkeepPlugin } from './plugins/upkeep.ts';
import { webPlugin } from './plugins/web.ts';
import { CREDENTIALS_CACHE_ENTRIES, CredentialsCache } from './security/credentials-cache.ts';
import { FailureLimiter } from './security/failure-limiter.ts';
import { LegacyKeyDigests } from './security/legacy-key-digests.ts';
import { LoginThrottle } from './security/login-throttle.ts';
import { bootstrapAdmin } from './services/bootstrap.ts';
import { IMAGE_USES_BYTES, imageUsesBytes } from './services/images.ts';
import { refreshLegacyKeyDigests } from './services/users.ts';
import { createValidatorCompiler, lazySerializers } from './validation.ts';

export { API_VERSIONS, type ApiVersion } from './plugins/contract.ts';

export interface BuildOptions {
  config: Config;
  /** Injected time source (tests); defaults to the wall clock. */
  clock?: () => Date;
  /** A pino destination stream for logs (tests capture them); defaults to stdout. */
  logStream?: NodeJS.WritableStream;
}

/** Builds the production application: every Fastify option here, every concern a named plugin. */
export async function buildApp(options: BuildOptions): Promise<FastifyInstance> {
  const { config } = options;
  // The request log masks old-format keys pasted into URLs: it needs their digests, loaded below.
  const legacyKeys = new LegacyKeyDigests();
  const app: FastifyInstance = Fastify({
    logger: {
      level: config.logLevel,
      redact: {
        paths: ['req.headers["service.api-token"]', 'req.headers["service.user"]', 'req.headers.authorization', 'req.headers.cookie'],
        censor: '[redacted]',
      },
      serializers: {
        req: (req: { method: string; url: string; ip?: string; params?: unknown }) => ({
          method: req.method,
          url: redactUrl(req.url, req.params, legacyKeys.isKey),
          remoteAddress: req.ip,
        }),
      },
      ...(options.logStream ? { stream: options.logStream } : {}),
    },
    // Slow or incomplete requests (slowloris) are cut after requestTimeout with a 408 from
    // clientErrorHandler. Node checks the deadline only every connectionsCheckingInterval (30 s by
    // default), so the interval follows the timeout; headers must arrive within the same budget.
    requestTimeout: config.requestTimeoutMs,
    http: {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: Math.min(60_000, config.requestTimeoutMs),
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(config.requestTimeoutMs / 2))),
    },
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    trustProxy: config.trustProxy.length > 0 ? config.trustProxy : false,
    bodyLimit: config.bodyLimit,
    return503OnClosing: true,
    routerOptions: { maxParamLength: 500, ignoreTrailingSlash: true },
    schemaController: { compilersFactory: { buildValidator: createValidatorCompiler as never, buildSerializer: lazySerializers } },
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: clientErrorAnswerer(() => app.log),
  });

  lazyChildren(app.log);

  const database = await createDatabase(config, {
    onConnectionLost: (error) => app.log.warn({ err: error }, 'a PostgreSQL connection broke while idle; the pool opens a new one'),
    log: app.log,
  }).catch((error: unknown) => {
    app.log.fatal({ err: error }, 'cannot open the database');
    throw error;
  });
  let state: 'starting' | 'ready' | 'stopping' = 'starting';
  const crashPoint = crashTrigger(config.crashAt);
  const ctx: AppContext = {
    readiness: () => state,
    config,
    db: database.db,
    dialect: database.dialect,
    database,
    blobs: createBlobStore(config, crashPoint),
    crashPoint,
    clock: options.clock ?? (() => new Date()),
    log: app.log,
    lastUsedWrites: new Map(),
    legacyKeys,
    authFailures: new FailureLimiter(config.authFailuresPerMinute),
    logins: new LoginThrottle(),
    credentials: new CredentialsCache(CREDENTIALS_CACHE_ENTRIES),
    frozenResults: new FrozenAnswers(config.resultsCacheBytes),
    deviceAnswers: new KeptAnswers(DEVICE_ANSWERS_BYTES, textBytes),
    imageUses: new KeptAnswers(IMAGE_USES_BYTES, imageUsesBytes),
    owners: new KeptOwners(),
    hotBlobs: new HotBlobs(config.imageCacheBytes),
    thumbnails: new ThumbnailRenderer(config),
    background: new BackgroundTasks((name, error) => app.log.error({ err: error }, `${name} failed`)),
  };
  await refreshLegacyKeyDigests(ctx);
  app.decorate('attest', ctx);
  app.addHook('preClose', async () => {
    state = 'stopping';
  });

  await app.register(parsersPlugin);
  await app.register(securityHeadersPlugin, { config });
  await app.register(rateLimitPlugin, { config });
  await app.register(errorsPlugin, { limits: config });
  await app.register(compressionPlugin);
  await app.register(durableAnswersPlugin, { ctx });
  await app.register(methodNotAllowedPlugin, { versions: API_VERSIONS.map((v) => v.version) });
  await app.register(contractPlugin, { ctx });
  await app.register(openRoutesPlugin, { config });
  await app.register(webPlugin);

  await app.register(recoveryPlugin, { ctx });
  await app.register(upkeepPlugin, { ctx });
  app.addHook('onReady', async () => {
    state = 'ready';
  });
  await app.register(importsPlugin, { ctx });
  return app;
}

/**
 * The step after `listen` succeeded: on an empty database, the first admin is created and its key
 * printed (SEC-8b). Only now, so a start that cannot bind its port neither prints a key nor stores
 * one; the next start creates and prints it. `announce` defaults to stdout.
 */
export async function onListening(app: FastifyInstance, announce?: (message: string) => void): Promise<void> {
  await bootstrapAdmin(app.attest, announce ?? ((message) => process.stdout.write(`${message}\n`)));
}
