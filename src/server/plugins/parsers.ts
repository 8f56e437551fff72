import accepts from '@fastify/accepts';
import multipart from '@fastify/multipart';
import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import sjson from 'secure-json-parse';
import { IMPORT_BODY_TYPES } from '../../api/v1/imports.ts';
import { GHERKIN_MEDIA_TYPE } from '../../api/v1/tests.ts';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { rejectNulCharacters } from '../validation.ts';

/** Whether the addressed operation takes its body as bytes: an import, whose contract lists the report types. */
function takesReportBody(request: FastifyRequest): boolean {
  const endpoint = (request.routeOptions?.config as { route?: { endpoint?: { consumes?: string[] } } } | undefined)?.route?.endpoint;
  return endpoint?.consumes?.includes('application/zip') ?? false;
}

/**
 * An XML or ZIP report body, read as Fastify's `parseAs: 'buffer'` does (the route's bodyLimit, a
 * Content-Length that must match) but copied as it arrives into one buffer of the announced length:
 * Fastify keeps every chunk and joins them at the end, two copies of a 60 MB import at once and one
 * long copy on the event loop (IMP-7). A body without a length is joined at the end, as before.
 */
function readReportBody(
  request: FastifyRequest,
  payload: NodeJS.ReadableStream,
  done: (error: Error | null, body?: unknown) => void,
): void {
  const limit = request.routeOptions.bodyLimit ?? Number.POSITIVE_INFINITY;
  const declared = request.headers['content-length'] === undefined ? Number.NaN : Number(request.headers['content-length']);
  if (declared > limit) {
    done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
    return;
  }
  const body = Number.isSafeInteger(declared) && declared >= 0 ? Buffer.allocUnsafe(declared) : undefined;
  const chunks: Buffer[] = [];
  let received = 0;
  const finish = (error: Error | null, value?: Buffer) => {
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', onEnd);
    done(error, value);
  };
  function onData(chunk: Buffer | string) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (received + bytes.length > limit) finish(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
    else if (body && received + bytes.length > body.length) finish(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
    else {
      if (body) bytes.copy(body, received);
      else chunks.push(bytes);
      received += bytes.length;
    }
  }
  function onEnd(error?: Error & { statusCode?: number }) {
    if (error) {
      if (!(typeof error.statusCode === 'number' && error.statusCode >= 400)) error.statusCode = 400;
      finish(error);
    } else if (body && received !== body.length) finish(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
    else finish(null, body ?? Buffer.concat(chunks, received));
  }
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onEnd);
  payload.resume();
}

/** The 415 Fastify gives for a type no parser takes; the error handler words it for the operation. */
const unsupported = () => Object.assign(new Error('unsupported media type'), { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415 });

/**
 * Body parsers for exactly the bodies some route accepts: JSON, a Gherkin feature text (creating
 * a test), and report files (XML, JSON, ZIP) as bytes for imports. Every other Content-Type is a
 * 415, and so is a report type on any route but an import. Multipart uploads are parsed only on
 * the routes that take them (`multipartParser`).
 */
export const parsersPlugin = fp(
  async (app: FastifyInstance) => {
    app.removeAllContentTypeParsers();
    // JSON, with an empty body allowed: clients send Content-Type: application/json on GET and
    // DELETE too (SPEC-1.2). Prototype-poisoning keys are refused rather than stripped.
    // Imports take their report as bytes (kept as uploaded, and its SHA-256 is the idempotency
    // check), so JSON there is not parsed here; XML and ZIP are taken by imports only.
    app.addContentTypeParser(
      [...IMPORT_BODY_TYPES.filter((t) => t !== 'application/json'), 'application/x-zip-compressed'],
      (req, payload, done) => (takesReportBody(req) ? readReportBody(req, payload, done) : done(unsupported(), undefined)),
    );
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
      if (takesReportBody(req)) return done(null, body);
      const text = (body as Buffer).toString('utf8');
      if (text.trim() === '') return done(null, undefined);
      try {
        const parsed: unknown = sjson.parse(text, { protoAction: 'error', constructorAction: 'error' });
        // PostgreSQL text cannot hold U+0000, so it is refused for every dialect alike; the deep
        // check only runs when the raw text could contain one.
        if (text.includes('\\u0000') || text.includes('\0')) rejectNulCharacters(parsed, '/body');
        done(null, parsed);
      } catch (error) {
        if (error instanceof AppError) return done(error, undefined);
        const message = (error as Error).message;
        if (/prototype|constructor/i.test(message)) {
          done(new AppError('INVALID_INPUT', 'The body holds a forbidden "__proto__" or "constructor.prototype" key.'), undefined);
        } else {
          done(Object.assign(new Error('invalid JSON'), { code: 'FST_ERR_CTP_INVALID_JSON_BODY', statusCode: 400 }), undefined);
        }
      }
    });
    app.addContentTypeParser(GHERKIN_MEDIA_TYPE, { parseAs: 'string' }, (_req, body, done) => {
      try {
        rejectNulCharacters(body, '/body');
        done(null, body);
      } catch (error) {
        done(error as AppError, undefined);
      }
    });

    await app.register(accepts);
  },
  { name: 'attest-parsers' },
);

/**
 * Multipart uploads, registered by the contract in a scope holding only the routes that take them
 * (an artifact upload, an import). @fastify/multipart gives every route of its scope two async
 * hooks (an `onRequest` that listens for the socket closing, an `onResponse` that cleans up saved
 * files, which Attest never saves): on every other route they only cost two promises and a
 * listener per request, about 6% of a 304's CPU (docs/performance.md). Elsewhere a multipart body is a
 * 415 naming the types the operation takes.
 *
 * Uploads stream part by part (never buffered whole). busboy's own defaults are unlimited, so
 * every limit is set (FILE-8). fileSize is one byte over the largest file allowed: the upload code
 * counts bytes itself and refuses a file with 413 as soon as it passes its limit (smaller for
 * images), before the truncated remainder could be mistaken for a whole file.
 */
export const multipartParser = fp(
  async (app: FastifyInstance, { config }: { config: Config }) => {
    await app.register(multipart, {
      limits: {
        fileSize: Math.max(config.maxArtifactBytes, config.maxImageBytes) + 1,
        files: 10,
        parts: 20,
        fields: 10,
        fieldSize: 64 * 1024,
        fieldNameSize: 100,
        headerPairs: 100,
      },
    });
  },
  { name: 'attest-multipart' },
);
