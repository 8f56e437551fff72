import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { ErrorObject } from 'ajv';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { BlobStorageError } from '../blob/blob-store.ts';
import { isDatabaseUnavailable } from '../db/errors.ts';
import { AppError, ERRORS, type ErrorCode, type FieldError } from '../errors.ts';
import {
  answeredClientError,
  answerUnderWay,
  continueWhenBodyIsRead,
  drainsRefusedBody,
  endLingering,
  type LingerLimits,
  lingerAfterClientError,
  lingerBeforeAnswer,
  trackResponses,
} from '../http/lingering-close.ts';
import { sendProblem, toProblem } from '../http/problem.ts';
import { fieldErrors as describeErrors } from '../validation.ts';

const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'headers' };

/** Turns Ajv errors into field errors with JSON pointers (`/body/steps/3/title`). */
function fieldErrors(error: FastifyError): FieldError[] {
  const part = PART_NAMES[error.validationContext ?? 'body'] ?? 'body';
  return describeErrors(`/${part}`, (error.validation ?? []) as ErrorObject[]);
}

/** What the addressed operation's contract says about its body (the route config holds its endpoint). */
function bodyRules(request: FastifyRequest): { consumes: string[]; bulk: boolean; limit: number | undefined } {
  const endpoint = (request.routeOptions?.config as { route?: { endpoint?: { consumes?: string[]; bodyLimit?: string } } } | undefined)
    ?.route?.endpoint;
  return {
    consumes: endpoint?.consumes ?? ['application/json'],
    bulk: endpoint?.bodyLimit === 'bulkBodyLimit',
    limit: request.routeOptions?.bodyLimit,
  };
}

/** A 415 that names the Content-Type(s) the operation takes. */
function unsupportedMediaType(request: FastifyRequest): AppError {
  const { consumes } = bodyRules(request);
  const types = consumes.join(' or ');
  const what = consumes.includes('multipart/form-data') ? ' (the metadata part first, then the file parts)' : '';
  return new AppError('UNSUPPORTED_MEDIA_TYPE', `This operation takes a body of type ${types}${what}: send Content-Type: ${types}.`);
}

/** A 413 that gives the limit in bytes and what to do instead. */
function payloadTooLarge(request: FastifyRequest, code: string | undefined): AppError {
  const { consumes, bulk, limit } = bodyRules(request);
  // Multipart limits (files, parts, fields): the upload's own checks answer with the byte limits first.
  if (consumes.includes('multipart/form-data') || code !== 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new AppError(
      'PAYLOAD_TOO_LARGE',
      'The upload is over its limits: one metadata part, then the file parts its kind takes, each file within ATTEST_MAX_ARTIFACT_BYTES (images: ATTEST_MAX_IMAGE_BYTES); send each artifact as its own upload.',
    );
  }
  const size = limit === undefined ? 'the configured limit' : `this operation's limit of ${limit} bytes`;
  const advice = bulk
    ? 'split the steps and cells over several posts (POST /testmgmt/testruns/{testRunId}/results appends to a running run)'
    : 'send less in one request; results and text go to POST /testmgmt/testruns/{testRunId}/results, which takes up to ATTEST_BULK_BODY_LIMIT bytes, in as many posts as needed';
  return new AppError('PAYLOAD_TOO_LARGE', `The request body is larger than ${size}; ${advice}.`);
}

/** Maps any thrown error onto the problem catalogue; unknown errors are logged and become a bare 500. */
export function classifyError(error: FastifyError | AppError | Error, request: FastifyRequest): AppError {
  if (error instanceof AppError) return error;
  // The blob store failed while reading (a download, an image, a thumbnail): the store is down or
  // slow, not the request wrong. Uploads map their own (services/evidence/writer.ts uploadFailure).
  if (error instanceof BlobStorageError) {
    request.log.error({ err: error }, 'the blob store failed');
    return new AppError('UNAVAILABLE', 'The storage is not reachable right now; retry later.', { headers: { 'retry-after': '5' } });
  }
  // The database is down, cut off or out of connections: retry later, as for the blob store (DUR-15).
  if (isDatabaseUnavailable(error)) {
    request.log.error({ err: error }, 'the database did not answer');
    return new AppError('UNAVAILABLE', 'The database is not reachable right now; retry later.', { headers: { 'retry-after': '5' } });
  }
  const e = error as FastifyError;
  if (e.validation) {
    const errors = fieldErrors(e);
    const first = errors[0];
    return new AppError('INVALID_INPUT', first ? `${first.pointer}: ${first.message}` : 'The request is invalid.', { errors });
  }
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('MALFORMED_JSON', 'The body is not valid JSON.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('INVALID_INPUT', 'The body is empty; this operation needs a JSON body.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
    case 'FST_REQ_FILE_TOO_LARGE':
    case 'FST_FILES_LIMIT':
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return payloadTooLarge(request, e.code);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return unsupportedMediaType(request);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('INVALID_INPUT', 'The Content-Length does not match the body.');
  }
  if (e.statusCode === 429) return new AppError('RATE_LIMITED', 'Too many requests; retry after the time in Retry-After.');
  if (e.statusCode === 408) return new AppError('REQUEST_TIMEOUT');
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    const code = (Object.keys(ERRORS) as ErrorCode[]).find((c) => ERRORS[c].status === e.statusCode) ?? 'INVALID_INPUT';
    return new AppError(code, ERRORS[code].title);
  }
  request.log.error({ err: error }, 'unhandled error');
  return new AppError('INTERNAL', 'An internal error occurred; quote the instance id when reporting it.');
}

