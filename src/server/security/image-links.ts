import { createHmac, timingSafeEqual } from 'node:crypto';

// Short-lived signed links to one image (HOOK-14), for the people a webhook or chat message reaches:
// they have no session, so the link carries its own proof. A link names one image, whether it is the
// thumbnail, and when it expires, and its signature is an HMAC-SHA256 of exactly those under the
// instance's `image-links` key (migration 0034, shared by every instance of a cluster;
// services/evidence/image-links.ts reads it). Changing any of them, or reaching past the expiry, makes the
// link worthless.

/** What a link grants: one image, or its thumbnail, until a time. */
export interface ImageLink {
  imageId: string;
  thumbnail: boolean;
  /** Seconds since the epoch. */
  expires: number;
}

const signed = (link: ImageLink) => `image-link.v1\n${link.imageId}\n${link.thumbnail ? 'thumbnail' : 'original'}\n${link.expires}`;

const signatureOf = (key: Buffer, link: ImageLink): Buffer => createHmac('sha256', key).update(signed(link)).digest();

/** The query of the link: `thumbnail=true&expires=…&signature=…`. */
export function imageLinkQuery(key: Buffer, link: ImageLink): string {
  return `${link.thumbnail ? 'thumbnail=true&' : ''}expires=${link.expires}&signature=${signatureOf(key, link).toString('base64url')}`;
}

/** Whether `signature` is the signature of `link` under `key`, and the link has not expired at `nowMs`. */
export function imageLinkHolds(key: Buffer, link: ImageLink, signature: string, nowMs: number): boolean {
  // The text as the link carries it, not its decoding: base64url's last character of a 32-byte
  // value carries two bits no decoder reads, so four spellings decode to one signature, and only
  // the one the server wrote is the link's.
  const given = Buffer.from(signature, 'utf8');
  const expected = Buffer.from(signatureOf(key, link).toString('base64url'), 'utf8');
  // Compared in constant time (AUTH-4); the length of an HMAC is no secret.
  return given.length === expected.length && timingSafeEqual(given, expected) && link.expires * 1000 > nowMs;
}
