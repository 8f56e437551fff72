import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BodyOf, Endpoint, HasContent, HasEmpty, JsonReplyOf, JsonText, ParamsOf, QueryOf } from '../../api/endpoint.ts';
import type { BlobDownload } from '../blob/blob-store.ts';
import type { Config } from '../config.ts';
import type { AppContext } from '../context.ts';
import type { PageRequest } from '../db/pagination.ts';
import { invalid } from '../errors.ts';
import { type BlobSending, sendBlob } from '../http/blob-download.ts';
import { sendJobExport } from '../http/job-export.ts';
import type { Keeps } from '../http/kept-routes.ts';
import { sendRunExport } from '../http/run-export.ts';
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
    route?: RegisteredRoute;
  }
}

export type TypedRequest<E extends Endpoint> = FastifyRequest<{ Params: ParamsOf<E>; Querystring: QueryOf<E>; Body: BodyOf<E> }> & {
  principal: Principal;
  /** The project that owns the addressed resource, resolved and checked before the handler runs. */
  projectId: string;
};

declare const sentKind: unique symbol;
declare const sentBody: unique symbol;
/**
 * Proof that a handler sent its answer itself, of a kind its endpoint declares: made only by the
 * senders below, so a handler cannot pass off an arbitrary `reply.send(...)` as its answer.
 */
export interface Sent<Kind extends 'no-content' | 'download'> {
  readonly [sentKind]: Kind;
}
/** Proof that a handler sent JSON text made from a `T` (kept or built ahead: `serializedReply`, `jsonText`). */
export interface SentJson<T> {
  readonly [sentKind]: 'json';
  readonly [sentBody]: T;
}

/**
 * What a handler of E may answer: a value of its JSON success schema (serialised by the route's
 * schema), or proof that it sent one of the answers E declares itself: JSON text of that schema,
 * the 204 of an endpoint that has one, the stream or bytes of an endpoint whose success is a
 * download. Anything else fails to compile (the type test in test/unit/typed-replies.test.ts).
 */
export type Answer<E extends Endpoint> =
  | JsonReplyOf<E>
  | ([JsonReplyOf<E>] extends [never] ? never : SentJson<JsonReplyOf<E>>)
  | (HasEmpty<E, 204> extends true ? Sent<'no-content'> : never)
  | (HasContent<E> extends true ? Sent<'download'> : never);

/**
 * The reply as a handler sees it: the status of its answer (one E declares), headers, and when the
 * connection closes. Sending goes through the senders below, so every answer is one E declares.
 */
export interface AnswerReply<E extends Endpoint = Endpoint> {
  code(status: Extract<keyof E['responses'], number>): AnswerReply<E>;
  header(name: string, value: string | number): AnswerReply<E>;
  readonly raw: Pick<FastifyReply['raw'], 'once'>;
}

/** A server implementation of one contract endpoint, typed by it from input to answer. */
export interface RouteImpl<E extends Endpoint> {
  endpoint: E;
  /**
   * For project-scoped endpoints that address one resource: which project owns it (undefined when
   * it does not exist). The access check answers 404 before validation or the handler run when the
   * caller cannot see that project, so existence never leaks through a 400 or 403. An answer
   * known without waiting may be given as a value rather than a promise.
   */
  owner?: (request: FastifyRequest) => string | undefined | Promise<string | undefined>;
  /**
   * What the route keeps in memory (PERF-8): the keeper, the key, and which answers. The contract
   * plugin then runs the cache protocol around the handler (http/kept-routes.ts), which only
   * computes the answer and returns it, never sends it.
   */
  keeps?: Keeps<TypedRequest<E>, JsonReplyOf<E>>;
  /** A handler that answers without waiting may return its answer itself rather than a promise. */
  handler: (request: TypedRequest<E>, reply: AnswerReply<E>) => Answer<E> | Promise<Answer<E>>;
}

/**
 * A contract route as the registry holds it, whatever its endpoint: the one place its types are
 * erased. The schemas Fastify validates the input with are what make the typed request true.
 */
export interface RegisteredRoute {
  endpoint: Endpoint;
  owner?: RouteImpl<Endpoint>['owner'];
  keeps?: Keeps<never, never>;
  handler: (request: FastifyRequest, reply: FastifyReply) => unknown;
}

export function route<E extends Endpoint>(endpoint: E, impl: Omit<RouteImpl<E>, 'endpoint'>): RegisteredRoute {
  return { endpoint, owner: impl.owner, keeps: impl.keeps, handler: impl.handler as unknown as RegisteredRoute['handler'] };
}

// The senders: each sends one kind of answer and returns the proof of it. The casts behind them
// (`fastify`, `sent`) are the only ones between a handler and the wire.

/** The reply a handler was given, as Fastify made it. */
const fastify = (reply: AnswerReply): FastifyReply => reply as unknown as FastifyReply;

/** The reply just sent, as the proof of what it was. */
function sent<Proof>(reply: FastifyReply): Proof {
  return reply as unknown as Proof;
}

/** The 204 of an endpoint that declares one. */
export const noContent = (reply: AnswerReply): Sent<'no-content'> => sent(fastify(reply).code(204).send());

/** A reply value as JSON text, by the route's own response schema: to keep, then send with `sendJsonText`. */
export const serializedReply = <T>(reply: AnswerReply, value: T): JsonText<T> => fastify(reply).serialize(value) as JsonText<T>;

/** JSON text made from a reply value, sent as it is. */
export const sendJsonText = <T>(reply: AnswerReply, text: JsonText<T>): SentJson<T> =>
  sent(fastify(reply).type('application/json; charset=utf-8').send(text));

/** A blob download (`http/blob-download.ts`): the answer of an endpoint whose success is a download. */
export function sentBlob(
  ctx: BlobSending,
  request: FastifyRequest,
  reply: AnswerReply,
  download: BlobDownload,
): Sent<'download'> | Promise<Sent<'download'>> {
  const sending = sendBlob(ctx, request, fastify(reply), download);
  return sending instanceof Promise ? sending.then(sent<Sent<'download'>>) : sent(sending);
}

type ExportOptions<Send extends (...args: never[]) => unknown> = Send extends (
  request: FastifyRequest,
  reply: FastifyReply,
  ...rest: infer Rest
) => unknown
  ? Rest
  : never;

/** A run's export, streamed (`http/run-export.ts`). */
export const sentRunExport = (
  request: FastifyRequest,
  reply: AnswerReply,
  ...rest: ExportOptions<typeof sendRunExport>
): Promise<Sent<'download'>> => sendRunExport(request, fastify(reply), ...rest).then(sent<Sent<'download'>>);

/** A job's export, streamed (`http/job-export.ts`). */
export const sentJobExport = (
  request: FastifyRequest,
  reply: AnswerReply,
  ...rest: ExportOptions<typeof sendJobExport>
): Promise<Sent<'download'>> => sendJobExport(request, fastify(reply), ...rest).then(sent<Sent<'download'>>);

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
