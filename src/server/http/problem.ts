import type { FastifyReply } from 'fastify';
import { type AppError, ERRORS, type ErrorCode, problemType } from '../errors.ts';

/** The RFC 9457 problem body of a code; `request` names the request id as the problem's instance. */
export function toProblem(code: ErrorCode, detail: string, request: { id: string } | undefined, extras: AppError['extras'] = {}) {
  const { status, title } = ERRORS[code];
  return {
    type: problemType(code),
    title,
    status,
    code,
    detail,
    ...(request ? { instance: `urn:attest:request:${request.id}` } : {}),
    ...(extras.errors ? { errors: extras.errors } : {}),
    ...(extras.supportedVersions ? { supportedVersions: extras.supportedVersions } : {}),
    ...(extras.unreachable ? { unreachable: extras.unreachable } : {}),
  };
}

/** Answers a coded error as `application/problem+json`, with the headers it carries (Retry-After, Allow…). */
export function sendProblem(reply: FastifyReply, error: AppError): FastifyReply {
  for (const [name, value] of Object.entries(error.extras.headers ?? {})) reply.header(name, value);
  return reply
    .code(error.status)
    .type('application/problem+json; charset=utf-8')
    .send(JSON.stringify(toProblem(error.code, error.message, reply.request, error.extras)));
}
