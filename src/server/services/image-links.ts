import type { ServiceContext } from '../context.ts';
import { findSigningKey } from '../db/repositories/signing-keys.ts';
import type { DB } from '../db/types.ts';
import { type ImageLink, imageLinkHolds, imageLinkQuery } from '../security/image-links.ts';

// The signed image links of webhook and chat messages (HOOK-14, security/image-links.ts), with the
// instance's key, which never changes once made: read once per database.

const keys = new WeakMap<DB, Promise<Buffer>>();

function imageLinkKey(db: DB): Promise<Buffer> {
  let key = keys.get(db);
  if (!key) {
    key = findSigningKey(db, 'image-links');
    // A failed read is not kept: the next link asks again.
    key.catch(() => keys.delete(db));
    keys.set(db, key);
  }
  return key;
}

/** The query of a link to the image (or its thumbnail) that expires `imageLinkTtlSeconds` from now. */
export async function signedImageQuery(
  ctx: Pick<ServiceContext, 'db' | 'clock' | 'config'>,
  imageId: string,
  thumbnail: boolean,
): Promise<string> {
  const expires = Math.floor(ctx.clock().getTime() / 1000) + ctx.config.imageLinkTtlSeconds;
  return imageLinkQuery(await imageLinkKey(ctx.db), { imageId, thumbnail, expires });
}

/** Whether the link's signature is this instance's and the link has not expired. */
export async function imageLinkValid(ctx: Pick<ServiceContext, 'db' | 'clock'>, link: ImageLink, signature: string): Promise<boolean> {
  return imageLinkHolds(await imageLinkKey(ctx.db), link, signature, ctx.clock().getTime());
}
