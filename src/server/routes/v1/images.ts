import type { FastifyRequest } from 'fastify';
import * as api from '../../../api/v1/images.ts';
import type { AppContext } from '../../context.ts';
import type { ImagesTable } from '../../db/types.ts';
import { AppError, found } from '../../errors.ts';
import { imageLinkValid } from '../../services/evidence/image-links.ts';
import { originalDownload, thumbnailDownload } from '../../services/evidence/images.ts';
import { keptVisibleImage, learnVisibleImage, type VisibleImage } from '../image-access.ts';
import { route, sentBlob, uuidPathParam } from '../route.ts';

export function imageRoutes(ctx: AppContext) {
  const learned = (request: FastifyRequest, visible: VisibleImage | undefined): string | undefined => {
    if (!visible) return undefined;
    request.ownerRow = visible.image;
    return visible.projectId;
  };
  return [
    route(api.getImage, {
      // Images are shared by content across projects: the owner is any project the caller can
      // see that uses the image; when there is none the image answers 404 like an unknown id.
      // What is kept answers in the same tick (PERF-6); anything else waits for the database.
      owner: (request) => {
        const id = uuidPathParam(request, 'imageId');
        const visible = request.principal?.projects;
        if (visible === undefined) return undefined;
        return (
          learned(request, keptVisibleImage(ctx, id, visible)) ??
          learnVisibleImage(ctx, id, visible).then((image) => learned(request, image))
        );
      },
      // The image itself is answered in the same tick when it needs no read (a 304, a hot image).
      handler: (request, reply) => {
        const image = request.ownerRow as ImagesTable | undefined;
        if (request.query.thumbnail !== true) return sentBlob(ctx, request, reply, originalDownload(found(image, 'The image')));
        return thumbnailDownload(ctx, image).then((download) => sentBlob(ctx, request, reply, download));
      },
    }),
    route(api.getSignedImage, {
      // The link is its own proof (HOOK-14): the signature is checked before the image is looked up,
      // so an unsigned request learns nothing of which images exist. Never cached: the link expires.
      handler: async (request, reply) => {
        const { imageId } = request.params;
        const { thumbnail = false, expires, signature } = request.query;
        if (!(await imageLinkValid(ctx, { imageId, thumbnail, expires }, signature))) {
          throw new AppError('UNAUTHENTICATED', 'This image link is not valid, or it has expired.');
        }
        const image = found((await learnVisibleImage(ctx, imageId, 'all'))?.image, 'The image');
        const download = thumbnail ? await thumbnailDownload(ctx, image) : originalDownload(image);
        return sentBlob(ctx, request, reply, { ...download, caching: 'no-store' });
      },
    }),
  ];
}
