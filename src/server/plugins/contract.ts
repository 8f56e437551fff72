import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Endpoint } from '../../api/endpoint.ts';
import { v1Endpoints } from '../../api/v1/index.ts';
import type { AppContext } from '../context.ts';
import type { RouteImpl } from '../routes/route.ts';
import { v1Routes } from '../routes/v1/index.ts';
import { accessHooks } from './access.ts';
import { mayBeLarge } from './compression.ts';

/** An API version: its contract entries and their implementations, registered under `/api/<version>`. */
export interface ApiVersion {
  version: string;
  endpoints: Endpoint[];
  routes: (ctx: AppContext) => RouteImpl[];
}

/** Versions served, oldest first. Adding `/api/v2` means adding an entry here (SPEC-1.1). */
export const API_VERSIONS: ApiVersion[] = [{ version: 'v1', endpoints: v1Endpoints, routes: v1Routes }];

/** The Fastify path of a contract path: `{id}` → `:id`, under `/api/<version>`. */
export const routeUrl = (version: string, endpoint: Endpoint) => `/api/${version}${endpoint.path.replace(/\{(\w+)\}/g, ':$1')}`;

/**
 * Registers every contract entry of every version with its implementation: the schemas validate
 * input and serialise output, the access hooks run before the handler. Refuses to start when an
 * entry has no implementation or an implementation no entry.
 */
export const contractPlugin = fp(
  async (app: FastifyInstance, { ctx }: { ctx: AppContext }) => {
    const { checkAccess, checkOwner } = accessHooks(ctx);
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
      for (const endpoint of endpoints) {
        const impl = byId.get(endpoint.operationId) as RouteImpl;
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
          onRequest: checkAccess(impl),
          preValidation: checkOwner(impl),
          handler: (request, reply) => impl.handler(request as never, reply),
        });
      }
    }
  },
  { name: 'attest-contract' },
);
