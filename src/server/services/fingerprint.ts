import { createHash } from 'node:crypto';

/**
 * The SHA-256 of a parsed request body, to tell a retry (the same body again) from a reuse of its
 * idempotency key with another body. Retries resend the same bytes, so the same key order.
 */
export const bodyFingerprint = (body: unknown): string => createHash('sha256').update(JSON.stringify(body)).digest('hex');
