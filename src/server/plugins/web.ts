import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';

/**
 * The web interface's policy (UI-1): its own scripts, styles and images only, images also as blob:
 * URLs (screenshots are fetched with the session key, then shown) and data: (the empty favicon);
 * it calls only its own origin and is never framed. No inline script or style is allowed at all.
 */
export const WEB_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; font-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** The addresses of the single-page application: each answers its index.html, so a deep link from a CI log opens its page. */
export const WEB_PATHS = [
  '/',
  '/login',
  '/login/sso',
  '/projects',
  '/projects/*',
  '/runs/*',
  '/jobs/*',
  '/tests/*',
  '/devices',
  '/devices/*',
  '/admin/*',
  '/keys',
  '/account',
];

/** The built application: dist/web beside the bundled server, or the repository's dist/web when the server runs from source. */
function webRoot(): string | undefined {
  const candidates = [new URL('../web/', import.meta.url), new URL('../../../dist/web/', import.meta.url)];
  for (const candidate of candidates) {
    const dir = fileURLToPath(candidate);
    if (fs.existsSync(`${dir}index.html`)) return dir;
  }
  return undefined;
}

/**
 * Serves the web interface (UI-1) from the same process: hashed assets under /assets/ as immutable
 * files, and index.html (never cached, with the strict policy) at every page address. Without a
 * build (`npm run build`), those addresses say how to make one.
 */
export const webPlugin = fp(
  async (app: FastifyInstance) => {
    const root = webRoot();
    if (!root) {
      app.log.warn('the web interface is not built (dist/web is missing): run npm run build');
      return;
    }
    const index = fs.readFileSync(`${root}index.html`);
    await app.register(fastifyStatic, {
      root: `${root}assets`,
      prefix: '/assets/',
      decorateReply: false,
      index: false,
      // Vite names every asset by its content hash: a changed file is a new name.
      immutable: true,
      maxAge: '365d',
      serveDotFiles: false,
    });
    const page = async (_request: unknown, reply: FastifyReply) =>
      reply
        .header('content-type', 'text/html; charset=utf-8')
        .header('cache-control', 'no-cache')
        .header('content-security-policy', WEB_CSP)
        .header('x-frame-options', 'DENY')
        .send(index);
    for (const url of WEB_PATHS) app.get(url, page);
  },
  { name: 'attest-web' },
);
