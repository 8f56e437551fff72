import type { FastifyRequest } from 'fastify';
import * as api from '../../../api/v1/artifacts.ts';
import type { AppContext } from '../../context.ts';
import { findArtifact } from '../../db/repositories/artifacts.ts';
import { AppError, notFound } from '../../errors.ts';
import { sendBlob } from '../../presenters/blob-download.ts';
import {
  artifactDetailsByIds,
  deleteArtifact,
  ingestArtifact,
  listRunArtifacts,
  type UploadPart,
  uploadFailure,
  uploadRequestLimit,
} from '../../services/artifacts.ts';
import { route, uuidPathParam } from '../route.ts';

/** The multipart body as upload parts; parser failures (limits, malformed bodies) become problems. */
async function* multipartParts(ctx: AppContext, request: FastifyRequest): AsyncGenerator<UploadPart> {
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') yield { type: 'file', name: part.fieldname, stream: part.file };
      else yield { type: 'field', name: part.fieldname, value: part.value, truncated: part.valueTruncated };
    }
  } catch (error) {
    throw uploadFailure(ctx, error);
  }
}

export function artifactRoutes(ctx: AppContext) {
  const pathProject = async (request: FastifyRequest) =>
    (await ctx.db.selectFrom('projects').select('id').where('id', '=', uuidPathParam(request, 'projectId')).executeTakeFirst())?.id;
  const artifactProject = async (request: FastifyRequest) => (await findArtifact(ctx.db, uuidPathParam(request, 'artifactId')))?.project_id;

  return [
    route(api.uploadArtifact, {
      owner: pathProject,
      handler: async (request, reply) => {
        const declared = Number(request.headers['content-length'] ?? 0);
        if (declared > uploadRequestLimit(ctx.config)) {
          // Refused before reading a byte; closing the connection spares reading the body at all.
          reply.header('connection', 'close');
          throw new AppError('PAYLOAD_TOO_LARGE', `An upload may be at most ${uploadRequestLimit(ctx.config)} bytes.`);
        }
        if (!request.isMultipart()) throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'An upload is multipart/form-data.');
        try {
          const result = await ingestArtifact(ctx, {
            projectId: request.projectId,
            userId: request.principal.user.id,
            parts: multipartParts(ctx, request),
          });
          reply.code(result.created ? 201 : 200);
          return result.artifact;
        } catch (error) {
          // Refused part way: close the connection instead of reading the rest of the body.
          if (!request.raw.complete) reply.header('connection', 'close');
          throw error;
        }
      },
    }),

    route(api.listArtifacts, {
      owner: pathProject,
      handler: async (request) => listRunArtifacts(ctx, request.projectId, request.query),
    }),

    route(api.getArtifacts, {
      handler: async (request) => artifactDetailsByIds(ctx, request.query.ids, request.principal.projects),
    }),

    route(api.getArtifactContent, {
      owner: artifactProject,
      handler: async (request, reply) => {
        const artifact = await findArtifact(ctx.db, request.params.artifactId);
        if (!artifact) throw notFound('The artifact');
        return sendBlob(ctx, request, reply, {
          sha256: artifact.sha256,
          size: Number(artifact.size),
          contentType: artifact.content_type,
          fileName: artifact.name,
          caching: 'immutable',
        });
      },
    }),

    route(api.deleteArtifact, {
      owner: artifactProject,
      handler: async (request, reply) => {
        await deleteArtifact(ctx, request.params.artifactId);
        return reply.code(204).send();
      },
    }),
  ];
}
