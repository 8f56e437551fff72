import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type FastifyBaseLogger, type FastifyHttpOptions, type FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import { createContext } from './context.ts';
import { clientAddress } from './http/client-address.ts';
import { redactUrl, requestLogger } from './http/request-logger.ts';
import { backgroundPlugin } from './plugins/background.ts';
import { clusterPlugin } from './plugins/cluster.ts';
import { compressionPlugin } from './plugins/compression.ts';
import { API_VERSIONS, contractPlugin } from './plugins/contract.ts';
import { durableAnswersPlugin } from './plugins/durable-answers.ts';
import { answerFrameworkError, clientErrorAnswerer, errorsPlugin, hasUnreadBody } from './plugins/errors.ts';
import { methodNotAllowedPlugin } from './plugins/method-not-allowed.ts';
import { openRoutesPlugin } from './plugins/open-routes.ts';
import { parsersPlugin } from './plugins/parsers.ts';
import { rateLimitPlugin } from './plugins/rate-limit.ts';
import { recoveryPlugin } from './plugins/recovery.ts';
import { securityHeadersPlugin } from './plugins/security-headers.ts';
import { upkeepPlugin } from './plugins/upkeep.ts';
import { webPlugin } from './plugins/web.ts';
import type { LegacyKeyDigests } from './security/legacy-key-digests.ts';
import { bootstrapAdmin } from './services/access/bootstrap.ts';
import { createValidatorCompiler, lazySerializers } from './validation.ts';

export { API_VERSIONS, type ApiVersion } from './plugins/contract.ts';

export interface BuildOptions {
  config: Config;
  /** Injected time source (tests); defaults to the wall clock. */
  clock?: () => Date;
  /** A pino destination stream for logs (tests capture them); defaults to stdout. */
  logStream?: NodeJS.WritableStream;
}

/**
 * Every Fastify option of the application. `live` answers what exists only once the app is built:
 * its log, and the legacy keys' digests the request log masks URLs with.
 */
function fastifyOptions(
  options: BuildOptions,
  lingering: Set<Socket>,
  live: { legacyKeys: () => LegacyKeyDigests | undefined; log: () => FastifyBaseLogger },
): FastifyHttpOptions<Server> {
  const { config } = options;
  return {
    logger: {
      level: config.logLevel,
      redact: {
        paths: ['req.headers["service.api-token"]', 'req.headers["service.user"]', 'req.headers.authorization', 'req.headers.cookie'],
        censor: '[redacted]',
      },
      serializers: {
        req: (req: { method: string; url: string; ip?: string; params?: unknown }) => ({
          method: req.method,
          url: redactUrl(req.url, req.params, live.legacyKeys()?.isKey),
          remoteAddress: clientAddress(req as Parameters<typeof clientAddress>[0]),
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
    childLoggerFactory: requestLogger,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    trustProxy: config.trustProxy.length > 0 ? config.trustProxy : false,
    bodyLimit: config.bodyLimit,
    // Stopping, requests still arriving on open connections are served (see the onSend hook).
    return503OnClosing: false,
    routerOptions: { maxParamLength: 500, ignoreTrailingSlash: true },
    schemaController: { compilersFactory: { buildValidator: createValidatorCompiler as never, buildSerializer: lazySerializers } },
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: clientErrorAnswerer(live.log, config, lingering),
  };
}

/** Builds the production application: every Fastify option here, every concern a named plugin. */
export async function buildApp(options: BuildOptions): Promise<FastifyInstance> {
  const { config } = options;
  // The request log masks old-format keys pasted into URLs: it needs their digests, which the context holds.
  let legacyKeys: LegacyKeyDigests | undefined;
  // Connections reading and dropping what a refused request still sends (LOAD-4b), ended on shutdown.
  const lingering = new Set<Socket>();
  const app: FastifyInstance = Fastify(fastifyOptions(options, lingering, { legacyKeys: () => legacyKeys, log: () => app.log }));

  let state: 'starting' | 'ready' | 'stopping' = 'starting';
  const ctx = await createContext(config, { log: app.log, clock: options.clock, readiness: () => state }).catch((error: unknown) => {
    app.log.fatal({ err: error }, 'cannot open the database or the blob store');
    throw error;
  });
  legacyKeys = ctx.legacyKeys;
  app.decorate('attest', ctx);
  app.addHook('preClose', async () => {
    state = 'stopping';
  });
  // Stopping, the instance no longer accepts connections but still serves what arrives on those it
  // has (the database closes only once they are done), each answer with `Connection: close`: a
  // proxy then takes its next requests to another instance. Fastify's alternative, a 503 without
  // Retry-After to each of them, reached clients through a balancer that, rightly, does not retry
  // on a 503 (docs/deployment.md, SCALE-10). Not on an answer whose body is still drained behind
  // it: closing on the unread bytes would reset the connection and lose the answer (LOAD-4b).
  // A callback, not an async hook: it runs on every answer, and a promise per answer costs on the read path.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (state === 'stopping' && !hasUnreadBody(request)) reply.header('connection', 'close');
    done(null, payload);
  });

  await app.register(parsersPlugin);
  await app.register(securityHeadersPlugin, { config });
  await app.register(rateLimitPlugin, { ctx });
  await app.register(errorsPlugin, { limits: config, lingering });
  await app.register(compressionPlugin);
  await app.register(durableAnswersPlugin, { ctx });
  await app.register(methodNotAllowedPlugin, { versions: API_VERSIONS.map((v) => v.version) });
  await app.register(contractPlugin, { ctx });
  await app.register(openRoutesPlugin, { config });
  await app.register(webPlugin);

  await app.register(recoveryPlugin, { ctx });
  await app.register(clusterPlugin, { ctx });
  await app.register(upkeepPlugin, { ctx });
  app.addHook('onReady', async () => {
    state = 'ready';
  });
  await app.register(backgroundPlugin, { ctx });
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
