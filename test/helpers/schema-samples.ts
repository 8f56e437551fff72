import { randomBytes, randomUUID } from 'node:crypto';
import fc from 'fast-check';

// Request values derived from the JSON schemas of the OpenAPI document, for the tests that are
// generated from it (authorization matrix, fuzzing). Only the JSON Schema the contract uses is
// understood; anything else throws, so a new construct fails loudly instead of being skipped.

export type JsonSchema = Record<string, unknown>;

/** One operation of the served OpenAPI document. */
export interface Operation {
  operationId: string;
  method: string;
  /** Path relative to the version root, with `{name}` parameters. */
  path: string;
  authz: { scope: 'public' | 'global' | 'project'; role?: 'viewer' | 'tester' | 'manager' | 'admin' } | undefined;
  pathParams: string[];
  query: JsonSchema | undefined;
  body: JsonSchema | undefined;
  /** Request media types, JSON first when the operation takes it. */
  consumes: string[];
  /** Documented statuses ('default' included). */
  statuses: string[];
  raw: JsonSchema;
}

/**
 * The document with every `$ref` to `components.schemas` replaced by the schema it names, so the
 * samplers and lints see plain schemas. The contract has no recursive schemas; a cycle throws.
 */
export function dereference<T>(value: T, doc: JsonSchema, seen: string[] = []): T {
  if (Array.isArray(value)) return value.map((v) => dereference(v, doc, seen)) as T;
  if (typeof value !== 'object' || value === null) return value;
  const ref = (value as JsonSchema).$ref;
  if (typeof ref === 'string') {
    const name = /^#\/components\/schemas\/(.+)$/.exec(ref)?.[1];
    const target = name ? (doc.components as { schemas?: Record<string, JsonSchema> } | undefined)?.schemas?.[name] : undefined;
    if (!name || !target || seen.includes(name)) throw new Error(`schema-samples: cannot resolve ${ref}`);
    return dereference(target, doc, [...seen, name]) as T;
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, dereference(v, doc, seen)])) as T;
}

/** Lists every operation of an OpenAPI document, in document order, with its schemas dereferenced. */
export function operationsOf(document: JsonSchema): Operation[] {
  const doc = { ...document, paths: dereference(document.paths, document) };
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, JsonSchema>>)) {
    for (const [method, op] of Object.entries(item)) {
      const params = (op.parameters as { name: string; in: string; required?: boolean; schema: JsonSchema }[] | undefined) ?? [];
      const queryParams = params.filter((p) => p.in === 'query');
      const query: JsonSchema | undefined =
        queryParams.length === 0
          ? undefined
          : {
              type: 'object',
              properties: Object.fromEntries(queryParams.map((p) => [p.name, p.schema])),
              required: queryParams.filter((p) => p.required).map((p) => p.name),
              additionalProperties: false,
            };
      const content = (op.requestBody as { content?: Record<string, { schema: JsonSchema }> } | undefined)?.content ?? {};
      const consumes = Object.keys(content).sort((a, b) => Number(b === 'application/json') - Number(a === 'application/json'));
      out.push({
        operationId: op.operationId as string,
        method: method.toUpperCase(),
        path,
        authz: op['x-authz'] as Operation['authz'],
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        query,
        body: consumes[0] ? content[consumes[0]]?.schema : undefined,
        consumes,
        statuses: Object.keys(op.responses as JsonSchema),
        raw: op,
      });
    }
  }
  return out;
}

/** Fills `{name}` path parameters, encoding each value as one path segment. */
export function expandPath(path: string, values: Record<string, string>): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no value for path parameter {${name}} of ${path}`);
    return encodeURIComponent(value);
  });
}

const props = (schema: JsonSchema) => (schema.properties as Record<string, JsonSchema> | undefined) ?? {};
const required = (schema: JsonSchema) => (schema.required as string[] | undefined) ?? [];
const branches = (schema: JsonSchema) => (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;

function unsupported(schema: JsonSchema): never {
  throw new Error(`schema-samples: unsupported schema ${JSON.stringify(schema).slice(0, 200)}`);
}

/** A pattern-matching string within the length bounds; the longest of a few tries, so repeated calls rarely collide. */
function patternSample(pattern: string, minLength: number, maxLength: number): string {
  // 'medium' keeps unbounded patterns (`[...]*`) short; bounded ones still come out long enough to be unique.
  for (const size of ['medium', 'small', 'xsmall'] as const) {
    const candidates = fc
      .sample(fc.stringMatching(new RegExp(pattern), { size }), 30)
      .filter((s) => [...s].length >= minLength && [...s].length <= maxLength);
    const best = candidates.sort((a, b) => b.length - a.length)[0];
    if (best !== undefined) return best;
  }
  throw new Error(`schema-samples: no sample for pattern ${pattern} within ${minLength}..${maxLength}`);
}

function stringSample(schema: JsonSchema): string {
  const minLength = (schema.minLength as number | undefined) ?? 0;
  const maxLength = (schema.maxLength as number | undefined) ?? 10_000;
  switch (schema.format) {
    case 'uuid':
      return randomUUID();
    case 'email':
      return `sample-${randomBytes(5).toString('hex')}@example.test`;
    case 'uri':
      // A public-looking address (webhook URLs): nothing listens there, and nothing is sent before a request asks.
      return `https://hooks.example.test/${randomBytes(4).toString('hex')}`;
    case 'date-time':
      // A day ahead: valid for fields that must lie in the future (key expiry) and harmless elsewhere.
      return new Date(Date.now() + 86_400_000).toISOString();
    case undefined:
      break;
    default:
      unsupported(schema);
  }
  if (typeof schema.pattern === 'string') return patternSample(schema.pattern, minLength, maxLength);
  const text = `sample-${randomBytes(6).toString('hex')}`.padEnd(Math.max(minLength, 1), 'x');
  return text.slice(0, Math.max(minLength, Math.min(maxLength, text.length)));
}

