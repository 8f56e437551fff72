import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Static, TSchema } from 'typebox';
import { IS_UUID } from '../api/common.ts';
import { AppError, type FieldError, invalid, shortPointer } from './errors.ts';

/**
 * The Ajv instances every request part is validated with: nothing stripped, one error reported.
 * `coerce` converts path and query text to the schema types; bodies are never coerced.
 */
export function createAjv(coerce: boolean): Ajv {
  const ajv = addFormats.default(
    // `verbose` puts each failed keyword's schema on its error, so a union of literals can be
    // reported as the values it allows (`fieldErrors`); the data it adds never reaches an answer.
    new Ajv({
      allErrors: false,
      removeAdditional: false,
      useDefaults: true,
      verbose: true,
      strict: false,
      coerceTypes: coerce ? 'array' : false,
    }),
  );
  // RFC 3339 allows a leap second (…:60Z) that JavaScript dates cannot hold: accept only times
  // that are real instants, so no handler meets an Invalid Date.
  const rfc3339 = ajv.formats['date-time'] as { validate: (value: string) => boolean } | ((value: string) => boolean);
  const syntax = typeof rfc3339 === 'function' ? rfc3339 : rfc3339.validate;
  ajv.addFormat('date-time', { type: 'string', validate: (value: string) => syntax(value) && !Number.isNaN(Date.parse(value)) });
  return ajv;
}

const ajv = createAjv(false);

/** One Ajv error as a field error whose pointer starts with the request part (`/body/steps/3/title`). */
export function toFieldError(prefix: string, error: ErrorObject): FieldError {
  const params = error.params as Record<string, unknown>;
  let pointer = `${prefix}${error.instancePath}`;
  if (typeof params.missingProperty === 'string') pointer += `/${params.missingProperty}`;
  if (typeof params.additionalProperty === 'string')
    return { pointer: shortPointer(`${pointer}/${params.additionalProperty}`), message: 'is not an allowed property' };
  return { pointer: shortPointer(pointer), message: error.message ?? 'is invalid' };
}

/** The values a union of literals (TypeBox's `anyOf` of `const`, `null` too) allows, or undefined for any other schema. */
function allowedValues(schema: unknown): unknown[] | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const s = schema as { const?: unknown; type?: unknown; anyOf?: unknown; enum?: unknown };
  if ('const' in s) return [s.const];
  if (Array.isArray(s.enum)) return s.enum;
  if (s.type === 'null') return [null];
  if (!Array.isArray(s.anyOf)) return undefined;
  const values: unknown[] = [];
  for (const branch of s.anyOf) {
    const more = allowedValues(branch);
    if (!more) return undefined;
    values.push(...more);
  }
  return values;
}

const listValues = (values: unknown[]): string => values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ');

/**
 * Ajv's errors as field errors. A value outside a union of literals (`"status": "pass"`) fails every
 * branch, and Ajv reports each one ("must be equal to constant", once per value) and then the
 * union: those become ONE error that lists the values allowed.
 */
export function fieldErrors(prefix: string, errors: ErrorObject[]): FieldError[] {
  const kept: ErrorObject[] = [];
  const replaced = new Map<ErrorObject, FieldError>();
  for (const error of errors) {
    const values = error.keyword === 'anyOf' || error.keyword === 'enum' ? allowedValues({ [error.keyword]: error.schema }) : undefined;
    if (values) {
      // Drop the branch errors this union's verdict sums up (they sit under its schema path).
      while (kept.length > 0 && (kept.at(-1) as ErrorObject).schemaPath.startsWith(`${error.schemaPath}/`)) kept.pop();
      replaced.set(error, { pointer: `${prefix}${error.instancePath}`, message: `must be one of: ${listValues(values)}` });
    }
    kept.push(error);
  }
  return kept.slice(0, 20).map((e) => replaced.get(e) ?? toFieldError(prefix, e));
}

