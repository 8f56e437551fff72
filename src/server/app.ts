import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import accepts from '@fastify/accepts';
import cors from '@fastify/cors';
import multipart from '@fastify/multipart';
import rateLimit from '@fastify/rate-limit';
import type { ErrorObject } from 'ajv';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import FindMyWay from 'find-my-way';
import sjson from 'secure-json-parse';
import type { Endpoint } from '../api/endpoint.ts';
import { v1Endpoints } from '../api/v1/index.ts';
import { createBlobStore } from './blob/create-blob-store.ts';
import type { Config } from './config.ts';
import type { AppContext, Principal } from './context.ts';
import { crashTrigger } from './crash-points.ts';
import { createDatabase, type DatabaseHandle } from './db/database.ts';
import { AppError, ERRORS, type ErrorCode, type FieldError, problemType } from './errors.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { scheduleBlobGc } from './plugins/blob-gc.ts';
import { FailureLimiter } from './plugins/failure-limiter.ts';
import { renderReferencePage } from './reference-page.ts';
import type { RouteImpl } from './routes/route.ts';
import { v1Routes } from './routes/v1/index.ts';
import { emailDigest, LEGACY_KEY_PATTERN } from './security/api-key.ts';
import { authenticate, canSeeProject, roleAtLeast } from './services/authenticate.ts';
import { bootstrapAdmin } from './services/bootstrap.ts';
import { Thumbnails } from './services/images.ts';
import { createAjv, rejectNulCharacters, toFieldError } from './validation.ts';
import { APP_VERSION } from './version.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    projectId?: string;
  }
  interface FastifyContextConfig {
    route?: RouteImpl;
  }
  interface FastifyInstance {
    attest: AppContext;
  }
}

/** An API version: its contract entries and their implementations, registered under `/api/<version>`. */
export interface ApiVersion {
  version: string;
  endpoints: Endpoint[];
  routes: (ctx: AppContext) => RouteImpl[];
}

/** Versions served, oldest first. Adding `/api/v2` means adding an entry here. */
export const API_VERSIONS: ApiVersion[] = [{ version: 'v1', endpoints: v1Endpoints, routes: v1Routes }];

export interface BuildOptions {
  config: Config;
  /** Injected time source (tests); defaults to the wall clock. */
  clock?: () => Date;
  /** A pino destination stream for logs (tests capture them); defaults to stdout. */
  logStream?: NodeJS.WritableStream;
  /** Prints the generated first-admin key; defaults to stdout. */
  announce?: (message: string) => void;
}

/** Media types a JSON endpoint answers in. The charset-qualified offer matters: negotiator only
 * matches `Accept: application/json; charset=utf-8` against an offer that carries the same parameter. */
const JSON_OFFERS = ['application/json', 'application/json; charset=utf-8', 'application/problem+json'];

/** 406 when the Accept header excludes JSON (SPEC 1.2); a missing Accept accepts anything. */
function requireJsonAccept(request: FastifyRequest): void {
  if (request.accepts().type(JSON_OFFERS) === false) {
    throw new AppError('NOT_ACCEPTABLE', 'This operation answers application/json; the Accept header excludes it.');
  }
}

const SENSITIVE_QUERY = /key|token|secret|password|user/i;

const UUID_ANY_CASE = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;
const ID_FIELD = /(Id|Ids|^ids)$/;

/**
 * Ids are lower-case UUIDs; a client that stores them upper-case still addresses the same
 * resources. Only our id fields (`…Id`/`…Ids` path, query and top-level body fields, device ids
 * excepted) are touched, never free text that happens to look like a UUID.
 */
