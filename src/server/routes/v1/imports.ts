import type { FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';
import * as api from '../../../api/v1/imports.ts';
import type { AppContext } from '../../context.ts';
import { AppError, invalid, notFound } from '../../errors.ts';
import { presentImport } from '../../presenters/imports.ts';
import { type ImportOptionsInput, type ImportUpload, type SourceType, sniffType } from '../../services/import-reading.ts';
import { getImport, listImports, queueImport, startImport } from '../../services/imports.ts';
import { compileValidator, rejectNulCharacters } from '../../validation.ts';
import { pathProject as projectOfPath } from '../owners.ts';
import { pageOf, route } from '../route.ts';

const validateOptions = compileValidator(api.ImportOptions, '/body/options');

const TYPES: Record<string, SourceType> = {
  'application/xml': 'xml',
  'text/xml': 'xml',
  'application/json': 'json',
  'application/zip': 'zip',
  'application/x-zip-compressed': 'zip',
};
const DEFAULT_NAMES: Record<SourceType, string> = { xml: 'report.xml', json: 'report.json', zip: 'report.zip' };

const tooLarge = (ctx: AppContext) =>
  new AppError('PAYLOAD_TOO_LARGE', `An import upload may be at most ${ctx.config.maxImportBytes} bytes (ATTEST_MAX_IMPORT_BYTES).`);

function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The file name a raw body was sent under (`Content-Disposition: attachment; filename=…`), if any. */
function dispositionName(request: FastifyRequest): string | undefined {
  const header = request.headers['content-disposition'];
  const match = typeof header === 'string' ? /filename="?([^";]+)"?/i.exec(header) : null;
  const name = match?.[1];
  return name === undefined ? undefined : percentDecoded(name).split(/[\\/]/).pop();
}

/** A multipart import: the `file` part read whole (within the limit) and the optional `options` part. */
async function multipartUpload(ctx: AppContext, request: FastifyRequest, query: ImportOptionsInput): Promise<ImportUpload> {
  let file: { name: string; bytes: Buffer } | undefined;
  let options = query;
  try {
    for await (const part of request.parts({
      limits: { fileSize: ctx.config.maxImportBytes, files: 1, fields: 4, fieldSize: 64 * 1024 },
    })) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file') throw invalid(`/body/${part.fieldname}`, 'is not a part an import takes (file, options)');
        const bytes = await part.toBuffer();
        file = { name: part.filename || 'report', bytes };
      } else if (part.fieldname === 'options') {
        let value: unknown = part.value;
        if (typeof value === 'string') {
          try {
            value = sjson.parse(value, { protoAction: 'error', constructorAction: 'error' });
          } catch {
            throw invalid('/body/options', 'is not valid JSON');
          }
        }
        options = { ...query, ...validateOptions(value) };
      } else {
        throw invalid(`/body/${part.fieldname}`, 'is not a part an import takes (file, options)');
      }
    }
  } catch (error) {
    const { code, statusCode } = (error ?? {}) as { code?: string; statusCode?: number };
    if (code === 'FST_REQ_FILE_TOO_LARGE' || statusCode === 413) throw tooLarge(ctx);
    if (error instanceof AppError) throw error;
    throw new AppError('INVALID_INPUT', 'The multipart body is malformed or ended early.');
  }
  if (!file) throw invalid('/body/file', 'is required: the report, or a ZIP of reports and attachments');
  return { fileName: file.name, bytes: file.bytes, type: sniffType(file.bytes), options };
}

export function importRoutes(ctx: AppContext) {
  const pathProject = (request: FastifyRequest) => projectOfPath(ctx, request);
  return [
    route(api.importReport, {
      owner: pathProject,
      handler: async (request, reply) => {
        if (Number(request.headers['content-length'] ?? 0) > ctx.config.maxImportBytes + 1024 * 1024) {
          // Refused before reading a byte (the error handler drops the body, bounded: LOAD-4b).
          throw tooLarge(ctx);
        }
        let upload: ImportUpload;
        if (request.isMultipart()) {
          upload = await multipartUpload(ctx, request, request.query);
        } else {
          const type = TYPES[(request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? ''];
          const bytes = request.body as unknown;
          if (type === undefined || !Buffer.isBuffer(bytes) || bytes.length === 0)
            throw invalid('/body', 'must be the report: XML, JSON or ZIP');
          upload = { fileName: dispositionName(request) ?? DEFAULT_NAMES[type], bytes, type, options: request.query };
        }
        // PostgreSQL text holds no NUL: refused here for both databases, as JSON bodies are.
        rejectNulCharacters(upload.options, request.isMultipart() ? '/body/options' : '/query');
        const { record, created } = await startImport(ctx, { projectId: request.projectId, actorId: request.principal.user.id, upload });
        // The job is written after the 202 has gone out (or the client left): the answer never waits
        // behind the first batch, and the import never starts before it was acknowledged.
        if (created) reply.raw.once('close', () => queueImport(ctx, record.id));
        reply.code(created ? 202 : 200);
        reply.header(
          'location',
          `${ctx.config.publicUrl ?? `${request.protocol}://${request.host}`}/api/v1/projects/${record.project_id}/imports/${record.id}`,
        );
        return presentImport(record);
      },
    }),

    route(api.getImport, {
      owner: pathProject,
      handler: async (request) => {
        const row = await getImport(ctx, request.params.importId.toLowerCase());
        if (row.project_id !== request.projectId) throw notFound('The import');
        return presentImport(row);
      },
    }),

    route(api.listImports, {
      owner: pathProject,
      handler: async (request) => {
        const page = await listImports(ctx, request.projectId, pageOf(ctx.config, request.query));
        return { items: page.items.map(presentImport), nextCursor: page.nextCursor };
      },
    }),
  ];
}
