import type { FastifyRequest } from 'fastify';
import * as api from '../../../api/v1/images.ts';
import type { AppContext } from '../../context.ts';
import type { ImagesTable } from '../../db/types.ts';
import { sendBlob } from '../../http/blob-download.ts';
import { imageDownload, visibleImage } from '../../services/images.ts';
import { route, uuidPathParam } from '../route.ts';

export function imageRoutes(ctx: AppContext) {
  /** The image row the owner check read, for the handler of the same request: one query, not two. */
  const checked = new WeakMap<FastifyRequest, ImagesTable>();
  return [
    route(api.getImage, {
      // Images are shared by content across projects: the owner is any project the caller can
      // see that uses the image; when there is none the image answers 404 like an unknown id.
      owner: async (request) => {
        const id = uuidPathParam(request, 'imageId');
        const image = request.principal ? await visibleImage(ctx, id, request.principal.projects) : undefined;
        if (!image) return undefined;
        checked.set(request, image);
        return image.project_id;
      },
      handler: async (request, reply) => {
        const download = await imageDownload(ctx, checked.get(request), { thumbnail: request.query.thumbnail === true });
        return sendBlob(ctx, request, reply, download);
      },
    }),
  ];
}
