import type { TSchema } from 'typebox';
import { PageQuery, Problem } from '../../api/common.ts';
import { type Endpoint, type JsonText, jsonText, type ResponseSpec } from '../../api/endpoint.ts';
import { ERRORS } from '../errors.ts';
import { APP_VERSION } from '../version.ts';
import { OPERATION_EXAMPLES, type OperationExamples, PROBLEM_EXAMPLES } from './examples/index.ts';
import { DEFAULT_LIMITS, type DocumentedLimits, describeBytes, withLimits } from './limits.ts';
import { isPage, schemaNames } from './schema-names.ts';
import { TAG_DESCRIPTIONS } from './tags.ts';
import { webhookEvents } from './webhooks.ts';

type Json = Record<string, unknown>;

/**
 * Turns contract schemas into document schemas: every schema with a name (see schema-names.ts)
 * becomes a `$ref` to `components.schemas`, defined there once.
 */
class SchemaWriter {
  readonly components: Record<string, Json> = {};
  private readonly names: Map<string, string>;
  constructor(endpoints: Endpoint[]) {
    this.names = schemaNames(endpoints);
  }

  /** A document schema for `schema`; named ones (and pages of named ones) become `$ref`s. */
  write(schema: TSchema | Json): Json {
    return this.node(JSON.parse(JSON.stringify(schema)) as Json, false);
  }

  private node(node: Json, isRoot: boolean): Json {
    const key = JSON.stringify(node);
    let name = isRoot ? undefined : this.names.get(key);
    if (!name && !isRoot && isPage(node)) {
      const items = ((node.properties as Record<string, Json>).items as Json).items as Json;
      const itemName = this.names.get(JSON.stringify(items));
      if (itemName) name = `${itemName}Page`;
    }
    if (name) {
      if (!(name in this.components)) {
        this.components[name] = {};
        this.components[name] = this.node(node, true);
      } else if (isRoot === false && JSON.stringify(this.node(node, true)) !== JSON.stringify(this.components[name])) {
        throw new Error(`openapi: two different schemas are both named ${name}`);
      }
      return { $ref: `#/components/schemas/${name}` };
    }
    const out: Json = {};
    for (const [k, v] of Object.entries(node)) out[k] = this.value(k, v);
    return out;
  }

  private value(key: string, value: unknown): unknown {
    if (typeof value !== 'object' || value === null) return value;
    if (key === 'properties' || key === 'patternProperties') {
      return Object.fromEntries(Object.entries(value as Record<string, Json>).map(([k, v]) => [k, this.node(v, false)]));
    }
    if (Array.isArray(value))
      return key === 'anyOf' || key === 'oneOf' || key === 'allOf' ? value.map((v) => this.node(v as Json, false)) : value;
    if (key === 'items' || key === 'additionalProperties' || key === 'not') return this.node(value as Json, false);
    return value;
  }
}

const PROBLEM_REF = { $ref: '#/components/schemas/Problem' };
const problemResponse = (status: string, description: string) => ({
  description,
  content: {
    'application/problem+json': { schema: PROBLEM_REF, ...(PROBLEM_EXAMPLES[status] ? { example: PROBLEM_EXAMPLES[status] } : {}) },
  },
});

/** `{ example }` when there is one, to spread into a media type object. */
const withExample = (example: unknown): Json => (example === undefined ? {} : { example });

function successResponse(status: number, spec: ResponseSpec, schemas: SchemaWriter, example: unknown): Json {
  if (spec === null) return { description: status === 204 ? 'No content' : 'Empty' };
  if ('content' in spec && 'description' in spec && typeof spec.description === 'string' && typeof spec.content === 'object') {
    const content: Json = {};
    for (const [type, { schema }] of Object.entries(spec.content as Record<string, { schema: TSchema }>)) {
      content[type] = { schema: schemas.write(schema), ...(type === 'application/json' ? withExample(example) : {}) };
    }
    return { description: spec.description, content };
  }
  const description = ((spec as Json).description as string | undefined) ?? 'OK';
  return { description, content: { 'application/json': { schema: schemas.write(spec as TSchema), ...withExample(example) } } };
}

const PAGE_LIMIT = JSON.stringify(PageQuery.limit);

