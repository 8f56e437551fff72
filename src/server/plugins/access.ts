import type { FastifyBaseLogger, FastifyReply, FastifyRequest, HookHandlerDoneFunction as HookDone } from 'fastify';
import type { TSchema } from 'typebox';
import { IS_UUID } from '../../api/common.ts';
import type { Endpoint, Role } from '../../api/endpoint.ts';
import type { AppContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { clientAddress } from '../http/client-address.ts';
import type { RegisteredRoute } from '../routes/route.ts';
import { emailDigest, LEGACY_KEY_PATTERN } from '../security/api-key.ts';
import type { Principal } from '../security/principal.ts';
import { canSeeProject, roleAtLeast } from '../security/roles.ts';
import { authenticate, knownPrincipal } from '../services/access/authenticate.ts';
import { rejectNulCharacters } from '../validation.ts';

/** Media types a JSON endpoint answers in. The charset-qualified offer matters: negotiator only
 * matches `Accept: application/json; charset=utf-8` against an offer that carries the same parameter. */
const JSON_OFFERS = ['application/json', 'application/json; charset=utf-8', 'application/problem+json'];

/** 406 when the Accept header excludes JSON (SPEC-2.5); a missing Accept accepts anything. */
export function requireJsonAccept(request: FastifyRequest): void {
  const accept = request.headers.accept;
  // What almost every client sends, answered without building a negotiator.
  if (accept === undefined || accept === '*/*' || accept === 'application/json') return;
  if (request.accepts().type(JSON_OFFERS) === false) {
    throw new AppError('NOT_ACCEPTABLE', 'This operation answers application/json; the Accept header excludes it.');
  }
}

/** Fastify's per-request pino logger; its type leaves out pino's `setBindings`. */
type RequestLogger = FastifyBaseLogger & { setBindings(bindings: Record<string, unknown>): void };

const HAS_UPPER_CASE = /[A-Z]/;
const ID_FIELD = /(Id|Ids|^ids)$/;

/** An id field's value, lower-cased where it is a UUID (or a comma-separated list holding some). */
function lowerIds(value: unknown): unknown {
  if (typeof value === 'string') {
    // Nothing to lower (what clients almost always send): tested without toLowerCase, which V8 runs
    // through the runtime for a path parameter (a slice of the URL).
    if (!HAS_UPPER_CASE.test(value)) return value;
    if (IS_UUID.test(value)) return value.toLowerCase();
    if (value.includes(','))
      return value
        .split(',')
        .map((v) => (IS_UUID.test(v) ? v.toLowerCase() : v))
        .join(',');
    return value;
  }
  return Array.isArray(value) ? value.map(lowerIds) : value;
}

// Device ids are chosen by clients (simulator UDIDs are upper-case UUIDs): compared exactly.
const isIdField = (name: string) => ID_FIELD.test(name) && !name.startsWith('device');

/** The named fields of one part of a request (path, query or body), lower-cased in place where they hold ids. */
function normaliseIdFields(part: unknown, names: readonly string[]): void {
  if (typeof part !== 'object' || part === null || Array.isArray(part)) return;
  const record = part as Record<string, unknown>;
  for (const name of names) if (record[name] !== undefined) record[name] = lowerIds(record[name]);
}

/** The id fields a path or query schema declares: a route reads no others. */
const idFieldsOf = (schema: TSchema | undefined): string[] =>
  Object.keys((schema as { properties?: object } | undefined)?.properties ?? {}).filter(isIdField);

/**
 * Ids are lower-case UUIDs; a client that stores them upper-case still addresses the same
 * resources. Only our id fields (`…Id`/`…Ids` path, query and top-level body fields, device ids
 * excepted) are touched, never free text that happens to look like a UUID. The path's and query's
 * id fields are known from the route's schemas; a body's are found by name.
 */
function normaliseIds(request: FastifyRequest, path: readonly string[], query: readonly string[]): void {
  if (path.length > 0) normaliseIdFields(request.params, path);
  if (query.length > 0) normaliseIdFields(request.query, query);
  const body = request.body;
  // Plain (JSON) objects only: a raw import body is a Buffer, and Object.keys of a Buffer is one
  // string per byte (a 20 MB report held the event loop for seconds).
  if (isPlainObject(body)) normaliseIdFields(body, Object.keys(body).filter(isIdField));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

const throttled = (wait: number) =>
  new AppError('RATE_LIMITED', 'Too many failed authentications; retry after the time in Retry-After.', {
    headers: { 'retry-after': String(wait) },
  });

/**
 * What a presented key that failed answers (SEC-2b). Only failures are ever throttled: the key is
 * checked first, so a valid key always passes, and one client's bad keys cannot lock out the
 * other keys behind the same address (a NAT, a proxy). Failures count per client address and,
 * for old-format keys, per e-mail digest too, so guessing one user's key is throttled across
 * addresses (AUTH-13); a subject over its budget gets 429 instead of the identical 401. Counting
 * may wait for the store the instances share (SCALE-4): only a failure ever waits for it.
 */
async function refusedKey(ctx: AppContext, error: unknown, token: string, user: string | undefined, ip: string): Promise<unknown> {
  const subjects = [`ip:${ip}`];
  if (user !== undefined && LEGACY_KEY_PATTERN.test(token)) subjects.push(`email:${emailDigest(user)}`);
  const wait = Math.max(...(await Promise.all(subjects.map((subject) => ctx.authFailures.recordFailure(subject)))));
  return wait > 0 ? throttled(wait) : error;
}

/** After authentication: log bindings and function-level authorisation. */
function authorise(request: FastifyRequest, endpoint: Endpoint, role: Role, principal: Principal): void {
  request.principal = principal;
  // Every later log line of the request, "request completed" included (Fastify writes it with
  // reply.log, the same per-request logger), names the key and its owner by id, never by the
  // token (AUTH-9). The request's own logger takes the bindings: no second child per request.
  (request.log as RequestLogger).setBindings({ keyId: principal.key.id, userId: principal.user.id });
  if (!roleAtLeast(principal.role, role)) {
    throw new AppError('FORBIDDEN', `This operation needs the ${role} role.`);
  }
  // A read-only key reads: it may not write anything, its owner's own keys and password included,
  // or it could mint itself a full key.
  if (principal.key.scope === 'read' && endpoint.method !== 'GET') {
    throw new AppError('FORBIDDEN', 'This key is read-only.');
  }
}

/** The checks that need no caller: Accept, and no U+0000 in the path or query. */
function checkRequestShape(request: FastifyRequest, endpoint: Endpoint): void {
  if (!endpoint.binary) requireJsonAccept(request);
  // No path or query value may carry U+0000 (PostgreSQL text cannot hold it).
  if (request.url.includes('%00')) {
    rejectNulCharacters(request.params, '/path');
    rejectNulCharacters(request.query, '/query');
  }
}

/** One header's value, unless the client sent it more than once. */
const single = (value: string | string[] | undefined) => (Array.isArray(value) ? undefined : value);

/**
 * A caller the credentials cache does not know: `authenticate` answers, then the same checks as a
 * known caller's. Only a refused key counts against its client (SEC-2b): a lookup that failed
 * because the database did not answer is a 503, and a valid key must not end up throttled by it (DUR-15).
 */
function authenticateThen(ctx: AppContext, request: FastifyRequest, endpoint: Endpoint, role: Role, done: HookDone): void {
  const token = single(request.headers['service.api-token']);
  const user = single(request.headers['service.user']);
  authenticate(ctx, token, user).then(
    (principal) => {
      try {
        authorise(request, endpoint, role, principal);
        checkRequestShape(request, endpoint);
      } catch (error) {
        done(error as Error);
        return;
      }
      done();
    },
    (error: unknown) => {
      if (token === undefined || !(error instanceof AppError && error.code === 'UNAUTHENTICATED')) done(error as Error);
      else refusedKey(ctx, error, token, user, clientAddress(request)).then((answer) => done(answer as Error), done);
    },
  );
}

/**
 * The onRequest hook of one route: authentication and function-level authorisation, before the
 * body is even read. A caller the credentials cache knows is checked in the same tick (callback
 * style, no promise); anyone else waits for `authenticate`.
 */
const checkAccess =
  (ctx: AppContext, route: RegisteredRoute) =>
  (request: FastifyRequest, _reply: FastifyReply, done: HookDone): void => {
    const { endpoint } = route;
    if (endpoint.access.scope === 'public') {
      checkRequestShape(request, endpoint);
      done();
      return;
    }
    const known = knownPrincipal(ctx, single(request.headers['service.api-token']), single(request.headers['service.user']));
    if (!known) {
      authenticateThen(ctx, request, endpoint, endpoint.access.role, done);
      return;
    }
    authorise(request, endpoint, endpoint.access.role, known);
    checkRequestShape(request, endpoint);
    done();
  };

/** A JSON route refuses a body of another type (a multipart body parses to nothing there, so the headers decide whether a body was sent). */
function requireJsonBody(request: FastifyRequest, endpoint: Endpoint): void {
  if (!endpoint.body || endpoint.consumes) return;
  const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  const hasBody =
    request.body !== undefined || Number(request.headers['content-length'] ?? 0) > 0 || request.headers['transfer-encoding'] !== undefined;
  if (hasBody && type !== 'application/json') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'This operation takes Content-Type: application/json.');
  }
}

