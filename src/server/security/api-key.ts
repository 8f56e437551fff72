import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { IS_UUID } from '../../api/common.ts';

// Key formats (SPEC-1.3, AUTH-1..AUTH-4, AUTH-10):
// - standard: `atk_` + 43 base62 characters (32 random bytes) + 6 base62 characters of CRC32
//   over prefix and body. Session keys from the web login use `ats_` and the same layout.
// - legacy: a UUID (8-4-4-4-12 hex) that is only valid together with its owner's e-mail.
// Only SHA-256 digests are stored. The tokens carry 256 (standard) or 122 (UUID) bits of
// entropy, so a fast hash is the right tool: a slow KDF would only add CPU per request.

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const KEY_PREFIXES = { standard: 'atk_', session: 'ats_' } as const;
const BODY_LENGTH = 43;
const CRC_LENGTH = 6;

/** Matches exactly one standard or session key; published for secret scanners (docs/api-keys.md). */
export const STANDARD_KEY_PATTERN = /^at[ks]_[0-9A-Za-z]{49}$/;
export const SECRET_SCANNING_REGEX = String.raw`\bat[ks]_[0-9A-Za-z]{43}[0-9A-Za-z]{6}\b`;
/** Matches exactly one old-format key: a UUID. */
export const LEGACY_KEY_PATTERN = IS_UUID;

function base62(value: bigint, width: number): string {
  let out = '';
  let rest = value;
  while (rest > 0n) {
    out = BASE62[Number(rest % 62n)] + out;
    rest /= 62n;
  }
  return out.padStart(width, '0');
}

function checksum(prefixAndBody: string): string {
  // A CRC32 fits a double exactly: plain arithmetic, no BigInt, on every standard key checked.
  let rest = crc32(prefixAndBody);
  let out = '';
  while (rest > 0) {
    out = BASE62[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out.padStart(CRC_LENGTH, '0');
}

/** Creates a new random key of the given kind. */
export function generateKey(kind: keyof typeof KEY_PREFIXES): string {
  const prefix = KEY_PREFIXES[kind];
  const body = base62(BigInt(`0x${randomBytes(32).toString('hex')}`), BODY_LENGTH);
  return `${prefix}${body}${checksum(prefix + body)}`;
}

/** True when the token has the standard layout and its checksum matches: decided without any lookup. */
export function hasValidChecksum(token: string): boolean {
  if (!STANDARD_KEY_PATTERN.test(token)) return false;
  const split = token.length - CRC_LENGTH;
  return checksum(token.slice(0, split)) === token.slice(split);
}

export type TokenShape = 'standard' | 'session' | 'legacy' | 'invalid';

export function classifyToken(token: string): TokenShape {
  if (token.startsWith(KEY_PREFIXES.standard)) return hasValidChecksum(token) ? 'standard' : 'invalid';
  if (token.startsWith(KEY_PREFIXES.session)) return hasValidChecksum(token) ? 'session' : 'invalid';
  return LEGACY_KEY_PATTERN.test(token) ? 'legacy' : 'invalid';
}

/** Hex SHA-256 of a UTF-8 text; the one-shot `hash` builds no Hash object (it ran on every request). */
function sha256(text: string): string {
  return hash('sha256', text, 'hex');
}

/** The stored digest of a key. Legacy UUIDs are compared case-insensitively, so they are normalised first. */
export function keyDigest(token: string, shape: TokenShape): string {
  return sha256(shape === 'legacy' ? `legacy:${token.toLowerCase()}` : token);
}

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function emailDigest(email: string): string {
  return sha256(`email:${normaliseEmail(email)}`);
}

/** A digest no e-mail produces, compared against when no key matched so both paths do the same work. */
const DUMMY_DIGEST = randomBytes(32);

/** Constant-time comparison of two hex SHA-256 digests; `expected` undefined compares against a dummy. */
export function digestsMatch(actualHex: string, expectedHex: string | null | undefined): boolean {
  const actual = Buffer.from(actualHex, 'hex');
  // A stored value that does not decode to 32 bytes (absent, or a damaged row) compares against
  // the dummy too: the caller gets the usual 401, never an error.
  const decoded = expectedHex ? Buffer.from(expectedHex, 'hex') : undefined;
  const expected = decoded?.length === 32 ? decoded : DUMMY_DIGEST;
  const equal = actual.length === 32 && timingSafeEqual(actual, expected);
  return equal && expected !== DUMMY_DIGEST;
}

/** What the UI shows to recognise a key: prefix and first 4 characters, and the last 4. */
export function displayHint(token: string, shape: TokenShape): string {
  if (shape === 'legacy') return `${token.slice(0, 4)}…${token.slice(-4)}`.toLowerCase();
  return `${token.slice(0, 8)}…${token.slice(-4)}`;
}
