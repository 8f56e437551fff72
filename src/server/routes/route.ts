import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BodyOf, Endpoint, ParamsOf, QueryOf } from '../../api/endpoint.ts';
import type { Config } from '../config.ts';
import type { AppContext } from '../context.ts';
import type { PageRequest } from '../db/pagination.ts';
import { invalid } from '../errors.ts';
import type { Principal } from '../security/principal.ts';
import { isUuid } from '../validation.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller, set by the access check before any handler runs. */
    principal?: Principal;
    /** The project that owns the addressed resource, resolved and checked before the handler runs. */
    projectId?: string;
    /** What the owner check read about the addressed resource, for the handler of the same request: one query, not two. */
    ownerRow?: unknown;
  }
  interface FastifyInstance {
    /** The application's dependencies (tests reach its database and blob store through it). */
    attest: AppContext;
  }
  interface FastifyContextConfig {
    /** The contract entry and implementation of a contract route. */
    route?: RouteImpl;
  }
}

export type TypedRequest<E extends Endpoint> = FastifyRequest<{ Params: ParamsOf<E>; Querystring: QueryOf<E>; Body: BodyOf<E> }> & {
  principal: Principal;
  /** The project that owns the addressed resource, resolved and checked before the handler runs. */
  projectId: string;
};

/** A server implementation of one contract endpoint. */
export interface RouteImpl<E extends Endpoint = Endpoint> {
  endpoint: E;
  /**
   * For project-scoped endpoints that address one resource: which project owns it (undefined when
   * it does not exist). The access check answers 404 before validation or the handler run when the
   * caller cannot see that project, so existence never leaks through a 400 or 403. An answer
   * known without waiting may be given as a value rather than a promise.
   */
  owner?: (request: FastifyRequest) => string | undefined | Promise<string | undefined>;
  /** A handler that sent its answer without waiting may return the reply itself rather than a promise. */
  handler: (request: TypedRequest<E>, reply: FastifyReply) => Promise<unknown> | FastifyReply;
}

export function route<E extends Endpoint>(endpoint: E, impl: Omit<RouteImpl<E>, 'endpoint'>): RouteImpl {
  return { endpoint, ...impl } as unknown as RouteImpl;
}

/** A field of a not-yet-validated body, query or path, for owner lookups. */
export function rawValue(source: unknown, name: string): unknown {
  return typeof source === 'object' && source !== null ? (source as Record<string, unknown>)[name] : undefined;
}

/** A string field of a not-yet-validated body, query or path. */
export function rawField(source: unknown, name: string): string | undefined {
  const value = rawValue(source, name);
  return typeof value === 'string' ? value : undefined;
}

/** A UUID path parameter read before validation; any other shape is the 400 the schema would give, and never reaches SQL. */
export function uuidPathParam(request: FastifyRequest, name: string): string {
  const value = rawField(request.params, name);
  if (value === undefined || !isUuid(value)) throw invalid(`/path/${name}`, 'must be a UUID');
  return value;
}

/**
 * The page a list request asks for: its cursor, and its `limit` within the configured bound (the
 * default when absent; over the bound is a 400 naming `limit`).
 */
export function pageOf(config: Config, query: { cursor?: string; limit?: number }): PageRequest {
  if (query.limit !== undefined && query.limit > config.pageSizeMax) {
    throw invalid('/query/limit', `must be at most ${config.pageSizeMax}`);
  }
  return { cursor: query.cursor, limit: query.limit ?? config.pageSizeDefault };
}