function ownedBy(request: FastifyRequest, principal: Principal, projectId: string | undefined, done: HookDone): void {
  if (projectId === undefined || !canSeeProject(principal, projectId)) {
    done(new AppError('NOT_FOUND', 'The resource does not exist or is not visible to you.'));
    return;
  }
  request.projectId = projectId;
  done();
}

/** The preValidation hook of one route: object-level access. The owning project of the addressed resource must be visible, else 404 (SEC-1a). */
const checkOwner = (route: RegisteredRoute) => {
  const pathIds = idFieldsOf(route.endpoint.params);
  const queryIds = idFieldsOf(route.endpoint.querystring);
  return (request: FastifyRequest, _reply: FastifyReply, done: HookDone): void => {
    normaliseIds(request, pathIds, queryIds);
    requireJsonBody(request, route.endpoint);
    const principal = request.principal;
    if (!route.owner || !principal) {
      done();
      return;
    }
    const owner = route.owner(request);
    if (typeof owner === 'object') owner.then((projectId) => ownedBy(request, principal, projectId, done), done);
    else ownedBy(request, principal, owner, done);
  };
};

/**
 * The two access hooks every contract route runs, so authorisation is declared on the endpoint
 * (`access.role`, an `owner` resolver) and enforced here only, never inside handlers.
 */
export function accessHooks(ctx: AppContext) {
  return { checkAccess: (route: RegisteredRoute) => checkAccess(ctx, route), checkOwner };
}