/** The page-size parameter as this server enforces it (`pageOf`): its configured default and maximum. */
const pageLimit = (limits: DocumentedLimits): Json => ({
  description:
    `Page size: ${limits.pageSizeDefault} when absent, at most ${limits.pageSizeMax} (\`ATTEST_PAGE_SIZE_DEFAULT\`, ` +
    '`ATTEST_PAGE_SIZE_MAX`); a larger value is a 400.',
  type: 'integer',
  minimum: 1,
  maximum: limits.pageSizeMax,
  default: limits.pageSizeDefault,
});

function parameters(schema: TSchema | undefined, where: 'path' | 'query', schemas: SchemaWriter, limits: DocumentedLimits): Json[] {
  if (!schema) return [];
  const json = JSON.parse(JSON.stringify(schema)) as Json;
  const required = new Set((json.required as string[] | undefined) ?? []);
  return Object.entries((json.properties as Record<string, Json>) ?? {}).map(([name, original]) => {
    const prop = JSON.stringify(original) === PAGE_LIMIT ? pageLimit(limits) : original;
    const { description, ...rest } = prop;
    return {
      name,
      in: where,
      required: where === 'path' || required.has(name),
      ...(description ? { description: withLimits(String(description), limits) } : {}),
      schema: schemas.write(rest),
    };
  });
}

/** The limit on an operation's body, and the variable that sets it. */
function bodyLimitOf(e: Endpoint, limits: DocumentedLimits): { bytes: number; variable: string } {
  return {
    bytes: e.bodyLimit ? limits[e.bodyLimit] : limits.bodyLimit,
    variable: e.bodyLimit
      ? { bulkBodyLimit: 'ATTEST_BULK_BODY_LIMIT', maxImportBytes: 'ATTEST_MAX_IMPORT_BYTES' }[e.bodyLimit]
      : 'ATTEST_BODY_LIMIT',
  };
}

const isMultipart = (e: Endpoint) => e.consumes?.includes('multipart/form-data') ?? false;

/** An operation's answers: its successes, then the problems it may answer, one per status. */
function responsesOf(e: Endpoint, schemas: SchemaWriter, limits: DocumentedLimits, examples: OperationExamples | undefined): Json {
  const isPublic = e.access.scope === 'public';
  const responses: Json = {};
  for (const [status, spec] of Object.entries(e.responses)) {
    responses[status] = successResponse(Number(status), spec, schemas, examples?.responses[Number(status)]);
  }
  if (e.params || e.querystring || e.body) responses['400'] = problemResponse('400', 'Invalid input; `errors` names each field.');
  if (!isPublic) {
    responses['401'] = problemResponse('401', 'Missing, unknown, revoked or expired credentials (one identical answer for all).');
    responses['403'] = problemResponse('403', "The caller's role (or the key's scope) does not allow this.");
  } else if (e.refusedWith) {
    responses['401'] = problemResponse('401', e.refusedWith);
  }
  if (e.params || (e.access.scope === 'project' && e.method !== 'GET')) {
    responses['404'] = problemResponse('404', 'Unknown, or in a project the caller cannot see.');
  }
  if (!e.binary) responses['406'] = problemResponse('406', 'The Accept header excludes JSON.');
  if (e.body) {
    const body = bodyLimitOf(e, limits);
    responses['413'] = problemResponse(
      '413',
      isMultipart(e) && e.bodyLimit === undefined
        ? `A file is larger than its limit: ${describeBytes(limits.maxImageBytes)} for an image (\`ATTEST_MAX_IMAGE_BYTES\`), ` +
            `${describeBytes(limits.maxArtifactBytes)} for any other file (\`ATTEST_MAX_ARTIFACT_BYTES\`).`
        : `The body is larger than ${describeBytes(body.bytes)} (\`${body.variable}\`).`,
    );
    responses['415'] = problemResponse('415', 'The body is not of a supported media type.');
  }
  if (!isPublic) responses['429'] = problemResponse('429', 'Rate limited; retry after `Retry-After` seconds.');
  responses.default = problemResponse('default', 'Any other problem (409 state conflicts, 5xx).');
  return responses;
}

