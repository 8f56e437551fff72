import type { Static, TSchema } from 'typebox';

/** Roles in increasing power; each includes everything the ones before it may do (SPEC-2.2). */
export const ROLES = ['viewer', 'tester', 'manager', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/**
 * Who may call an endpoint, declared once on the contract and enforced in one place by the server.
 * - `public`: no key needed.
 * - `global`: the caller needs at least `role`; the resource is not project-owned (or is the caller's own).
 * - `project`: the caller needs at least `role` and must see the project that owns the resource;
 *   a resource of a project they cannot see answers 404 exactly as if it did not exist.
 */
export type Access = { scope: 'public' } | { scope: 'global' | 'project'; role: Role };

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A response: a JSON schema, or a non-JSON body (images, downloads) described by media types. */
export type ResponseSpec = TSchema | { description: string; content: Record<string, { schema: TSchema }> } | null;

/** One operation of the contract. The server registers it, the OpenAPI document and the client derive from it. */
export interface Endpoint {
  operationId: string;
  method: HttpMethod;
  /** Path relative to the version root, OpenAPI style: `/users/{email}`. */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  access: Access;
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  /** Request media types other than JSON (multipart uploads, XML imports, Gherkin text). */
  consumes?: string[];
  /** Larger body limit for bulk routes, named by a config field. */
  bodyLimit?: 'bulkBodyLimit' | 'maxImportBytes';
  /** Success responses by status; every endpoint also documents its problem responses. */
  responses: Record<number, ResponseSpec>;
  /** The response is not JSON (binary downloads): Accept negotiation does not apply. */
  binary?: boolean;
  deprecated?: boolean;
  /**
   * A request field is a URL the server will send requests to (a webhook's): documented as
   * `x-fetches-url`, the one exception to SEC-7a, guarded as HOOK-5 says.
   */
  fetchesUrl?: boolean;
  /** A public endpoint that checks a proof of its own (a signed link): what its 401 means. */
  refusedWith?: string;
}

/** Declares an endpoint and keeps its literal type, so handlers and clients get exact types. */
export function endpoint<const E extends Endpoint>(e: E): E {
  return e;
}

type StaticOr<T, F> = T extends TSchema ? Static<T> : F;

export type ParamsOf<E extends Endpoint> = StaticOr<E['params'], Record<string, never>>;
export type QueryOf<E extends Endpoint> = StaticOr<E['querystring'], Record<string, never>>;
export type BodyOf<E extends Endpoint> = StaticOr<E['body'], undefined>;

/** A response described by media types rather than a JSON schema (a download, an image). */
type ContentSpec = { description: string; content: Record<string, { schema: TSchema }> };
type Responses<E extends Endpoint> = E['responses'];
/** The statuses of E whose success body is JSON described by a schema (200, 201 and 202). */
type JsonStatus<E extends Endpoint> = {
  [S in keyof Responses<E>]: S extends 200 | 201 | 202
    ? Responses<E>[S] extends null
      ? never
      : Responses<E>[S] extends ContentSpec
        ? never
        : S
    : never;
}[keyof Responses<E>];
/** The statuses of E whose body is described by media types: a download, sent by the server as a stream or bytes. */
type ContentStatus<E extends Endpoint> = {
  [S in keyof Responses<E>]: Responses<E>[S] extends ContentSpec ? S : never;
}[keyof Responses<E>];

/** The JSON success body of E: the union over its JSON success statuses, `never` when it has none. */
export type JsonReplyOf<E extends Endpoint> = {
  [S in JsonStatus<E>]: Responses<E>[S] extends TSchema ? Static<Responses<E>[S]> : never;
}[JsonStatus<E>];
/** Whether E declares `status` without a body (204 No Content, 304 Not Modified). */
export type HasEmpty<E extends Endpoint, Status extends number> = Status extends keyof Responses<E>
  ? Responses<E>[Status] extends null
    ? true
    : false
  : false;
/** Whether E answers with a body described by media types (a download) at some status. */
export type HasContent<E extends Endpoint> = [ContentStatus<E>] extends [never] ? false : true;

/**
 * What a client reads from E's success answer: its JSON body; `unknown` for a download (not
 * JSON); `undefined` when no success answer has a body.
 */
export type ReplyOf<E extends Endpoint> = [JsonStatus<E>] extends [never]
  ? HasContent<E> extends true
    ? unknown
    : undefined
  : JsonReplyOf<E>;

declare const jsonOf: unique symbol;
/**
 * The JSON text of a `T`, serialised from a value the compiler saw to be a `T`: text kept or
 * built ahead and sent as it is stays tied to the reply type it was made from.
 */
export type JsonText<T> = string & { readonly [jsonOf]: T };

/** `value` as JSON text, typed by what it was made from. */
export const jsonText = <T>(value: T): JsonText<T> => JSON.stringify(value) as JsonText<T>;
