import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import sharp from 'sharp';
import type { Role } from '../../src/api/endpoint.ts';
import { v1Endpoints } from '../../src/api/v1/index.ts';
import { v1 } from '../../src/client/index.ts';
import { buildOpenApiDocument } from '../../src/server/openapi/document.ts';
import { LEGACY_KEY_PATTERN } from '../../src/server/security/api-key.ts';
import { APP_VERSION } from '../../src/server/version.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createProject, createUser, unique } from '../helpers/factories.ts';
import { encodeForm, rawRequest } from '../helpers/http.ts';
import { expandPath, type JsonSchema, type Operation, operationsOf, validArbitrary } from '../helpers/schema-samples.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

// T-FUZZ: property-based fuzzing of every operation from the OpenAPI document. Valid
// requests and mutations of them (wrong types, extra and poisonous properties, over-long strings,
// huge arrays, unicode, nulls, random path segments, other media types) are sent by every kind of
// caller (admin, manager, tester and viewer members, a non-member, an old-format key, no key) with
// varied headers (service.user present, absent, in odd letter case or someone else's; header names
// in odd case; Accept variants; old-format key shapes; duplicated headers). Whatever the input:
// never a 5xx; every error is problem+json whose `status` is the HTTP status; every 2xx JSON body
// matches its documented schema; a request without valid credentials never succeeds; a caller
// below an operation's role never succeeds; a non-member never reads or writes the project.
// T-FUZZ asks CI for 2 000 runs per dialect: 5-10 s each on 2 cores (idle to busy).
// Replay a failure with FUZZ_SEED=<seed> (and FUZZ_RUNS=<n> for more or fewer runs).

const DOCUMENT = buildOpenApiDocument(v1Endpoints, { version: 'v1', appVersion: APP_VERSION });
const OPERATIONS = operationsOf(DOCUMENT);
const RUNS = Number(process.env.FUZZ_RUNS ?? 2000);
const SEED = Number(process.env.FUZZ_SEED ?? randomBytes(4).readUInt32BE(0) >>> 1);

const LEAKS = [
  /\bat .+:\d+:\d+\)?/,
  /SQLITE_|no such (table|column)|relation "|duplicate key|violates .* constraint/i,
  /node_modules/,
  /\/(home|tmp|work|usr)\//,
];

const NASTY_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'role',
  'roles',
  'isAdmin',
  'id',
  'projectId',
  'ownerId',
  'createdAt',
  'keyHash',
  'lastUsedAt',
  'storagePath',
  'sha256',
  '',
  'x'.repeat(300),
];

/** Sets an own property, `__proto__` included, so JSON.stringify sends it. */
function withOwn(target: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const copy = { ...target };
  Object.defineProperty(copy, key, { value, enumerable: true, configurable: true, writable: true });
  return copy;
}

const deepNesting = fc.integer({ min: 50, max: 2000 }).map((depth) => {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { a: value };
  return value;
});

/** Values that break schemas: anything JSON, huge, odd unicode, NUL, nulls. */
const replacement: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom<unknown>(
      null,
      '',
      0,
      -1,
      1e308,
      true,
      [],
      {},
      '\u0000',
      'a\u0000b',
      '\ud800',
      '💥'.repeat(100),
      'x'.repeat(257),
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom(1_025, 65_537, 300_000).map((n) => 'x'.repeat(n)) },
  { weight: 1, arbitrary: fc.constantFrom(51, 1_001, 10_001, 20_001).map((n) => Array.from({ length: n }, (_, i) => `a${i}`)) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 300 }) },
  { weight: 1, arbitrary: deepNesting },
);