function normaliseIds(request: FastifyRequest): void {
  const lower = (value: unknown): unknown => {
    if (typeof value === 'string') {
      if (UUID_ANY_CASE.test(value)) return value.toLowerCase();
      if (value.includes(','))
        return value
          .split(',')
          .map((v) => (UUID_ANY_CASE.test(v) ? v.toLowerCase() : v))
          .join(',');
      return value;
    }
    return Array.isArray(value) ? value.map(lower) : value;
  };
  for (const part of [request.params, request.query, request.body]) {
    if (typeof part !== 'object' || part === null || Array.isArray(part)) continue;
    const record = part as Record<string, unknown>;
    for (const [name, value] of Object.entries(record)) {
      // Device ids are chosen by clients (simulator UDIDs are upper-case UUIDs): compared exactly.
      if (ID_FIELD.test(name) && !name.startsWith('device')) record[name] = lower(value);
    }
  }
}

/** Request URL for logs: query values of credential-looking parameters are masked. */
function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  for (const name of [...params.keys()]) if (SENSITIVE_QUERY.test(name)) params.set(name, '[redacted]');
  return `${url.slice(0, q)}?${params.toString()}`;
}

function toProblem(code: ErrorCode, detail: string, request: { id: string } | undefined, extras: AppError['extras'] = {}) {
  const { status, title } = ERRORS[code];
  return {
    type: problemType(code),
    title,
    status,
    code,
    detail,
    ...(request ? { instance: `urn:attest:request:${request.id}` } : {}),
    ...(extras.errors ? { errors: extras.errors } : {}),
    ...(extras.supportedVersions ? { supportedVersions: extras.supportedVersions } : {}),
  };
}

export function sendProblem(reply: FastifyReply, error: AppError): FastifyReply {
  for (const [name, value] of Object.entries(error.extras.headers ?? {})) reply.header(name, value);
  return reply
    .code(error.status)
    .type('application/problem+json; charset=utf-8')
    .send(JSON.stringify(toProblem(error.code, error.message, reply.request, error.extras)));
}

const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'headers' };

/** Turns Ajv errors into field errors with JSON pointers (`/body/steps/3/title`). */
function fieldErrors(error: FastifyError): FieldError[] {
  const part = PART_NAMES[error.validationContext ?? 'body'] ?? 'body';
  return (error.validation ?? []).slice(0, 20).map((v) => toFieldError(`/${part}`, v as ErrorObject));
}

/** Maps any thrown error onto the problem catalogue; unknown errors are logged and become a bare 500. */
function classifyError(error: FastifyError | AppError | Error, request: FastifyRequest): AppError {
  if (error instanceof AppError) return error;
  const e = error as FastifyError;
  if (e.validation) {
    const errors = fieldErrors(e);
    const first = errors[0];
    return new AppError('INVALID_INPUT', first ? `${first.pointer}: ${first.message}` : 'The request is invalid.', { errors });
  }
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('MALFORMED_JSON', 'The body is not valid JSON.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('INVALID_INPUT', 'The body is empty; this operation needs a JSON body.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
    case 'FST_REQ_FILE_TOO_LARGE':
    case 'FST_FILES_LIMIT':
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new AppError('PAYLOAD_TOO_LARGE', 'The request body is larger than the configured limit.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', 'This operation does not accept that Content-Type.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('INVALID_INPUT', 'The Content-Length does not match the body.');
  }
  if (e.statusCode === 429) return new AppError('RATE_LIMITED', 'Too many requests; retry after the time in Retry-After.');
  if (e.statusCode === 408) return new AppError('REQUEST_TIMEOUT');
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    const code = (Object.keys(ERRORS) as ErrorCode[]).find((c) => ERRORS[c].status === e.statusCode) ?? 'INVALID_INPUT';
    return new AppError(code, ERRORS[code].title);
  }
  request.log.error({ err: error }, 'unhandled error');
  return new AppError('INTERNAL', 'An internal error occurred; quote the instance id when reporting it.');
}

function createValidators() {
  // Path and query strings arrive as text and are coerced to the schema types; bodies are JSON
  // and must already have the right types, so a wrong type is a 400, never a silent conversion.
  const coercing = createAjv(true);
  const exact = createAjv(false);
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) =>
    (httpPart === 'body' ? exact : coercing).compile(schema) as (data: unknown) => boolean;
}

