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
type SuccessStatus<E extends Endpoint> = Extract<keyof E['responses'], 200 | 201>;
export type ReplyOf<E extends Endpoint> =
  SuccessStatus<E> extends never
    ? undefined
    : E['responses'][SuccessStatus<E>] extends TSchema
      ? Static<E['responses'][SuccessStatus<E>]>
      : unknown;