/** A mutation of a valid value: replace it, or (for objects and arrays) change, add or mutate one member. */
function mutationOf(value: unknown, depth = 0): fc.Arbitrary<unknown> {
  if (depth > 3) return replacement;
  if (Array.isArray(value)) {
    if (value.length === 0)
      return fc.oneof(
        replacement,
        replacement.map((r) => [r]),
      );
    return fc.oneof(
      replacement,
      fc.nat(value.length - 1).chain((i) => mutationOf(value[i], depth + 1).map((m) => value.map((v, j) => (j === i ? m : v)))),
    );
  }
  if (typeof value === 'object' && value !== null) {
    const object = value as Record<string, unknown>;
    const keys = Object.keys(object);
    const options: fc.Arbitrary<unknown>[] = [
      replacement,
      fc.tuple(fc.constantFrom(...NASTY_KEYS, ...keys), replacement).map(([key, r]) => withOwn(object, key, r)),
      fc.constantFrom(...NASTY_KEYS).map((key) => withOwn(object, key, { role: 'admin', isAdmin: true })),
    ];
    if (keys.length > 0)
      options.push(fc.constantFrom(...keys).chain((key) => mutationOf(object[key], depth + 1).map((m) => withOwn(object, key, m))));
    return fc.oneof(...options);
  }
  return replacement;
}

const junkSegment = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
  fc.constantFrom(
    '..',
    '.',
    '%',
    '%00',
    ' ',
    '\u0000',
    'null',
    'undefined',
    '-1',
    '0',
    'x'.repeat(600),
    "' OR 1=1 --",
    '00000000-0000-0000-0000-000000000000',
  ),
);

/** Who sends a request: project members of each role, the admin, a member of another project only, an old-format key, nobody. */
type Caller = 'member' | 'admin' | 'tester' | 'viewer' | 'outsider' | 'legacy' | 'anonymous';

interface Identity {
  email: string;
  key: string;
  role: Role;
}

const ROLE_ORDER: Role[] = ['viewer', 'tester', 'manager', 'admin'];

/** How the credential headers are sent; `uuid` is a random UUID for the forged-key shapes. */
interface HeaderVariant {
  token: 'as-is' | 'upper' | 'padded' | 'truncated' | 'no-hyphens' | 'braces' | 'urn' | 'random-uuid' | 'nil-uuid';
  user: 'absent' | 'own' | 'upper' | 'mixed' | 'padded' | 'other' | 'empty' | 'junk';
  nameCase: 'lower' | 'title' | 'upper';
  accept: string | undefined;
  duplicate: 'none' | 'token' | 'token-other' | 'user' | 'accept';
  uuid: string;
}

const ACCEPTS = [
  'application/json',
  'application/json; charset=utf-8',
  '*/*',
  'application/*',
  'APPLICATION/JSON',
  'application/problem+json',
  'text/html',
  'image/png',
  'application/xml',
  'application/json;q=0',
  'text/html, application/json;q=0.9',
  '',
  ';;,,',
];

const headerVariant: fc.Arbitrary<HeaderVariant> = fc.record({
  token: fc.oneof(
    { weight: 12, arbitrary: fc.constant('as-is' as const) },
    {
      weight: 4,
      arbitrary: fc.constantFrom<HeaderVariant['token']>(
        'upper',
        'padded',
        'truncated',
        'no-hyphens',
        'braces',
        'urn',
        'random-uuid',
        'nil-uuid',
      ),
    },
  ),
  user: fc.oneof(
    { weight: 6, arbitrary: fc.constant('own' as const) },
    { weight: 2, arbitrary: fc.constant('absent' as const) },
    { weight: 4, arbitrary: fc.constantFrom<HeaderVariant['user']>('upper', 'mixed', 'padded', 'other', 'empty', 'junk') },
  ),
  nameCase: fc.constantFrom<HeaderVariant['nameCase']>('lower', 'title', 'upper'),
  accept: fc.oneof(
    { weight: 6, arbitrary: fc.constant('application/json') },
    { weight: 1, arbitrary: fc.constant(undefined) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(...ACCEPTS),
    },
  ),
  duplicate: fc.oneof(
    { weight: 12, arbitrary: fc.constant('none' as const) },
    { weight: 4, arbitrary: fc.constantFrom<HeaderVariant['duplicate']>('token', 'token-other', 'user', 'accept') },
  ),
  uuid: fc.uuid(),
});

