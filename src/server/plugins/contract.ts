import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Endpoint } from '../../api/endpoint.ts';
import { v1Endpoints } from '../../api/v1/index.ts';
import type { AppContext } from '../context.ts';
import { keptHandler } from '../http/kept-routes.ts';
import type { RegisteredRoute } from '../routes/route.ts';
import { v1Routes } from '../routes/v1/index.ts';
import { accessHooks } from './access.ts';
import { mayBeLarge } from './compression.ts';
import { multipartParser } from './parsers.ts';

/** An API version: its contract entries and their implementations, registered under `/api/<version>`. */
export interface ApiVersion {
  version: string;
  endpoints: Endpoint[];
  routes: (ctx: AppContext) => RegisteredRoute[];
}

/** Versions served, oldest first. Adding `/api/v2` means adding an entry here (SPEC-1.1). */
export const API_VERSIONS: ApiVersion[] = [{ version: 'v1', endpoints: v1Endpoints, routes: v1Routes }];

/** The Fastify path of a contract path: `{id}` → `:id`, under `/api/<version>`. */
export const routeUrl = (version: string, endpoint: Endpoint) => `/api/${version}${endpoint.path.replace(/\{(\w+)\}/g, ':$1')}`;

/**
 * Registers every contract entry of every version with its implementation. Refuses to start when
 * an entry has no implementation or an implementation no entry.
 */
export const contractPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    const hooks = accessHooks(ctx);
    for (const { version, endpoints, routes } of API_VERSIONS) {
      const impls = routes(ctx);
      const byId = new Map(impls.map((r) => [r.endpoint.operationId, r]));
      const missing = endpoints.filter((e) => !byId.has(e.operationId)).map((e) => e.operationId);
      const extra = impls.filter((r) => !endpoints.includes(r.endpoint)).map((r) => r.endpoint.operationId);
      if (missing.length || extra.length) {
        throw new Error(
          `API ${version}: contract and routes differ (unimplemented: ${missing.join(', ')}; undeclared: ${extra.join(', ')})`,
        );
      }
      const implOf = (endpoint: Endpoint) => byId.get(endpoint.operationId) as RegisteredRoute;
      for (const endpoint of endpoints.filter((e) => !takesMultipart(e))) addRoute(app, version, implOf(endpoint), ctx, hooks);
      // The upload routes in a scope of their own, the only one with the multipart parser and its hooks.
      await app.register(async (uploads) => {
        await uploads.register(multipartParser, { config: ctx.config });
        for (const endpoint of endpoints.filter(takesMultipart)) addRoute(uploads, version, implOf(endpoint), ctx, hooks);
      });
    }
  },
  { name: 'attest-contract' },
);

const takesMultipart = (endpoint: Endpoint) => endpoint.consumes?.includes('multipart/form-data') ?? false;

/** One contract entry's route: its schemas validate input and serialise output, the access hooks run before the handler. */
function addRoute(
  app: FastifyInstance,
  version: string,
  impl: RegisteredRoute,
  ctx: AppContext,
  hooks: ReturnType<typeof accessHooks>,
): void {
  const { endpoint } = impl;
  // Error answers are serialised by the error handler; the schemas here are the success shapes.
  const response: Record<number, unknown> = {};
  for (const [status, spec] of Object.entries(endpoint.responses)) {
    if (spec !== null && !('content' in spec && 'description' in spec)) response[Number(status)] = spec;
  }
  const bodyIsJson = endpoint.body && !endpoint.consumes?.some((t) => t === 'multipart/form-data' || t.startsWith('text/'));
  app.route({
    method: endpoint.method,
    url: routeUrl(version, endpoint),
    config: { route: impl },
    bodyLimit: endpoint.bodyLimit ? ctx.config[endpoint.bodyLimit] : undefined,
    schema: {
      ...(endpoint.params ? { params: endpoint.params } : {}),
      ...(endpoint.querystring ? { querystring: endpoint.querystring } : {}),
      ...(bodyIsJson ? { body: endpoint.body } : {}),
      response,
    },
    // Stored content goes out as stored, and small answers need no hook (compression.ts).
    ...(endpoint.binary || !Object.values(response).some(mayBeLarge) ? { compress: false as const } : {}),
    onRequest: hooks.checkAccess(impl),
    preValidation: hooks.checkOwner(impl),
    // A route that keeps its answers has them served by its keeper, its handler run on a miss only (PERF-8).
    handler: impl.keeps ? keptHandler(impl.keeps, impl.handler) : impl.handler,
  });
}
