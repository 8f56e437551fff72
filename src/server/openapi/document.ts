import type { TSchema } from 'typebox';
import { Problem } from '../../api/common.ts';
import type { Endpoint, ResponseSpec } from '../../api/endpoint.ts';
import { ERRORS } from '../errors.ts';

type Json = Record<string, unknown>;

const clone = (schema: TSchema): Json => JSON.parse(JSON.stringify(schema)) as Json;

const PROBLEM_REF = { $ref: '#/components/schemas/Problem' };
const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: PROBLEM_REF } },
});

function successResponse(status: number, spec: ResponseSpec): Json {
  if (spec === null) return { description: status === 204 ? 'No content' : 'Empty' };
  if ('content' in spec && 'description' in spec && typeof spec.description === 'string' && typeof spec.content === 'object') {
    const content: Json = {};
    for (const [type, { schema }] of Object.entries(spec.content as Record<string, { schema: TSchema }>)) {
      content[type] = { schema: clone(schema) };
    }
    return { description: spec.description, content };
  }
  const schema = clone(spec as TSchema);
  return { description: (schema.description as string | undefined) ?? 'OK', content: { 'application/json': { schema } } };
}

function parameters(schema: TSchema | undefined, where: 'path' | 'query'): Json[] {
  if (!schema) return [];
  const json = clone(schema);
  const required = new Set((json.required as string[] | undefined) ?? []);
  return Object.entries((json.properties as Record<string, Json>) ?? {}).map(([name, prop]) => {
    const { description, ...rest } = prop;
    return {
      name,
      in: where,
      required: where === 'path' || required.has(name),
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}

/** Builds the OpenAPI 3.1 document of one API version from its contract entries. */
export function buildOpenApiDocument(endpoints: Endpoint[], options: { version: string; appVersion: string }): Json {
  const paths: Record<string, Json> = {};
  for (const e of endpoints) {
    const isPublic = e.access.scope === 'public';
    const responses: Json = {};
    for (const [status, spec] of Object.entries(e.responses)) responses[status] = successResponse(Number(status), spec);
    if (e.params || e.querystring || e.body) responses['400'] = problemResponse('Invalid input; `errors` names each field.');
    if (!isPublic) {
      responses['401'] = problemResponse('Missing, unknown, revoked or expired credentials (one identical answer for all).');
      responses['403'] = problemResponse("The caller's role (or the key's scope) does not allow this.");
    }
    if (e.params || (e.access.scope === 'project' && e.method !== 'GET')) {
      responses['404'] = problemResponse('Unknown, or in a project the caller cannot see.');
    }
    if (!e.binary) responses['406'] = problemResponse('The Accept header excludes JSON.');
    if (e.body) {
      responses['413'] = problemResponse('The body is larger than the configured limit.');
      responses['415'] = problemResponse('The body is not of a supported media type.');
    }
    if (!isPublic) responses['429'] = problemResponse('Rate limited; retry after `Retry-After` seconds.');
    responses.default = problemResponse('Any other problem (409 state conflicts, 5xx).');

    const operation: Json = {
      operationId: e.operationId,
      summary: e.summary,
      ...(e.description ? { description: e.description } : {}),
      tags: [e.tag],
      ...(e.deprecated ? { deprecated: true } : {}),
      security: isPublic ? [] : [{ apiToken: [] }, { legacyApiToken: [], legacyUser: [] }],
      'x-authz': e.access,
      parameters: [...parameters(e.params, 'path'), ...parameters(e.querystring, 'query')],
      responses,
    };
    if (e.body) {
      const content: Json = {};
      for (const type of e.consumes ?? ['application/json']) {
        // Text media types (Gherkin, XML) carry the document itself, not the JSON body schema.
        content[type] = {
          schema: type.startsWith('text/') || type.endsWith('/xml') ? { type: 'string', maxLength: 1024 * 1024 } : clone(e.body),
        };
      }
      operation.requestBody = { required: true, content };
    }
    const item = paths[e.path] ?? {};
    paths[e.path] = item;
    item[e.method.toLowerCase()] = operation;
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Attest API',
      version: options.appVersion,
      description:
        'The Attest REST API. Every call sends its API key in `service.api-token`; old-format (UUID) keys also send ' +
        "their owner's e-mail in `service.user`. Errors are RFC 9457 problem details with a stable `code`. " +
        'Lists answer `{ items, nextCursor }`; pass `nextCursor` back as `cursor`.',
    },
    servers: [{ url: `/api/${options.version}`, description: 'Relative to the instance base URL.' }],
    tags: [...new Set(endpoints.map((e) => e.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas: { Problem: clone(Problem) },
      securitySchemes: {
        apiToken: {
          type: 'apiKey',
          in: 'header',
          name: 'service.api-token',
          description: 'An API key (`atk_…`) or a web session key (`ats_…`).',
        },
        legacyApiToken: {
          type: 'apiKey',
          in: 'header',
          name: 'service.api-token',
          description: 'Deprecated: an old-format (UUID) key, valid only together with `service.user`.',
          'x-deprecated': true,
        },
        legacyUser: {
          type: 'apiKey',
          in: 'header',
          name: 'service.user',
          description: "Deprecated: the e-mail of the old-format key's owner (compared case-insensitively).",
          'x-deprecated': true,
        },
      },
      'x-error-codes': Object.fromEntries(Object.entries(ERRORS).map(([code, e]) => [code, e])),
    },
  };
}
