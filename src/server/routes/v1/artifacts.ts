import type { FastifyRequest } from 'fastify';
import * as api from '../../../api/v1/artifacts.ts';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { presentArtifact, presentArtifactDetails } from '../../presenters/artifacts.ts';
import {
  artifactDetailsByIds,
  deleteArtifact,
  getArtifact,
  ingestArtifact,
  listRunArtifacts,
  type UploadPart,
  uploadRequestLimit,
} from '../../services/evidence/artifacts.ts';
import { type ArtifactWithImages, uploadFailure } from '../../services/evidence/writer.ts';
import { artifactOwner, pathProject as projectOfPath } from '../owners.ts';
import { noContent, pageOf, route, sentBlob } from '../route.ts';

const presentDetails = ({ row, images }: ArtifactWithImages) => presentArtifactDetails(row, images);

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

/** The 413 of an upload over the whole-request limit: the limits in bytes, and what to do. */
const uploadTooLarge = (config: AppContext['config']): string =>
  `An upload may be at most ${uploadRequestLimit(config)} bytes in all: a file of up to ${config.maxArtifactBytes} bytes, ` +
  `or images of up to ${config.maxImageBytes} bytes each; send each artifact as its own upload.`;

export function artifactRoutes(ctx: AppContext) {
  const pathProject = (request: FastifyRequest) => projectOfPath(ctx, request);
  const artifactProject = (request: FastifyRequest) => artifactOwner(ctx, request);

  return [
    route(api.uploadArtifact, {
      owner: pathProject,
      handler: async (request, reply) => {
        const declared = Number(request.headers['content-length'] ?? 0);
        if (declared > uploadRequestLimit(ctx.config)) {
          // Refused before reading a byte (the error handler drops the body, bounded: LOAD-4b).
          throw new AppError('PAYLOAD_TOO_LARGE', uploadTooLarge(ctx.config));
        }
        if (!request.isMultipart()) {
          throw new AppError(
            'UNSUPPORTED_MEDIA_TYPE',
            'An upload takes a body of type multipart/form-data (the metadata part first, then the file parts): send Content-Type: multipart/form-data.',
          );
        }
        // Refused part way, the error handler drops the rest of the body, bounded (LOAD-4b).
        const result = await ingestArtifact(ctx, {
          projectId: request.projectId,
          userId: request.principal.user.id,
          parts: multipartParts(ctx, request),
        });
        reply.code(result.created ? 201 : 200);
        return presentDetails(result.artifact);
      },
    }),

    route(api.listArtifacts, {
      owner: pathProject,
      handler: async (request) => {
        // Without limit and cursor the whole run in one answer: the documented retrieval sequence reads it with one call.
        const { testRunId, cursor, limit } = request.query;
        const paged = cursor !== undefined || limit !== undefined;
        const page = await listRunArtifacts(ctx, request.projectId, testRunId, paged ? pageOf(ctx.config, request.query) : undefined);
        return { items: page.items.map(presentArtifact), nextCursor: page.nextCursor };
      },
    }),

    route(api.getArtifacts, {
      handler: async (request) => {
        const { items, missing } = await artifactDetailsByIds(ctx, request.query.ids, request.principal.projects);
        return { items: items.map(presentDetails), missing };
      },
    }),

    route(api.getArtifactContent, {
      owner: artifactProject,
      handler: async (request, reply) => {
        const artifact = await getArtifact(ctx, request.params.artifactId);
        return sentBlob(ctx, request, reply, {
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
        return noContent(reply);
      },
    }),
  ];
}