/** The request body of an operation that takes one, per media type. */
function requestBodyOf(
  e: Endpoint & { body: NonNullable<Endpoint['body']> },
  schemas: SchemaWriter,
  limits: DocumentedLimits,
  examples: OperationExamples | undefined,
): Json {
  const body = bodyLimitOf(e, limits);
  const multipart = isMultipart(e);
  const content: Json = {};
  for (const type of e.consumes ?? ['application/json']) {
    // Text media types (Gherkin, XML) carry the document itself, not the JSON body schema; so
    // does every other type of an operation that also takes a multipart file (an import's report).
    const text = type.startsWith('text/') || type.endsWith('/xml');
    const file = multipart && type !== 'multipart/form-data';
    content[type] = {
      schema: file
        ? { type: 'string', contentMediaType: type, maxLength: body.bytes }
        : text
          ? { type: 'string', maxLength: 1024 * 1024 }
          : schemas.write(e.body),
      // A report file: the XML example for XML; JSON and ZIP reports are only shown as what they are.
      ...withExample(file ? (text ? examples?.text : `(the ${type} report file)`) : text ? examples?.text : examples?.request),
    };
  }
  return {
    required: true,
    ...(multipart && e.bodyLimit === undefined
      ? {}
      : { description: `At most ${describeBytes(body.bytes)} (\`${body.variable}\`).`, 'x-max-bytes': body.bytes }),
    content,
  };
}

function operationOf(e: Endpoint, schemas: SchemaWriter, limits: DocumentedLimits, examples: OperationExamples | undefined): Json {
  const isPublic = e.access.scope === 'public';
  const responses = responsesOf(e, schemas, limits, examples);
  const operation: Json = {
    operationId: e.operationId,
    summary: e.summary,
    ...(e.description ? { description: withLimits(e.description, limits) } : {}),
    tags: [e.tag],
    ...(e.deprecated ? { deprecated: true } : {}),
    ...(e.fetchesUrl ? { 'x-fetches-url': true } : {}),
    security: isPublic ? [] : [{ apiToken: [] }, { legacyApiToken: [], legacyUser: [] }],
    'x-authz': e.access,
    parameters: [...parameters(e.params, 'path', schemas, limits), ...parameters(e.querystring, 'query', schemas, limits)],
    responses,
  };
  if (e.body) operation.requestBody = requestBodyOf({ ...e, body: e.body }, schemas, limits, examples);
  return operation;
}

const SECURITY_SCHEMES = {
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
};

/**
 * Builds the OpenAPI 3.1 document of one API version from its contract entries. Each media type
 * carries the operation's `example` (examples/), problem answers one per status.
 */
export function buildOpenApiDocument(
  endpoints: Endpoint[],
  options: { version: string; appVersion: string; limits?: DocumentedLimits; examples?: ReadonlyMap<string, OperationExamples> },
): Json {
  const limits = options.limits ?? DEFAULT_LIMITS;
  const allExamples = options.examples ?? OPERATION_EXAMPLES;
  const schemas = new SchemaWriter(endpoints);
  schemas.write(Problem);
  const paths: Record<string, Json> = {};
  for (const e of endpoints) {
    const item = paths[e.path] ?? {};
    paths[e.path] = item;
    item[e.method.toLowerCase()] = operationOf(e, schemas, limits, allExamples.get(e.operationId));
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
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: `/api/${options.version}`, description: 'Relative to the instance base URL.' }],
    tags: [...new Set(endpoints.map((e) => e.tag))].map((name) =>
      TAG_DESCRIPTIONS[name] ? { name, description: TAG_DESCRIPTIONS[name] } : { name },
    ),
    paths,
    ...(endpoints.some((e) => e.tag === 'Webhooks') ? { webhooks: webhookEvents(schemas) } : {}),
    components: {
      schemas: Object.fromEntries(Object.entries(schemas.components).sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: SECURITY_SCHEMES,
      'x-error-codes': Object.fromEntries(Object.entries(ERRORS).map(([code, e]) => [code, e])),
    },
  };
}

const published = new WeakMap<Endpoint[], { document: Json; text: JsonText<Json> }>();

/**
 * The document a version publishes, built on first use and then kept: the JSON route and the
 * reference page share one build, and start-up builds none.
 */
export function publishedDocument(endpoints: Endpoint[], version: string): { document: Json; text: JsonText<Json> } {
  let entry = published.get(endpoints);
  if (!entry) {
    const document = buildOpenApiDocument(endpoints, { version, appVersion: APP_VERSION });
    entry = { document, text: jsonText(document) };
    published.set(endpoints, entry);
  }
  return entry;
}
