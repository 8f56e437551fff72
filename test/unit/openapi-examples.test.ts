import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ValidateFunction } from 'ajv';
import { v1Endpoints } from '../../src/api/v1/index.ts';
import { buildOpenApiDocument } from '../../src/server/openapi/document.ts';
import { OPERATION_EXAMPLES, type OperationExamples } from '../../src/server/openapi/examples/index.ts';
import { createAjv } from '../../src/server/validation.ts';
import { dereference, type JsonSchema } from '../helpers/schema-samples.ts';

// SEC-9a: every operation of the OpenAPI document shows a request and answer a client can copy,
// and every example is valid for the schema it illustrates (closed objects included).

type MediaType = { schema: JsonSchema; example?: unknown };
type Operation = {
  operationId: string;
  requestBody?: { content: Record<string, MediaType> };
  responses: Record<string, { content?: Record<string, MediaType> }>;
};

const build = (examples?: ReadonlyMap<string, OperationExamples>) =>
  buildOpenApiDocument(v1Endpoints, { version: 'v1', appVersion: 'test', ...(examples ? { examples } : {}) });

/** Every media type of every operation: where it is, and what it holds. */
function* mediaTypes(doc: JsonSchema): Generator<{ at: string; status: string | undefined; type: string; media: MediaType }> {
  for (const item of Object.values(doc.paths as Record<string, Record<string, Operation>>)) {
    for (const op of Object.values(item)) {
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) {
        yield { at: `${op.operationId} request ${type}`, status: undefined, type, media };
      }
      for (const [status, response] of Object.entries(op.responses)) {
        for (const [type, media] of Object.entries(response.content ?? {})) {
          yield { at: `${op.operationId} ${status} ${type}`, status, type, media };
        }
      }
    }
  }
}

/** Request bodies, 2xx JSON answers and problem answers without an example. */
function missingExamples(doc: JsonSchema): string[] {
  const missing: string[] = [];
  for (const { at, status, type, media } of mediaTypes(doc)) {
    const wanted = status === undefined || (status.startsWith('2') && type === 'application/json') || type === 'application/problem+json';
    if (wanted && media.example === undefined) missing.push(at);
  }
  return missing;
}

/** Examples the (dereferenced) schema beside them refuses, with Ajv's first error. */
function invalidExamples(doc: JsonSchema): string[] {
  const ajv = createAjv(false);
  const compiled = new Map<string, ValidateFunction>();
  const problems: string[] = [];
  for (const { at, media } of mediaTypes(doc)) {
    if (media.example === undefined) continue;
    const schema = dereference(media.schema, doc);
    const key = JSON.stringify(schema);
    const validate = compiled.get(key) ?? ajv.compile(schema);
    compiled.set(key, validate);
    if (!validate(structuredClone(media.example))) {
      const error = validate.errors?.[0];
      problems.push(`${at}: ${error?.instancePath || '/'} ${error?.message} ${JSON.stringify(error?.params)}`);
    }
  }
  return problems;
}

describe('OpenAPI examples', () => {
  const doc = build();

  test('every request body, 2xx JSON answer and problem answer has an example', () => {
    assert.deepEqual(missingExamples(doc), []);
    const known = new Set(v1Endpoints.map((e) => e.operationId));
    assert.deepEqual(
      [...OPERATION_EXAMPLES.keys()].filter((id) => !known.has(id)),
      [],
      'examples for operations the contract does not have',
    );
  });

  test('every example validates against its schema, additionalProperties: false included', () => {
    assert.deepEqual(invalidExamples(doc), []);
  });

  test('examples agree with each other: one project, and the run of the results in its artifacts', () => {
    const examples = (id: string) => OPERATION_EXAMPLES.get(id) as OperationExamples;
    const run = examples('getRun').responses[200] as { id: string; projectId: string };
    const results = examples('getResults').responses[200] as { testRunId: string; steps: { id: string }[] };
    const screenshot = examples('uploadArtifact').responses[201] as { testRunId: string; stepId: string; images: unknown[] };
    assert.equal(results.testRunId, run.id);
    assert.equal(screenshot.testRunId, run.id);
    assert.ok(
      results.steps.some((s) => s.id === screenshot.stepId),
      "the screenshot's step is a step of the run",
    );
    assert.equal(screenshot.images.length, 1);
    assert.equal((examples('getProject').responses[200] as { id: string }).id, run.projectId);
  });

  test('the checks catch a missing example and a value the schema refuses', () => {
    const broken = new Map(OPERATION_EXAMPLES);
    const login = broken.get('login') as OperationExamples;
    broken.set('login', { responses: login.responses });
    const getRun = broken.get('getRun') as OperationExamples;
    broken.set('getRun', { responses: { 200: { ...(getRun.responses[200] as object), verdict: 'great', extra: 1 } } });
    const createRun = broken.get('createRun') as OperationExamples;
    broken.set('createRun', { ...createRun, responses: { 201: createRun.responses[201] } });
    const doc = build(broken);
    assert.deepEqual(missingExamples(doc), ['login request application/json', 'createRun 200 application/json']);
    const invalid = invalidExamples(doc);
    assert.equal(invalid.length, 1, invalid.join('\n'));
    assert.match(
      invalid[0] as string,
      /^getRun 200 application\/json: \/ must NOT have additional properties \{"additionalProperty":"extra"\}$/,
    );
  });
});
