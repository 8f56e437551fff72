import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.ts';
import { publishedDocument } from '../openapi/document.ts';
import { FILTER_MAX, renderReferencePage } from '../openapi/reference-page.ts';
import { APP_VERSION } from '../version.ts';
import { requireJsonAccept } from './access.ts';
import { API_VERSIONS, type ApiVersion } from './contract.ts';

/** The reference page runs no script: nothing but its own inline style, and its filter form posts back to itself. */
export const REFERENCE_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'";

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
    // open. It describes the current version; the full page is rendered on first request and kept.
    // `?filter=` (the page's filter box, a plain form) renders only the matching operations, so the
    // page needs no script and its CSP allows none.
    const current = API_VERSIONS[API_VERSIONS.length - 1] as ApiVersion;
    let referencePage: string | undefined;
    app.get('/docs/api', async (request, reply) => {
      const referenceDocument = publishedDocument(current.endpoints, current.version).document;
      const raw = (request.query as Record<string, unknown> | undefined)?.filter;
      const filter = typeof raw === 'string' ? raw.slice(0, FILTER_MAX) : '';
      if (!filter.trim()) referencePage ??= renderReferencePage(referenceDocument);
      const page = filter.trim() ? renderReferencePage(referenceDocument, filter) : referencePage;
      return reply.type('text/html; charset=utf-8').header('content-security-policy', REFERENCE_PAGE_CSP).send(page);
    });
  },
  { name: 'attest-open-routes' },
);