/** The key a variant sends for `key`, and whether it still is that key. */
function tokenOf(key: string, variant: HeaderVariant): { token: string; valid: boolean } {
  const legacy = LEGACY_KEY_PATTERN.test(key);
  switch (variant.token) {
    case 'as-is':
      return { token: key, valid: true };
    case 'upper':
      // Old-format keys compare case-insensitively; a standard key's letter case is part of the secret.
      return { token: key.toUpperCase(), valid: legacy };
    case 'padded':
      // Leading and trailing blanks are not part of an HTTP header value (RFC 9110 5.5).
      return { token: `  ${key} `, valid: true };
    case 'truncated':
      return { token: key.slice(0, -1), valid: false };
    case 'no-hyphens':
      return { token: key.replace(/-/g, ''), valid: !legacy };
    case 'braces':
      return { token: `{${key}}`, valid: false };
    case 'urn':
      return { token: `urn:uuid:${key}`, valid: false };
    case 'random-uuid':
      return { token: variant.uuid, valid: false };
    case 'nil-uuid':
      return { token: '00000000-0000-0000-0000-000000000000', valid: false };
  }
}

/** The service.user value a variant sends for the caller's e-mail (undefined: no header), and whether it names the caller. */
function userOf(email: string, other: string, variant: HeaderVariant): { user: string | undefined; matches: boolean } {
  switch (variant.user) {
    case 'absent':
      return { user: undefined, matches: false };
    case 'own':
      return { user: email, matches: true };
    case 'upper':
      return { user: email.toUpperCase(), matches: true };
    case 'mixed':
      return { user: [...email].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join(''), matches: true };
    case 'padded':
      return { user: ` ${email}  `, matches: true };
    case 'other':
      return { user: other, matches: false };
    case 'empty':
      return { user: '', matches: false };
    case 'junk':
      return { user: `x${email}`, matches: false };
  }
}

function headerName(name: string, variant: HeaderVariant): string {
  if (variant.nameCase === 'upper') return name.toUpperCase();
  if (variant.nameCase === 'title') return name.replace(/(^|[.-])([a-z])/g, (_m, sep: string, c: string) => sep + c.toUpperCase());
  return name;
}

interface FuzzRequest {
  op: Operation;
  caller: Caller;
  headers: HeaderVariant;
  path: Record<string, string>;
  query: Record<string, unknown>;
  body:
    | { kind: 'none' }
    | { kind: 'json'; value: unknown; type: string }
    | { kind: 'raw'; text: string; type: string }
    | { kind: 'form'; value: unknown };
}

const JSON_TYPES = ['application/json', 'application/json; charset=utf-8'];
const OTHER_TYPES = [
  'text/plain',
  'application/xml',
  'text/x-gherkin',
  'multipart/form-data; boundary=zzz',
  'application/x-www-form-urlencoded',
  'application/json; charset=latin1',
];

/** Known-good values by field name, so many requests get past the lookups into the handlers. */
type Known = Record<string, string>;

function withKnown(value: unknown, known: Known): fc.Arbitrary<unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fc.constant(value);
  const names = Object.keys(value).filter((k) => known[k] !== undefined);
  if (names.length === 0) return fc.constant(value);
  return fc.boolean().map((substitute) => (substitute ? { ...value, ...Object.fromEntries(names.map((n) => [n, known[n]])) } : value));
}