/**
 * A small valid value: required properties only (plus optional ones up to `minProperties`), the
 * first branch of a union, the first enum value, the fewest array items. Strings are unique per call.
 */
export function minimalSample(schema: JsonSchema): unknown {
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const options = branches(schema);
  if (options) return minimalSample(options.find((o) => o.type !== 'null') ?? (options[0] as JsonSchema));
  switch (schema.type) {
    case 'string':
      return stringSample(schema);
    case 'integer':
    case 'number':
      return (schema.minimum as number | undefined) ?? 1;
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array': {
      const count = (schema.minItems as number | undefined) ?? 0;
      return Array.from({ length: count }, () => minimalSample(schema.items as JsonSchema));
    }
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const name of required(schema)) out[name] = minimalSample(props(schema)[name] as JsonSchema);
      const atLeast = (schema.minProperties as number | undefined) ?? 0;
      for (const [name, prop] of Object.entries(props(schema))) {
        if (Object.keys(out).length >= atLeast) break;
        if (!(name in out)) out[name] = minimalSample(prop);
      }
      return out;
    }
    default:
      return unsupported(schema);
  }
}

const FUZZ_STRING_MAX = 64;
const FUZZ_ARRAY_MAX = 4;

const emailArbitrary = fc
  .tuple(fc.stringMatching(/^[a-z0-9][a-z0-9._+-]{0,20}$/), fc.constantFrom('example.test', 'example.org', 'sub.example.test'))
  .map(([local, domain]) => `${local}@${domain}`);

/** Values valid for `schema` (bounded in size so runs stay fast); the fuzzer mutates them. */
export function validArbitrary(schema: JsonSchema): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const options = branches(schema);
  if (options) return fc.oneof(...options.map(validArbitrary));
  switch (schema.type) {
    case 'string': {
      const minLength = (schema.minLength as number | undefined) ?? 0;
      const maxLength = Math.max(minLength, Math.min((schema.maxLength as number | undefined) ?? FUZZ_STRING_MAX, FUZZ_STRING_MAX));
      if (schema.format === 'uuid') return fc.uuid({ version: 4 });
      if (schema.format === 'email') return emailArbitrary;
      // A public-looking address (webhook URLs), as stringSample gives: nothing listens there.
      if (schema.format === 'uri') return fc.nat().map((n) => `https://hooks.example.test/${n.toString(16)}`);
      if (schema.format === 'date-time') {
        return fc
          .date({ min: new Date(Date.now() - 365 * 86_400_000), max: new Date(Date.now() + 400 * 86_400_000), noInvalidDate: true })
          .map((d) => d.toISOString());
      }
      if (schema.format !== undefined) return unsupported(schema);
      if (typeof schema.pattern === 'string') {
        return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => [...s].length >= minLength && [...s].length <= maxLength);
      }
      return fc.oneof(
        fc.string({ unit: 'grapheme', minLength, maxLength }).filter((s) => [...s].length <= maxLength),
        fc.string({ unit: 'binary', minLength, maxLength }),
      );
    }
    case 'integer':
      return fc.integer({ min: (schema.minimum as number | undefined) ?? -1e9, max: (schema.maximum as number | undefined) ?? 1e9 });
    case 'number':
      return fc.double({
        min: (schema.minimum as number | undefined) ?? -1e9,
        max: (schema.maximum as number | undefined) ?? 1e9,
        noNaN: true,
      });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const items = validArbitrary(schema.items as JsonSchema);
      const minLength = (schema.minItems as number | undefined) ?? 0;
      const maxLength = Math.max(minLength, Math.min((schema.maxItems as number | undefined) ?? FUZZ_ARRAY_MAX, FUZZ_ARRAY_MAX));
      return schema.uniqueItems
        ? fc.uniqueArray(items, { minLength, maxLength, selector: (v) => JSON.stringify(v) })
        : fc.array(items, { minLength, maxLength });
    }
    case 'object': {
      const shape = Object.fromEntries(Object.entries(props(schema)).map(([name, prop]) => [name, validArbitrary(prop)]));
      const record = fc.record(shape, { requiredKeys: required(schema) }) as fc.Arbitrary<Record<string, unknown>>;
      const atLeast = (schema.minProperties as number | undefined) ?? 0;
      return atLeast > 0 ? record.filter((o) => Object.keys(o).length >= atLeast) : record;
    }
    default:
      return unsupported(schema);
  }
}

/** Every schema node of a request schema, with its JSON pointer (for lints). */
export function* schemaNodes(schema: unknown, pointer = ''): Generator<{ pointer: string; node: JsonSchema }> {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return;
  const node = schema as JsonSchema;
  yield { pointer, node };
  for (const [name, prop] of Object.entries(props(node))) yield* schemaNodes(prop, `${pointer}/properties/${name}`);
  if (node.items) yield* schemaNodes(node.items, `${pointer}/items`);
  if (typeof node.additionalProperties === 'object') yield* schemaNodes(node.additionalProperties, `${pointer}/additionalProperties`);
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const list = node[key] as unknown[] | undefined;
    for (const [i, sub] of (list ?? []).entries()) yield* schemaNodes(sub, `${pointer}/${key}/${i}`);
  }
  for (const [name, sub] of Object.entries((node.patternProperties as Record<string, unknown> | undefined) ?? {})) {
    yield* schemaNodes(sub, `${pointer}/patternProperties/${name}`);
  }
}
