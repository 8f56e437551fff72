import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EXPORT_FORMATS } from '../../api/v1/results.ts';
import { ApiError, AttestClient, v1 } from '../../client/index.ts';
import {
  downloadOf,
  type ExportFile,
  type ExportInput,
  type ExportSources,
  planAttachments,
  planImages,
  readRunAnswers,
  zipOf,
} from '../../export/index.ts';
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

/** A client that calls this server in process with the caller's own credentials. */
export function callerClient(request: FastifyRequest): AttestClient {
  return new AttestClient({
    baseUrl: 'http://attest.internal',
    apiKey: header(request, 'service.api-token'),
    user: header(request, 'service.user'),
    fetch: selfFetch(request.server),
    retry: { attempts: 1 },
  });
}

/** Reads answers with the caller's client; the caller's problem becomes this answer's problem. */
export async function asCaller<T>(work: Promise<T>): Promise<T> {
  return work.catch((error: unknown) => {
    throw asAppError(error);
  });
}

/**
 * Where the writers read bytes: the image route for images, the content route for other files;
 * and whether any of those bytes have come yet (see sendDownload).
 */
export function callerSources(
  client: AttestClient,
  xrayProject: string | undefined,
): { sources: ExportSources; evidenceRead: () => boolean } {
  let evidenceRead = false;
  const read = async (path: string) => {
    const response = await client.fetchRaw('GET', path);
    if (!response.ok) await AttestClient.read(response);
    const bytes = new Uint8Array(await response.arrayBuffer());
    evidenceRead = true;
    return bytes;
  };
  return {
    sources: {
      exporter: `attest-server ${APP_VERSION}`,
      ...(xrayProject ? { xrayProject } : {}),
      bytes: (image) => read(client.pathOf(v1.images.getImage, { params: { imageId: image.imageId } })),
      attachmentBytes: (file) => read(client.pathOf(v1.artifacts.getArtifactContent, { params: { artifactId: file.artifactId } })),
    },
    evidenceRead: () => evidenceRead,
  };
}

/**
 * How JUnit is wanted: `zip` when the Accept header prefers `application/zip`, `xml` when it prefers
 * XML; neither for anything else (`*\/*`, none), which leaves the choice to whether there are files.
 */
export function junitWanted(request: FastifyRequest): { zip?: boolean; xml?: boolean } {
  const accept = request.headers.accept;
  if (accept === undefined || !/zip|xml/i.test(accept)) return {};
  const preferred = request.accepts().type(['application/zip', 'application/xml', 'text/xml']);
  if (preferred === 'application/zip') return { zip: true };
  if (preferred === 'application/xml' || preferred === 'text/xml') return { xml: true };
  return {};
}

/** How much of an export is read ahead at most before its answer starts (see sendDownload). */
const READ_AHEAD_BYTES = 4 * 1024 * 1024;

/**
 * Streams a download: a ZIP for folder formats, else the one file, as an attachment with a
 * sandboxing CSP. Before the answer starts, the download is read ahead until its first image or
 * file has come (`evidenceRead`), it ends, or READ_AHEAD_BYTES are read: a blob store that is down
 * then makes the request a 503 with Retry-After (SCALE-1), as a download's would, instead of a 200
 * cut off at its first screenshot. The bound keeps memory small for an export with much text before
 * its first image (a job whose first runs have none); such an export, like any download under way,
 * is cut off when the store fails after its answer started.
 */
export async function sendDownload(
  request: FastifyRequest,
  reply: FastifyReply,
  download: { files: ExportFile[]; archive: boolean },
  base: string,
  context: Record<string, unknown>,
  evidenceRead: () => boolean,
) {
  const { files, archive } = download;
  const single = files[0];
  const [type, name, chunks] =
    archive || !single
      ? ['application/zip', `${base}.zip`, zipOf(files)]
      : [single.type, `${base}.${single.path.split('.').pop()}`, single.chunks()];
  const rest = (chunks as AsyncIterable<Uint8Array | string>)[Symbol.asyncIterator]();
  const ahead: (Uint8Array | string)[] = [];
  for (let size = 0; !evidenceRead() && size < READ_AHEAD_BYTES; ) {
    const next = await asCaller(rest.next());
    if (next.done) break;
    ahead.push(next.value);
    size += next.value.length;
  }
  const body = Readable.from(
    (async function* () {
      yield* ahead.splice(0);
      for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value;
    })(),
    { objectMode: false },
  );
  body.on('error', (error) => request.log.error({ err: error, ...context }, 'the export stopped midway'));
  return reply
    .type(type)
    .header('content-disposition', `attachment; filename="${name}"`)
    .header('content-security-policy', SANDBOX_CSP)
    .header('cache-control', 'no-store')
    .send(body);
}

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
  const client = callerClient(request);
  const answers = await asCaller(readRunAnswers(client, testRunId, { partial: options.partial }));
  const { sources, evidenceRead } = callerSources(client, options.xrayProject);
  const input: ExportInput = { answers, images: planImages(answers), attachments: planAttachments(answers), folder: '', ...sources };
  const download = downloadOf(format, { run: input }, junitWanted(request));
  return sendDownload(request, reply, download, `attest-run-${testRunId.slice(0, 8)}-${format}`, { testRunId, format }, evidenceRead);
}