function requestArbitrary(op: Operation, known: Known): fc.Arbitrary<FuzzRequest> {
  const params = (op.raw.parameters as { name: string; in: string; schema: JsonSchema }[] | undefined) ?? [];
  const pathArbs: Record<string, fc.Arbitrary<string>> = {};
  for (const name of op.pathParams) {
    const schema = params.find((p) => p.name === name && p.in === 'path')?.schema ?? { type: 'string' };
    const options: fc.WeightedArbitrary<string>[] = [
      { weight: 1, arbitrary: validArbitrary(schema) as fc.Arbitrary<string> },
      { weight: 1, arbitrary: junkSegment },
    ];
    if (known[name]) options.push({ weight: 3, arbitrary: fc.constant(known[name] as string) });
    pathArbs[name] = fc.oneof(...options);
  }
  const validQuery = op.query ? validArbitrary(op.query).chain((q) => withKnown(q, known)) : fc.constant({});
  const query = fc.oneof(
    { weight: 3, arbitrary: validQuery },
    { weight: 2, arbitrary: validQuery.chain((q) => mutationOf(q)) },
  ) as fc.Arbitrary<Record<string, unknown>>;

  const bodies: fc.WeightedArbitrary<FuzzRequest['body']>[] = [
    { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.string({ maxLength: 200 }), fc.constantFrom(...JSON_TYPES, ...OTHER_TYPES))
        .map(([text, type]) => ({ kind: 'raw' as const, text, type })),
    },
  ];
  if (op.body) {
    const valid = validArbitrary(op.body).chain((b) => withKnown(b, known));
    const json = op.consumes.includes('application/json');
    bodies.push(
      {
        weight: json ? 4 : 1,
        arbitrary: fc.tuple(valid, fc.constantFrom(...JSON_TYPES)).map(([value, type]) => ({ kind: 'json' as const, value, type })),
      },
      {
        weight: 4,
        arbitrary: fc
          .tuple(
            valid.chain((v) => mutationOf(v)),
            fc.constantFrom(...JSON_TYPES),
          )
          .map(([value, type]) => ({ kind: 'json' as const, value, type })),
      },
    );
    if (op.consumes.includes('multipart/form-data')) {
      bodies.push({
        weight: 6,
        arbitrary: fc
          .oneof(
            valid,
            valid.chain((v) => mutationOf(v)),
          )
          .map((value) => ({ kind: 'form' as const, value })),
      });
    }
    for (const type of op.consumes.filter((t) => t.startsWith('text/'))) {
      bodies.push({
        weight: 2,
        arbitrary: fc.string({ unit: 'binary', maxLength: 500 }).map((text) => ({ kind: 'raw' as const, text, type })),
      });
    }
  } else {
    bodies.push({
      weight: 1,
      arbitrary: fc.jsonValue({ maxDepth: 2 }).map((value) => ({ kind: 'json' as const, value, type: 'application/json' })),
    });
  }
  return fc
    .record({
      op: fc.constant(op),
      caller: fc.oneof(
        { weight: 4, arbitrary: fc.constant<Caller>('member') },
        { weight: 3, arbitrary: fc.constant<Caller>('admin') },
        { weight: 4, arbitrary: fc.constantFrom<Caller>('tester', 'viewer', 'outsider', 'legacy', 'anonymous') },
      ),
      headers: headerVariant,
      path: fc.record(pathArbs),
      query,
      body: fc.oneof(...bodies),
    })
    .map((request) => Object.assign(request, { [fc.toStringMethod]: () => describeRequest(request) }));
}

/** A counterexample as a reader wants it: the operation and the inputs, long values cut short. */
function describeRequest(request: FuzzRequest): string {
  const short = (value: unknown) => {
    const text =
      JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' && v.length > 80 ? `${v.slice(0, 40)}…(${v.length} chars)` : v)) ??
      'undefined';
    return text.length > 600 ? `${text.slice(0, 600)}…` : text;
  };
  const { op, body } = request;
  const bodyText =
    body.kind === 'none'
      ? 'none'
      : body.kind === 'raw'
        ? `${body.type} ${short(body.text)}`
        : `${body.kind === 'json' ? body.type : 'multipart'} ${short(body.value)}`;
  const { uuid: _uuid, ...headers } = request.headers;
  return `${op.method} ${op.path} (${op.operationId}) as ${request.caller} with headers ${JSON.stringify(headers)}; path ${short(request.path)}; query ${short(request.query)}; body ${bodyText}`;
}