/** Builds the production application: every Fastify option, plugin and route lives here. */
export async function buildApp(options: BuildOptions): Promise<FastifyInstance> {
  const { config } = options;
  const clock = options.clock ?? (() => new Date());
  const loggerOptions = {
    level: config.logLevel,
    redact: {
      paths: ['req.headers["service.api-token"]', 'req.headers["service.user"]', 'req.headers.authorization', 'req.headers.cookie'],
      censor: '[redacted]',
    },
    serializers: {
      req: (req: { method: string; url: string; ip?: string }) => ({ method: req.method, url: redactUrl(req.url), remoteAddress: req.ip }),
    },
    ...(options.logStream ? { stream: options.logStream } : {}),
  };

  const app = Fastify<Server>({
    logger: loggerOptions,
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
    schemaController: { compilersFactory: { buildValidator: (() => createValidators()) as never } },
    // A malformed percent-encoding or an over-long path segment fails before routing; answer it as a
    // problem too, instead of Fastify's own JSON (which also echoes the whole path back).
    // These replies skip the onSend hooks, so they set the headers every answer carries themselves.
    frameworkErrors(error, request, reply) {
      const detail =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path segment is longer than any id.' : 'The URL is not validly encoded.';
      reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff').header('cache-control', 'no-store');
      sendProblem(reply, new AppError('INVALID_INPUT', detail, { errors: [{ pointer: '/path', message: detail }] }));
    },
    clientErrorHandler(error: NodeJS.ErrnoException, socket) {
      // Malformed requests never reach Fastify's handlers; answer them as problems too.
      const code: ErrorCode =
        error.code === 'HPE_HEADER_OVERFLOW'
          ? 'HEADERS_TOO_LARGE'
          : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
            ? 'REQUEST_TIMEOUT'
            : 'INVALID_INPUT';
      // Like Node's own handler: never write a second status line into a response already under way.
      const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
      if (socket.writable && error.code !== 'ECONNRESET' && !inFlight?.headersSent) {
        // No request object exists here, but the answer still names an id like every other problem,
        // and a log line under that id says what happened (a timed-out request logs nothing else).
        const id = randomUUID();
        app.log.info(
          { reqId: id, code: error.code, status: ERRORS[code].status, remoteAddress: socket.remoteAddress },
          'client error answered',
        );
        const body = JSON.stringify(toProblem(code, ERRORS[code].title, { id }));
        socket.end(
          `HTTP/1.1 ${ERRORS[code].status} ${ERRORS[code].title}\r\nContent-Type: application/problem+json; charset=utf-8\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nX-Content-Type-Options: nosniff\r\nX-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
        );
      } else {
        socket.destroy();
      }
    },
  });

  const database: DatabaseHandle = await createDatabase(config, {
    onConnectionLost: (error) => app.log.warn({ err: error }, 'a PostgreSQL connection broke while idle; the pool opens a new one'),
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
    clock,
    log: app.log,
    lastUsedWrites: new Map(),
    authFailures: new FailureLimiter(config.authFailuresPerMinute),
    thumbnails: new Thumbnails(config),
  };
  app.decorate('attest', ctx);
  app.addHook('onClose', async () => {
    await database.close();
  });
  app.addHook('preClose', async () => {
    state = 'stopping';
  });

  app.removeAllContentTypeParsers();
  // JSON, with an empty body allowed: clients send Content-Type: application/json on GET and
  // DELETE too (SPEC 1.2). Prototype-poisoning keys are refused rather than stripped.
  app.addContentTypeParser(['application/json', 'application/problem+json'], { parseAs: 'string' }, (_req, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      const parsed: unknown = sjson.parse(text, { protoAction: 'error', constructorAction: 'error' });
      // PostgreSQL text cannot hold U+0000, so it is refused for every dialect alike; the deep
      // check only runs when the raw text could contain one.
      if (text.includes('\\u0000') || text.includes('\0')) rejectNulCharacters(parsed, '/body');
      done(null, parsed);
    } catch (error) {
      if (error instanceof AppError) return done(error, undefined);
      const message = (error as Error).message;
      if (/prototype|constructor/i.test(message)) {
        done(new AppError('INVALID_INPUT', 'The body holds a forbidden "__proto__" or "constructor.prototype" key.'), undefined);
      } else {
        done(Object.assign(new Error('invalid JSON'), { code: 'FST_ERR_CTP_INVALID_JSON_BODY', statusCode: 400 }), undefined);
      }
    }
  });
  app.addContentTypeParser(['text/plain', 'text/x-gherkin', 'application/xml', 'text/xml'], { parseAs: 'string' }, (_req, body, done) => {
    try {
      rejectNulCharacters(body, '/body');
      done(null, body);
    } catch (error) {
      done(error as AppError, undefined);
    }
  });

  await app.register(accepts);
  // Uploads stream part by part (never buffered whole). busboy's own defaults are unlimited, so
  // every limit is set (RELIABILITY FILE-8). fileSize is one byte over the largest file allowed:
  // the upload code counts bytes itself and refuses a file with 413 as soon as it passes its limit
  // (smaller for images), before the truncated remainder could be mistaken for a whole file.
  await app.register(multipart, {
    limits: {
      fileSize: Math.max(config.maxArtifactBytes, config.maxImageBytes) + 1,
      files: 10,
      parts: 20,
      fields: 10,
      fieldSize: 64 * 1024,
      fieldNameSize: 100,
      headerPairs: 100,
    },
  });
  // CORS only for explicitly configured origins; without them no Access-Control-* header is sent.
  if (config.corsOrigins.length > 0) {
    await app.register(cors, {
      origin: config.corsOrigins,
      allowedHeaders: ['content-type', 'accept', 'service.api-token', 'service.user', 'range', 'if-none-match'],
      exposedHeaders: ['x-request-id', 'etag', 'retry-after', 'content-disposition'],
    });
  }
  await app.register(rateLimit, {
    global: true,
    hook: 'preValidation',
    max: config.rateLimitPerMinute > 0 ? config.rateLimitPerMinute : 1e12,
    timeWindow: 60_000,
    keyGenerator: (request) => (request.principal ? `key:${request.principal.key.id}` : `ip:${request.ip}`),
    allowList: (request) => request.routeOptions.config.route?.endpoint.access.scope === 'public' && !request.url.includes('/auth/'),
    errorResponseBuilder: (_request, context) =>
      Object.assign(new Error('rate limited'), { statusCode: 429, retryAfter: Math.ceil(context.ttl / 1000) }),
    addHeaders: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true, 'retry-after': true },
  });

  app.setErrorHandler((error, request, reply) => {
    const problem = classifyError(error as Error, request);
    // Every 503 tells clients when to come back, whether or not the thrower chose a delay.
    if (problem.status === 503 && !problem.extras.headers?.['retry-after']) reply.header('retry-after', '5');
    return sendProblem(reply, problem);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    if (request.url.startsWith('/api')) {
      reply.header('x-frame-options', 'DENY');
      if (!reply.hasHeader('content-security-policy'))
        reply.header('content-security-policy', "default-src 'none'; frame-ancestors 'none'");
      if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    }
    if (request.principal?.key.format === 'legacy') {
      reply.header('deprecation', '@1795305600'); // 2026-11-22: old-format keys are deprecated
      reply.header('link', '</docs/api-keys.md#old-format-keys>; rel="deprecation"');
      if (config.legacyKeysSunset) reply.header('sunset', config.legacyKeysSunset.toUTCString());
    }
    return payload;
  });

  const failures = ctx.authFailures;
  const supported = API_VERSIONS.map((v) => v.version);
  const methodRouter = FindMyWay();

  // Authentication and function-level authorisation run before the body is even read.
  async function checkAccess(request: FastifyRequest, reply: FastifyReply) {
    const route = request.routeOptions.config.route;
    if (!route) return;
    const { endpoint } = route;
    if (endpoint.access.scope !== 'public') {
      const tokenHeader = request.headers['service.api-token'];
      const userHeader = request.headers['service.user'];
      const token = Array.isArray(tokenHeader) ? undefined : tokenHeader;
      const user = Array.isArray(userHeader) ? undefined : userHeader;
      const throttled = (wait: number) =>
        new AppError('RATE_LIMITED', 'Too many failed authentications; retry after the time in Retry-After.', {
          headers: { 'retry-after': String(wait) },
        });
      // Requests presenting a key are throttled per address once it has failed too often.
      const address = `ip:${request.ip}`;
      if (token !== undefined && failures.retryAfter(address) > 0) throw throttled(failures.retryAfter(address));
      try {
        request.principal = await authenticate(ctx, token, user);
      } catch (error) {
        if (token === undefined) throw error;
        failures.recordFailure(address);
        // Old-format guesses are also counted per e-mail digest, so guessing one user's key is
        // throttled across addresses (RELIABILITY AUTH-13). Only failures are ever refused this
        // way: a correct pair always passes, so nobody can lock a user out by guessing.
        if (user !== undefined && LEGACY_KEY_PATTERN.test(token)) {
          const subject = `email:${emailDigest(user)}`;
          failures.recordFailure(subject);
          if (failures.retryAfter(subject) > 0) throw throttled(failures.retryAfter(subject));
        }
        throw error;
      }
      // Every later log line of the request, "request completed" included (Fastify writes it with
      // reply.log), names the key and its owner by id, never by the token (RELIABILITY AUTH-9).
      reply.log = request.log = request.log.child({ keyId: request.principal.key.id, userId: request.principal.user.id });
      if (!roleAtLeast(request.principal.role, endpoint.access.role)) {
        throw new AppError('FORBIDDEN', `This operation needs the ${endpoint.access.role} role.`);
      }
      // A read-only key reads: it may not write anything, its owner's own keys and password included,
      // or it could mint itself a full key.
      if (request.principal.key.scope === 'read' && endpoint.method !== 'GET') {
        throw new AppError('FORBIDDEN', 'This key is read-only.');
      }
    }
    if (!endpoint.binary) requireJsonAccept(request);
    // No path or query value may carry U+0000 (PostgreSQL text cannot hold it).
    if (request.url.includes('%00')) {
      rejectNulCharacters(request.params, '/path');
      rejectNulCharacters(request.query, '/query');
    }
  }

  // Object-level access: the owning project of the addressed resource must be visible, else 404.
  async function checkOwner(request: FastifyRequest) {
    const route = request.routeOptions.config.route;
    if (!route) return;
    normaliseIds(request);
    const { endpoint } = route;
    if (endpoint.body && !endpoint.consumes) {
      const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
      // A multipart body parses to nothing on a JSON route, so the headers decide whether a body was sent.
      const hasBody =
        request.body !== undefined ||
        Number(request.headers['content-length'] ?? 0) > 0 ||
        request.headers['transfer-encoding'] !== undefined;
      if (hasBody && type !== 'application/json') {
        throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'This operation takes Content-Type: application/json.');
      }
    }
    if (route.owner && request.principal) {
      const projectId = await route.owner(request);
      if (projectId === undefined || !canSeeProject(request.principal, projectId)) {
        throw new AppError('NOT_FOUND', 'The resource does not exist or is not visible to you.');
      }
      request.projectId = projectId;
    }
  }

  for (const { version, endpoints, routes } of API_VERSIONS) {
    const impls = routes(ctx);
    const byId = new Map(impls.map((r) => [r.endpoint.operationId, r]));
    const missing = endpoints.filter((e) => !byId.has(e.operationId)).map((e) => e.operationId);
    const extra = impls.filter((r) => !endpoints.includes(r.endpoint)).map((r) => r.endpoint.operationId);
    if (missing.length || extra.length) {
      throw new Error(`API ${version}: contract and routes differ (unimplemented: ${missing.join(', ')}; undeclared: ${extra.join(', ')})`);
    }
    for (const endpoint of endpoints) {
      const impl = byId.get(endpoint.operationId) as RouteImpl;
      const url = `/api/${version}${endpoint.path.replace(/\{(\w+)\}/g, ':$1')}`;
      const response: Record<number, unknown> = {};
      for (const [status, spec] of Object.entries(endpoint.responses)) {
        if (spec !== null && !('content' in spec && 'description' in spec)) response[Number(status)] = spec;
      }
      const multipart = endpoint.consumes?.includes('multipart/form-data');
      methodRouter.on(endpoint.method, url, () => {});
      app.route({
        method: endpoint.method,
        url,
        config: { route: impl },
        bodyLimit: endpoint.bodyLimit ? config[endpoint.bodyLimit] : undefined,
        schema: {
          ...(endpoint.params ? { params: endpoint.params } : {}),
          ...(endpoint.querystring ? { querystring: endpoint.querystring } : {}),
          ...(endpoint.body && !multipart && !endpoint.consumes?.some((t) => t.startsWith('text/')) ? { body: endpoint.body } : {}),
          response,
        },
        onRequest: checkAccess,
        preValidation: checkOwner,
        handler: (request, reply) => impl.handler(request as never, reply),
      });
    }
  }

  // Open JSON routes outside the contract negotiate like every contract route.
  const jsonOnly = { onRequest: async (request: FastifyRequest) => requireJsonAccept(request) };
  app.get('/api', jsonOnly, async (request) => {
    const base = config.publicUrl ?? `${request.protocol}://${request.host}`;
    return {
      versions: API_VERSIONS.map((v, i) => ({
        version: v.version,
        url: `${base}/api/${v.version}`,
        status: i === API_VERSIONS.length - 1 ? 'current' : 'supported',
      })),
      current: supported[supported.length - 1],
    };
  });
  app.get('/health', jsonOnly, async () => ({ status: 'ok', version: APP_VERSION }));
  // The API reference is product documentation (the same text ships in the repository), so it is
  // open. It describes the current version and is rendered on first request, not at start-up.
  const current = API_VERSIONS[API_VERSIONS.length - 1] as ApiVersion;
  let referencePage: string | undefined;
  app.get('/docs/api', async (_request, reply) => {
    referencePage ??= renderReferencePage(buildOpenApiDocument(current.endpoints, { version: current.version, appVersion: APP_VERSION }));
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
      .send(referencePage);
  });

  app.setNotFoundHandler(async (request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const versionMatch = /^\/api\/(v\d+)(\/|$)/.exec(path) ?? /^\/api\/([^/]+)\//.exec(path);
    if (versionMatch && !supported.includes(versionMatch[1] ?? '')) {
      return sendProblem(
        reply,
        new AppError('UNSUPPORTED_API_VERSION', `API version "${versionMatch[1]}" does not exist; supported: ${supported.join(', ')}.`, {
          supportedVersions: supported,
        }),
      );
    }
    const allowed = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => methodRouter.find(m as 'GET', path) !== null);
    if (allowed.length > 0) {
      if (allowed.includes('GET')) allowed.push('HEAD');
      return sendProblem(
        reply,
        new AppError('METHOD_NOT_ALLOWED', `${request.method} is not allowed here; use ${allowed.join(', ')}.`, {
          headers: { allow: allowed.join(', ') },
        }),
      );
    }
    return sendProblem(reply, new AppError('NOT_FOUND', `No route ${request.method} ${path}.`));
  });

  await bootstrapAdmin(ctx, options.announce ?? ((message) => process.stdout.write(`${message}\n`)));
  await database.check();
  // Start-up recovery (DUR-9), after the database took the data folder's lock (DUR-3) and before
  // the instance reports ready: uploads a previous process left unfinished are deleted.
  const recovered = await ctx.blobs.recover();
  app.log.info({ blobs: ctx.blobs.location, removedTempFiles: recovered.removedTempFiles }, 'blob store recovered');
  scheduleBlobGc(app);
  app.addHook('onReady', async () => {
    state = 'ready';
  });
  return app;
}
