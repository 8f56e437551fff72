import type { FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';
import { ImportOptions } from '../../api/v1/imports.ts';
import { type ImportOptionsInput, type ImportUpload, sniffType, type UploadType } from '../../import/upload.ts';
import type { Config } from '../config.ts';
import { AppError, invalid } from '../errors.ts';
import { compileValidator, rejectNulCharacters } from '../validation.ts';

// An import request read into the upload the import service takes (docs/imports.md): either the
// report as the raw body, its Content-Type saying what it is and the options in the query, or a
// multipart body of a `file` part and an optional `options` part (JSON), whose type is sniffed.

const validateOptions = compileValidator(ImportOptions, '/body/options');

/** What reading an import request needs: the upload bound. */
export interface ImportReading {
  config: Pick<Config, 'maxImportBytes'>;
}

const TYPES: Record<string, UploadType> = {
  'application/xml': 'xml',
  'text/xml': 'xml',
  'application/json': 'json',
  'application/zip': 'zip',
  'application/x-zip-compressed': 'zip',
};
const DEFAULT_NAMES: Record<UploadType, string> = { xml: 'report.xml', json: 'report.json', zip: 'report.zip' };
/** Room for multipart boundaries and part headers above the upload's own bound. */
const MULTIPART_OVERHEAD_BYTES = 1024 * 1024;

const tooLarge = (ctx: ImportReading) =>
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

/** A raw-body import: the report's bytes as the body parser kept them, its type from Content-Type. */
function rawUpload(request: FastifyRequest, query: ImportOptionsInput): ImportUpload {
  const type = TYPES[(request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? ''];
  const bytes = request.body as unknown;
  if (type === undefined || !Buffer.isBuffer(bytes) || bytes.length === 0) throw invalid('/body', 'must be the report: XML, JSON or ZIP');
  return { fileName: dispositionName(request) ?? DEFAULT_NAMES[type], bytes, type, options: query };
}

/** The `options` part: JSON text (or a value the multipart parser already decoded), checked against the contract. */
function optionsPart(value: unknown): ImportOptionsInput {
  if (typeof value !== 'string') return validateOptions(value);
  let parsed: unknown;
  try {
    parsed = sjson.parse(value, { protoAction: 'error', constructorAction: 'error' });
  } catch {
    throw invalid('/body/options', 'is not valid JSON');
  }
  return validateOptions(parsed);
}

/** A multipart import: the `file` part read whole (within the limit) and the optional `options` part over the query's. */
async function multipartUpload(ctx: ImportReading, request: FastifyRequest, query: ImportOptionsInput): Promise<ImportUpload> {
  let file: { name: string; bytes: Buffer } | undefined;
  let options = query;
  try {
    for await (const part of request.parts({
      limits: { fileSize: ctx.config.maxImportBytes, files: 1, fields: 4, fieldSize: 64 * 1024 },
    })) {
      if (part.type === 'file' && part.fieldname === 'file') file = { name: part.filename || 'report', bytes: await part.toBuffer() };
      else if (part.type === 'field' && part.fieldname === 'options') options = { ...query, ...optionsPart(part.value) };
      else throw invalid(`/body/${part.fieldname}`, 'is not a part an import takes (file, options)');
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

/**
 * Reads an import request into its upload: refuses one declared larger than the import bound before
 * reading a byte (the error handler drops the body, bounded: LOAD-4b), then takes the raw or the
 * multipart form. PostgreSQL text holds no NUL, so options carrying one are refused for both
 * databases, as JSON bodies are.
 */
export async function readImportUpload(ctx: ImportReading, request: FastifyRequest, query: ImportOptionsInput): Promise<ImportUpload> {
  if (Number(request.headers['content-length'] ?? 0) > ctx.config.maxImportBytes + MULTIPART_OVERHEAD_BYTES) throw tooLarge(ctx);
  const multipart = request.isMultipart();
  const upload = multipart ? await multipartUpload(ctx, request, query) : rawUpload(request, query);
  rejectNulCharacters(upload.options, multipart ? '/body/options' : '/query');
  return upload;
}
