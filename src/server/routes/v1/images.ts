import * as api from '../../../api/v1/images.ts';
import type { AppContext } from '../../context.ts';
import { visibleProjectOfImage } from '../../db/repositories/artifacts.ts';
import { sendBlob } from '../../http/blob-download.ts';
import { imageDownload } from '../../services/images.ts';
import { route, uuidPathParam } from '../route.ts';

export function imageRoutes(ctx: AppContext) {
  return [
    route(api.getImage, {
      // Images are shared by content across projects: the owner is any project the caller can
      // see that uses the image; when there is none the image answers 404 like an unknown id.
      owner: async (request) => {
        const id = uuidPathParam(request, 'imageId');
        return request.principal ? visibleProjectOfImage(ctx.db, id, request.principal.projects) : undefined;
      },
      handler: async (request, reply) => {
        const download = await imageDownload(ctx, request.params.imageId, { thumbnail: request.query.thumbnail === true });
        return sendBlob(ctx, request, reply, download);
      },
    }),
  ];
}
