import type { ServiceContext } from '../../context.ts';
import { findSigningKey } from '../../db/repositories/signing-keys.ts';
import { type ImageLink, imageLinkHolds, imageLinkQuery } from '../../security/image-links.ts';

// The signed image links of webhook and chat messages (HOOK-14, security/image-links.ts), under the
// instance's `image-links` key, read where it is used (one primary-key read for a message's links,
// one for an opened link), so no instance ever holds a copy to keep right.

/** The query of a link to each image's thumbnail, expiring `imageLinkTtlSeconds` from now: the key read once. */
export async function signedThumbnailQueries(
  ctx: Pick<ServiceContext, 'db' | 'clock' | 'config'>,
  imageIds: Iterable<string>,
): Promise<Map<string, string>> {
  const ids = [...new Set(imageIds)];
  if (ids.length === 0) return new Map();
  const key = await findSigningKey(ctx.db, 'image-links');
  const expires = Math.floor(ctx.clock().getTime() / 1000) + ctx.config.imageLinkTtlSeconds;
  return new Map(ids.map((imageId) => [imageId, imageLinkQuery(key, { imageId, thumbnail: true, expires })]));
}

/** Whether the link's signature is this instance's and the link has not expired. */
export async function imageLinkValid(ctx: Pick<ServiceContext, 'db' | 'clock'>, link: ImageLink, signature: string): Promise<boolean> {
  return imageLinkHolds(await findSigningKey(ctx.db, 'image-links'), link, signature, ctx.clock().getTime());
}