/**
 * Fastify's `frameworkErrors`: a malformed percent-encoding or an over-long path segment fails
 * before routing; it is answered as a problem too, instead of Fastify's own JSON (which also echoes
 * the whole path back). These replies skip the onSend hooks, so they set the headers every answer
 * carries themselves.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const detail = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path segment is longer than any id.' : 'The URL is not validly encoded.';
  reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff').header('cache-control', 'no-store');
  sendProblem(reply, new AppError('INVALID_INPUT', detail, { errors: [{ pointer: '/path', message: detail }] }));
}

/**
 * Fastify's `clientErrorHandler`: requests Node cannot parse (or that time out) never reach
 * Fastify's handlers; they are answered as problems too, on the raw socket, and what the client
 * still sends is read and dropped before the connection closes (LOAD-4b, `lingerAfterClientError`).
 * `lingering` is the errors plugin's set, so a shutting-down server ends those sockets too.
 */
export function clientErrorAnswerer(log: () => FastifyBaseLogger, limits: LingerLimits, lingering: Set<Socket>) {
  return (error: NodeJS.ErrnoException, socket: Socket): void => {
    // A refused request's further bytes, each reported again by Node's failed parser, are dropped
    // until the client has sent them all; then, or on a reset, the connection goes.
    if (answeredClientError(socket)) {
      if (socket.readableEnded || error.code === 'ECONNRESET') socket.destroy();
      return;
    }
    const code: ErrorCode =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? 'HEADERS_TOO_LARGE'
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? 'REQUEST_TIMEOUT'
          : 'INVALID_INPUT';
    // Like Node's own handler: never write a second status line into a response already under way,
    // nor after a refused request's answer while the rest of its body is dropped (LOAD-4b).
    if (!socket.writable || error.code === 'ECONNRESET' || answerUnderWay(socket) || drainsRefusedBody(socket)) {
      socket.destroy();
      return;
    }
    // No request object exists here, but the answer still names an id like every other problem,
    // and a log line under that id says what happened (a timed-out request logs nothing else).
    const id = randomUUID();
    log().info({ reqId: id, code: error.code, status: ERRORS[code].status, remoteAddress: socket.remoteAddress }, 'client error answered');
    const body = JSON.stringify(toProblem(code, ERRORS[code].title, { id }));
    socket.end(
      `HTTP/1.1 ${ERRORS[code].status} ${ERRORS[code].title}\r\nContent-Type: application/problem+json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Content-Type-Options: nosniff\r\nX-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
    );
    // A timed-out request has nothing more worth waiting for.
    if (code !== 'REQUEST_TIMEOUT') lingerAfterClientError(socket, limits, lingering);
  };
}

/** Whether the request has a body that was not read to its end. */
export function hasUnreadBody(request: FastifyRequest): boolean {
  const { headers, raw } = request;
  const declared = headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
  return declared && !raw.readableEnded;
}

/**
 * The one error handler: coded errors become RFC 9457 problems, anything else a logged, bare 500.
 * It also owns what an early refusal does to its connection: `100 Continue` only once the body is
 * read (LOAD-4c), and a lingering close for a body refused unread (LOAD-4b).
 */
export const errorsPlugin = fp(
  async (app: FastifyInstance, { limits, lingering }: { limits: LingerLimits; lingering: Set<Socket> }) => {
    continueWhenBodyIsRead(app.server);
    trackResponses(app.server);
    // Shutting down, the server stops reading refused bodies rather than waiting out their linger.
    app.addHook('preClose', (done) => {
      endLingering(lingering);
      done();
    });
    app.setErrorHandler(async (error, request, reply) => {
      const problem = classifyError(error as Error, request);
      // Every 503 tells clients when to come back, whether or not the thrower chose a delay.
      if (problem.status === 503 && !problem.extras.headers?.['retry-after']) reply.header('retry-after', '5');
      // Refused before its body was read to the end (an early 401, 403, 404, 413, 415, 429 or 507):
      // the rest of the body is read and dropped, bounded, so the client reads the answer instead
      // of a reset, and a slow body cannot hold the connection up to the request timeout (LOAD-4b).
      // A `Connection: close` set by a handler would make Node close the socket on the unread bytes
      // at once: it is taken back, and only with lingering off (ATTEST_LINGER_MS=0) is one sent.
      if (hasUnreadBody(request)) {
        if (reply.hasHeader('connection')) reply.removeHeader('connection');
        if (await lingerBeforeAnswer(request.raw, limits, lingering)) reply.header('connection', 'close');
      }
      return sendProblem(reply, problem);
    });
  },
  { name: 'attest-errors' },
);
