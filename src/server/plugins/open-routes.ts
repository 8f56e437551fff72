import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.ts';
import { buildOpenApiDocument } from '../openapi/document.ts';
import { renderReferencePage } from '../openapi/reference-page.ts';
import { APP_VERSION } from '../version.ts';
import { requireJsonAccept } from './access.ts';
import { API_VERSIONS, type ApiVersion } from './contract.ts';

/**
 * The open routes outside the versioned contract: `GET /api` (the versions), `GET /health`, and
 * the API reference page at `/docs/api`. The JSON ones negotiate like every contract route.
 */
export const openRoutesPlugin = fp(
  async (app: FastifyInstance, { config }: { config: Config }) => {
    const jsonOnly = { onRequest: async (request: FastifyRequest) => requireJsonAccept(request) };
    app.get('/api', jsonOnly, async (request) => {
      const base = config.publicUrl ?? `${request.protocol}://${request.host}`;
      return {
        versions: API_VERSIONS.map((v, i) => ({
          version: v.version,
          url: `${base}/api/${v.version}`,
          status: i === API_VERSIONS.length - 1 ? 'current' : 'supported',
        })),
        current: API_VERSIONS[API_VERSIONS.length - 1]?.version,
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
  },
  { name: 'attest-open-routes' },
);