/**
 * A validator for a request part the app cannot validate by itself: the body of a route that also
 * takes non-JSON media types, where the schema applies to one of them only. A failure is the same
 * 400 `INVALID_INPUT` with JSON pointers (`/body/steps/3/action`) as the app's own validation.
 */
export function compileValidator<T extends TSchema>(schema: T, prefix = '/body'): (value: unknown) => Static<T> {
  const validate = ajv.compile(schema);
  return (value) => {
    if (validate(value)) return value as Static<T>;
    const errors = fieldErrors(prefix, validate.errors ?? []);
    const first = errors[0];
    throw new AppError('INVALID_INPUT', first ? `${first.pointer}: ${first.message}` : 'The request is invalid.', { errors });
  };
}

/**
 * Refuses text holding U+0000 anywhere in a parsed body or query: PostgreSQL cannot store it in a
 * text column and would fail the whole statement, so it is a 400 naming the field, on both dialects.
 * Iterative, with its own stack, so no nesting depth the JSON parser accepts can overflow the call
 * stack; each entry links to its parent, so a pointer is only spelt out for the field refused.
 */
export function rejectNulCharacters(value: unknown, pointer: string): void {
  interface Entry {
    value: unknown;
    key: string;
    parent: Entry | undefined;
  }
  const pointerOf = (entry: Entry): string => {
    const keys: string[] = [];
    for (let at: Entry | undefined = entry; at?.parent !== undefined; at = at.parent) keys.push(at.key);
    return keys.reduceRight((path, key) => `${path}/${key}`, pointer);
  };
  const stack: Entry[] = [{ value, key: '', parent: undefined }];
  for (let entry = stack.pop(); entry !== undefined; entry = stack.pop()) {
    const current = entry.value;
    if (typeof current === 'string') {
      if (current.includes('\u0000')) throw invalid(pointerOf(entry), 'must not contain the NUL character (U+0000)');
    } else if (typeof current === 'object' && current !== null) {
      // Pushed last to first, so fields are visited, and the first NUL reported, in document order.
      const children = Array.isArray(current) ? current.map((item, i) => [String(i), item] as const) : Object.entries(current);
      for (let i = children.length - 1; i >= 0; i--) {
        const [key, item] = children[i] as readonly [string, unknown];
        stack.push({ value: item, key, parent: entry });
      }
    }
  }
}

/** Whether a raw value can be one of our ids (random UUIDs); anything else cannot name a row. */
export const isUuid = (value: string): boolean => IS_UUID.test(value);

/**
 * Fastify's validator compiler. Path and query strings arrive as text and are coerced to the schema
 * types; bodies are JSON and must already have the right types, so a wrong type is a 400, never a
 * silent conversion.
 */
export function createValidatorCompiler() {
  const coercing = createAjv(true);
  const exact = createAjv(false);
  // Compiled on first use, not at start-up: most of a process's routes are never called, and
  // compiling all of them cost a fifth of start-up and their code stayed in memory.
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) => {
    const ajv = httpPart === 'body' ? exact : coercing;
    let compiled: ValidateFunction | undefined;
    const validate = (data: unknown): boolean => {
      compiled ??= ajv.compile(schema);
      const valid = compiled(data) as boolean;
      validate.errors = compiled.errors;
      return valid;
    };
    validate.errors = undefined as ValidateFunction['errors'];
    return validate;
  };
}

/** Fastify's own response serializer factory (fast-json-stringify), made lazy below. */
const defaultSerializers = SerializerSelector();

/**
 * Response serializers, each compiled on its route's first answer with that status rather than at
 * start-up, like the validators: compiling every route's response schemas was a tenth of a start.
 */
export function lazySerializers(...factoryArgs: Parameters<typeof defaultSerializers>): ReturnType<typeof defaultSerializers> {
  const compile = defaultSerializers(...factoryArgs);
  return (route) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data: unknown) => {
      serialize ??= compile(route) as (data: unknown) => string;
      return serialize(data);
    };
  };
}
