import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import FindMyWay from 'find-my-way';
import { AppError } from '../errors.ts';
import { sendProblem } from '../http/problem.ts';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * Answers what no route matched: an unknown API version is a 404 naming the supported ones
 * (SPEC-1.1); a contract path asked with another method is a 405 with `Allow`; anything else a 404.
 * Registered before the contract routes: it learns their paths as they are added.
 */
export const methodNotAllowedPlugin = fp(
  async (app: FastifyInstance, { versions }: { versions: string[] }) => {
    const paths = FindMyWay();
    app.addHook('onRoute', (route) => {
      if (!route.config?.route) return;
      for (const method of [route.method].flat()) if (method !== 'HEAD') paths.on(method as (typeof METHODS)[number], route.url, () => {});
    });

    app.setNotFoundHandler(async (request, reply) => {
      const path = request.url.split('?')[0] ?? '';
      const versionMatch = /^\/api\/(v\d+)(\/|$)/.exec(path) ?? /^\/api\/([^/]+)\//.exec(path);
      if (versionMatch && !versions.includes(versionMatch[1] ?? '')) {
        return sendProblem(
          reply,
          new AppError('UNSUPPORTED_API_VERSION', `API version "${versionMatch[1]}" does not exist; supported: ${versions.join(', ')}.`, {
            supportedVersions: versions,
          }),
        );
      }
      const allowed: string[] = METHODS.filter((method) => paths.find(method, path) !== null);
      if (allowed.length > 0) {
        if (allowed.includes('GET')) allowed.push('HEAD');
        return sendProblem(
          reply,
          new AppError('METHOD_NOT_ALLOWED', `${request.method} is not allowed here; use ${allowed.join(', ')}.`, {
            headers: { allow: allowed.join(', ') },
          }),
        );
      }
      return sendProblem(reply, new AppError('NOT_FOUND', `No route ${request.method} ${path}.`));
    });
  },
  { name: 'attest-method-not-allowed' },
);
