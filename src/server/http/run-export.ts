import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EXPORT_FORMATS } from '../../api/v1/results.ts';
import { ApiError, AttestClient } from '../../client/index.ts';
import { downloadOf, type ExportInput, planImages, readRunAnswers, zipOf } from '../../export/index.ts';
import { AppError, ERRORS, type ErrorCode } from '../errors.ts';
import { APP_VERSION } from '../version.ts';

/** Statuses whose answer has no body (a `Response` refuses one). */
const NO_BODY = new Set([101, 204, 205, 304]);

/**
 * A `fetch` that answers from this server's own routes in process (Fastify's `inject`): no socket,
 * but every hook a request over the network meets (authentication, access, validation, limits).
 */
export function selfFetch(app: FastifyInstance): typeof fetch {
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(String(input));
    const answer = await app.inject({
      method: (init.method ?? 'GET') as 'GET',
      url: url.pathname + url.search,
      headers: Object.fromEntries(new Headers(init.headers).entries()),
      ...(typeof init.body === 'string' ? { payload: init.body } : {}),
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      for (const one of Array.isArray(value) ? value : [value]) if (one !== undefined) headers.append(name, String(one));
    }
    return new Response(NO_BODY.has(answer.statusCode) ? null : answer.rawPayload, { status: answer.statusCode, headers });
  }) as typeof fetch;
}

const header = (request: FastifyRequest, name: string) => {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
};

/** The caller's problem, as this server would have answered it to the caller directly. */
function asAppError(error: unknown): unknown {
  if (!(error instanceof ApiError)) return error;
  const code = (error.code in ERRORS ? error.code : 'INTERNAL') as ErrorCode;
  return new AppError(code, String(error.problem.detail ?? ERRORS[code].title));
}

const SANDBOX_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox";

/**
 * Answers `GET /testmgmt/testruns/{id}/export`: the documented sequence run in process with the
 * caller's own credentials (so the export holds exactly what the caller may read), then the
 * format's writer, streamed: a ZIP for folder formats, else the one file.
 */
export async function sendRunExport(
  request: FastifyRequest,
  reply: FastifyReply,
  testRunId: string,
  format: (typeof EXPORT_FORMATS)[number],
  options: { partial?: boolean; xrayProject?: string },
) {
  const client = new AttestClient({
    baseUrl: 'http://attest.internal',
    apiKey: header(request, 'service.api-token'),
    user: header(request, 'service.user'),
    fetch: selfFetch(request.server),
    retry: { attempts: 1 },
  });
  const answers = await readRunAnswers(client, testRunId, { partial: options.partial }).catch((error: unknown) => {
    throw asAppError(error);
  });
  const input: ExportInput = {
    answers,
    images: planImages(answers),
    exporter: `attest-server ${APP_VERSION}`,
    xrayProject: options.xrayProject,
    bytes: async (image) => {
      const response = await client.fetchRaw('GET', `/images/${image.imageId}`);
      if (!response.ok) await AttestClient.read(response);
      return new Uint8Array(await response.arrayBuffer());
    },
  };
  const { files, archive } = downloadOf(format === 'zip' ? 'bundle' : format, input);
  const base = `attest-run-${testRunId.slice(0, 8)}-${format}`;
  const single = files[0];
  const [type, name, chunks] =
    archive || !single
      ? ['application/zip', `${base}.zip`, zipOf(files)]
      : [single.type, `${base}.${single.path.split('.').pop()}`, single.chunks()];
  const body = Readable.from(chunks, { objectMode: false });
  body.on('error', (error) => request.log.error({ err: error, testRunId, format }, 'the export stopped midway'));
  return reply
    .type(type)
    .header('content-disposition', `attachment; filename="${name}"`)
    .header('content-security-policy', SANDBOX_CSP)
    .header('cache-control', 'no-store')
    .send(body);
}
