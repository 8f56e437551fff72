import { createHash } from 'node:crypto';

/**
 * RFC 8785 (JSON Canonicalization Scheme) of a parsed JSON value: object members sorted by their
 * names' UTF-16 code units, no whitespace, strings and numbers as ECMAScript's JSON.stringify
 * writes them (which is what RFC 8785 prescribes for both). Parsed request bodies hold only JSON
 * values, so nothing else (undefined, functions, cycles) needs an answer.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    // Numbers that JSON cannot hold never come out of a JSON parser; say so rather than write "null".
    if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError('RFC 8785 has no form for a non-finite number');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined);
  // The default sort compares UTF-16 code units, exactly as RFC 8785 section 3.2.3 asks.
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([name, item]) => `${JSON.stringify(name)}:${canonicalJson(item)}`).join(',')}}`;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * The SHA-256 of a request body's canonical JSON (RFC 8785), to tell a retry (the same content
 * again, in whatever key order) from a reuse of its idempotency key with another body.
 */
export const bodyFingerprint = (body: unknown): string => sha256(canonicalJson(body));

/**
 * Whether a stored fingerprint is this body's. Keys stored before fingerprints were canonical
 * hold the SHA-256 of `JSON.stringify` of the parsed body (keys in the order sent): a retry that
 * spans the upgrade resends the same bytes, so it matches that form and still replays.
 */
export const fingerprintMatches = (stored: string | null, body: unknown): boolean =>
  stored !== null && (stored === bodyFingerprint(body) || stored === sha256(JSON.stringify(body)));