function queryString(query: unknown): string {
  if (typeof query !== 'object' || query === null || Array.isArray(query)) return `?q=${encodeURIComponent(JSON.stringify(query))}`;
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (Array.isArray(value)) for (const v of value) search.append(name, typeof v === 'string' ? v : JSON.stringify(v));
    else search.append(name, typeof value === 'string' ? value : JSON.stringify(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** A multipart body from an object: file-like fields become file parts, the rest JSON text fields. */
function formOf(value: unknown): FormData {
  const form = new FormData();
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    form.append('metadata', JSON.stringify(value));
    return form;
  }
  for (const [name, field] of Object.entries(value)) {
    if (['file', 'baseline', 'actual', 'diff'].includes(name)) form.append(name, new Blob([String(field)]), `${name}.bin`);
    else form.append(name, typeof field === 'string' ? field : JSON.stringify(field));
  }
  return form;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** The credential and Accept headers of a request, and whether they authenticate as the caller (undefined: no opinion). */
function credentialHeaders(
  request: FuzzRequest,
  identities: Identities,
): { headers: Record<string, string | string[]>; authenticates: boolean | undefined } {
  const variant = request.headers;
  const headers: Record<string, string | string[]> = {};
  const set = (name: string, value: string, twice: string | undefined) => {
    headers[headerName(name, variant)] = twice === undefined ? value : [value, twice];
  };
  if (variant.accept !== undefined) set('accept', variant.accept, variant.duplicate === 'accept' ? 'application/json' : undefined);
  const identity = request.caller === 'anonymous' ? undefined : identities[request.caller];
  const { user, matches } = userOf(identity?.email ?? identities.member.email, identities.otherEmail, variant);
  if (user !== undefined) set('service.user', user, variant.duplicate === 'user' ? user : undefined);
  if (!identity) return { headers, authenticates: false };
  const { token, valid } = tokenOf(identity.key, variant);
  const second = variant.duplicate === 'token' ? token : variant.duplicate === 'token-other' ? identities.admin.key : undefined;
  set('service.api-token', token, second);
  // Two values of one credential header are ambiguous: no opinion on how they are answered, only that nothing breaks.
  if (second !== undefined) return { headers, authenticates: undefined };
  if (!LEGACY_KEY_PATTERN.test(identity.key) || !valid) return { headers, authenticates: valid };
  // An old-format key also needs its owner's e-mail, in a single service.user header.
  if (!matches) return { headers, authenticates: false };
  return { headers, authenticates: variant.duplicate === 'user' ? undefined : true };
}

async function send(
  agent: http.Agent,
  server: TestServer,
  request: FuzzRequest,
  credentials: Record<string, string | string[]>,
): Promise<Answer> {
  let path: string;
  try {
    path = expandPath(request.op.path, request.path);
  } catch {
    path = request.op.path;
  }
  const headers: Record<string, string | string[]> = { ...credentials };
  let payload: Buffer | undefined;
  const { body } = request;
  if (body.kind === 'json') {
    payload = Buffer.from(JSON.stringify(body.value) ?? 'null');
    headers['content-type'] = body.type;
  } else if (body.kind === 'raw') {
    payload = Buffer.from(body.text);
    headers['content-type'] = body.type;
  } else if (body.kind === 'form') {
    const form = await encodeForm(formOf(body.value));
    payload = form.payload;
    headers['content-type'] = form.contentType;
  }
  if (payload) headers['content-length'] = String(payload.length);
  // The path goes out as is: a URL object would resolve `.` and `..` segments before the server saw them.
  const target = { base: server.url, path: `/api/v1${path}${queryString(request.query)}` };
  const { status, headers: answered, text } = await rawRequest(target, { method: request.op.method, headers, body: payload, agent });
  return { status, headers: answered, text };
}

/** Validators of the documented 2xx JSON bodies, by operation and status. */
function responseValidators(): Map<string, (data: unknown) => boolean> {
  const ajv = addFormats.default(new Ajv({ strict: false, allErrors: false, validateFormats: true }));
  const validators = new Map<string, (data: unknown) => boolean>();
  for (const op of OPERATIONS) {
    for (const [status, response] of Object.entries(
      op.raw.responses as Record<string, { content?: Record<string, { schema: JsonSchema }> }>,
    )) {
      const schema = response.content?.['application/json']?.schema;
      if (/^2\d\d$/.test(status) && schema)
        validators.set(`${op.operationId} ${status}`, ajv.compile(schema) as (data: unknown) => boolean);
    }
  }
  return validators;
}

/** What every answer must satisfy, whatever was sent. */
function checkAnswer(request: FuzzRequest, answer: Answer, validators: Map<string, (data: unknown) => boolean>): void {
  const what = `${request.op.method} ${request.op.operationId} → ${answer.status}: ${answer.text.slice(0, 400)}`;
  assert.ok(answer.status < 500, `server error: ${what}`);
  assert.equal(answer.headers['x-content-type-options'], 'nosniff', what);
  const type = String(answer.headers['content-type'] ?? '');
  if (answer.status >= 400) {
    assert.match(type, /^application\/problem\+json/, what);
    const problem = JSON.parse(answer.text) as Record<string, unknown>;
    assert.equal(problem.status, answer.status, what);
    assert.match(String(problem.code), /^[A-Z_]+$/, what);
    assert.equal(typeof problem.type, 'string', what);
    assert.equal(typeof problem.title, 'string', what);
    assert.equal(problem.instance, `urn:attest:request:${answer.headers['x-request-id']}`, what);
    for (const leak of LEAKS) assert.doesNotMatch(answer.text, leak, `leak: ${what}`);
  } else if (answer.status >= 200 && answer.status < 300 && type.startsWith('application/json')) {
    const validate = validators.get(`${request.op.operationId} ${answer.status}`);
    assert.ok(validate, `undocumented success status: ${what}`);
    assert.ok(validate(JSON.parse(answer.text)), `the body does not match the documented schema: ${what}`);
  }
}

interface Identities extends Record<Exclude<Caller, 'anonymous'>, Identity> {
  /** An e-mail of a real user who is none of the callers. */
  otherEmail: string;
}

/**
 * Who may get what, whatever the input: a request that does not authenticate never succeeds and
 * never reaches a role check (401, or an error before routing); a caller below the operation's
 * role never succeeds; a caller outside the project never succeeds on an id of the project nor
 * sees one in an answer (`missing`, which echoes the ids asked for, aside).
 */
function checkAccess(
  request: FuzzRequest,
  answer: Answer,
  authenticates: boolean | undefined,
  identities: Identities,
  projectIds: string[],
): void {
  const what = `${request.op.method} ${request.op.operationId} as ${request.caller} → ${answer.status}: ${answer.text.slice(0, 300)}`;
  const success = answer.status >= 200 && answer.status < 300;
  if (request.op.authz?.scope === 'public') return;
  if (authenticates === false) {
    assert.ok(!success && answer.status !== 403, `a request without valid credentials was served: ${what}`);
    if (answer.status === 401) assert.ok(answer.headers['www-authenticate'], `a 401 without WWW-Authenticate: ${what}`);
    return;
  }
  if (authenticates === true) assert.notEqual(answer.status, 401, `valid credentials were refused: ${what}`);
  if (!success || request.caller === 'anonymous') return;
  const required = request.op.authz?.role ?? 'viewer';
  const { role } = identities[request.caller];
  assert.ok(ROLE_ORDER.indexOf(role) >= ROLE_ORDER.indexOf(required), `a ${role} was served an operation for ${required}: ${what}`);
  if (request.caller !== 'outsider') return;
  const addressed = Object.values(request.path).filter((value) => projectIds.includes(value));
  assert.deepEqual(addressed, [], `a non-member was served a resource of another project: ${what}`);
  let text = answer.text;
  if (String(answer.headers['content-type'] ?? '').startsWith('application/json')) {
    const { missing: _missing, ...rest } = JSON.parse(answer.text) as Record<string, unknown>;
    text = JSON.stringify(rest);
  }
  for (const id of projectIds) assert.ok(!text.includes(id), `a non-member was shown ${id} of another project: ${what}`);
}

async function pngBytes(): Promise<Buffer> {
  const [r, g, b] = [...randomBytes(3)] as [number, number, number];
  return sharp({ create: { width: 3, height: 2, channels: 3, background: { r, g, b } } })
    .png()
    .toBuffer();
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] fuzzing every operation (T-FUZZ)`, () => {
    let server: TestServer;
    const known: Known = {};
    const identities = {} as Identities;
    const agent = new http.Agent({ keepAlive: true });
    before(async () => {
      server = await startTestServer(dialect, { ATTEST_SQLITE_SYNCHRONOUS: 'NORMAL' });
      // A project with members of each role (the fuzzing callers), a member of another project
      // only, another member whose e-mail and key the requests address, and one resource of each
      // kind, so valid ids reach the handlers.
      const project = await createProject(server, 'fuzz');
      const elsewhere = await createProject(server, 'elsewhere');
      const admin = server.admin.client;
      const asIdentity = (user: { email: string; key: string }, role: Role): Identity => ({ email: user.email, key: user.key, role });
      identities.admin = { email: server.admin.email, key: server.admin.key, role: 'admin' };
      identities.member = asIdentity(await createUser(server, ['manager'], { projects: [project.id] }), 'manager');
      identities.tester = asIdentity(await createUser(server, ['tester'], { projects: [project.id] }), 'tester');
      identities.viewer = asIdentity(await createUser(server, ['viewer'], { projects: [project.id] }), 'viewer');
      identities.outsider = asIdentity(await createUser(server, ['tester'], { projects: [elsewhere.id] }), 'tester');
      const legacyOwner = await createUser(server, ['manager'], { projects: [project.id] });
      const legacyKey = await admin.call(v1.users.createApiKey, {
        params: { email: legacyOwner.email },
        body: { name: 'old format', format: 'legacy', value: randomUUID() },
      });
      identities.legacy = { email: legacyOwner.email, key: legacyKey.key, role: 'manager' };
      const target = await createUser(server, ['tester'], { projects: [project.id] });
      identities.otherEmail = target.email;
      known.projectId = project.id;
      known.email = target.email;
      known.keyId = target.keyId;
      known.deviceId = unique('fuzz-dev-');
      await admin.call(v1.devices.registerDevice, { body: { id: known.deviceId, name: 'Fuzz device', platform: 'android' } });
      known.testId = (
        await admin.call(v1.tests.createTest, { body: { projectId: project.id, name: 'Fuzz', steps: [{ action: 'a', expected: 'b' }] } })
      ).id;
      known.jobId = (await admin.call(v1.jobs.createJob, { body: { projectId: project.id, testIds: [known.testId] } })).id;
      known.testRunId = (await admin.call(v1.runs.createRun, { body: { projectId: project.id, name: 'Fuzz run' } })).id;
      const form = new FormData();
      form.append('metadata', JSON.stringify({ testRunId: known.testRunId, kind: 'screenshot', name: 'fuzz.png' }));
      form.append('file', new Blob([await pngBytes()], { type: 'image/png' }), 'fuzz.png');
      const upload = await fetch(`${server.url}/api/v1/projects/${project.id}/artifact`, {
        method: 'POST',
        headers: { 'service.api-token': server.admin.key },
        body: form,
      });
      assert.equal(upload.status, 201, await upload.clone().text());
      const artifact = (await upload.json()) as { id: string; images: { id: string }[] };
      known.artifactId = artifact.id;
      known.ids = artifact.id;
      known.imageId = artifact.images[0]?.id as string;
      known.stepKey = 'step-1';
    });
    after(async () => {
      agent.destroy();
      await server.close();
    });

    test(`no input makes any operation answer 5xx or break the error contract (${RUNS} runs)`, async (t) => {
      t.diagnostic(`fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS})`);
      const validators = responseValidators();
      const projectIds = ['projectId', 'testId', 'jobId', 'testRunId', 'artifactId', 'imageId'].map((name) => known[name] as string);
      const arbitrary = fc.constantFrom(...OPERATIONS).chain((op) => requestArbitrary(op, known));
      const statuses = new Map<number, number>();
      const byCaller = new Map<string, number>();
      let authenticated = 0;
      let successes = 0;
      await fc.assert(
        fc.asyncProperty(arbitrary, async (request) => {
          const { headers, authenticates } = credentialHeaders(request, identities);
          const answer = await send(agent, server, request, headers);
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          const tally = `${request.caller} ${authenticates === undefined ? '?' : authenticates ? 'valid' : 'invalid'}`;
          byCaller.set(tally, (byCaller.get(tally) ?? 0) + 1);
          if (authenticates === true) {
            authenticated++;
            if (answer.status < 300) successes++;
          }
          checkAnswer(request, answer, validators);
          checkAccess(request, answer, authenticates, identities, projectIds);
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
      t.diagnostic(`statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}`);
      t.diagnostic(`callers: ${JSON.stringify(Object.fromEntries([...byCaller].sort()))}`);
      // The generators are only worth something if they reach the handlers, not only the validators.
      assert.ok(
        successes > authenticated / 20,
        `only ${successes} of ${authenticated} authenticated requests succeeded: the valid generators are broken`,
      );
    });
  });
}
