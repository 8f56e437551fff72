import assert from 'node:assert/strict';
import { ApiError } from '../../src/client/index.ts';
import type { RawResponse } from './http.ts';

/** An `assert.rejects` predicate: the call failed with this status and problem code. */
export const isProblem = (status: number, code: string) => (e: ApiError) => e.status === status && e.code === code;

/** The JSON pointer of the first field a 400 names. */
export const firstPointer = (e: ApiError) => (e.problem.errors as { pointer: string }[] | undefined)?.[0]?.pointer;

/** What a problem body must never show: stack frames, SQL errors, server paths, the libraries underneath. */
export const LEAKS = [
  /\bat .+:\d+:\d+\)?/, // stack frames
  /SQLITE_|syntax error|no such (table|column)|relation "|duplicate key|violates .* constraint/i,
  /\/(home|var|tmp|usr|work|root|opt)\//,
  /node_modules|\.ts\b|FST_|fastify|kysely|better-sqlite3|ajv/i,
];

/** The error contract: problem+json whose `status` is the HTTP status, with type, title, code, and `instance` naming the request id. */
export function assertProblem(raw: RawResponse, status: number, code?: string): void {
  assert.equal(raw.status, status, raw.text);
  assert.match(String(raw.headers['content-type']), /^application\/problem\+json; charset=utf-8$/);
  assert.equal(raw.json.status, status);
  assert.equal(typeof raw.json.type, 'string');
  assert.ok(String(raw.json.type).length > 0);
  assert.equal(typeof raw.json.title, 'string');
  assert.match(String(raw.json.code), /^[A-Z_]+$/);
  if (code) assert.equal(raw.json.code, code);
  const requestId = raw.headers['x-request-id'];
  assert.match(String(requestId), /^[0-9a-f-]{36}$/);
  // RFC 9457 wants a URI reference; the request id is wrapped in a URN, and is the X-Request-Id value.
  assert.equal(raw.json.instance, `urn:attest:request:${requestId}`);
  assert.equal(raw.headers['x-content-type-options'], 'nosniff');
  for (const leak of LEAKS) assert.doesNotMatch(raw.text, leak, `the problem body leaks internals: ${raw.text}`);
}

/** An `assert.rejects` validator: the call failed with an ApiError of this status (and problem code), saying which it got if not. */
export const rejectsWith = (status: number, code?: string) => (e: unknown) => {
  assert.ok(e instanceof ApiError, `expected an ApiError, got ${String(e)}`);
  assert.equal(e.status, status, `${e.status} ${e.code}: ${String(e.problem.detail)}`);
  if (code) assert.equal(e.code, code);
  return true;
};

/** Status and problem body of a refused call, minus the per-request `instance` (checked to name the request). */
export async function refusalOf(call: Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof ApiError, String(error));
    const { instance, ...rest } = error.problem;
    assert.match(String(instance), /^urn:attest:request:/);
    return { status: error.status, ...rest };
  }
  throw new assert.AssertionError({ message: 'the call succeeded' });
}

/** The first field error of a 400, pointer and message. */
export const firstError = (e: ApiError) => (e.problem.errors as { pointer: string; message: string }[] | undefined)?.[0];
