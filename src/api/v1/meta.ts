import { Type } from 'typebox';
import { Email, Nullable, RoleSchema, Timestamp, Uuid } from '../common.ts';
import { endpoint } from '../endpoint.ts';

export const Health = Type.Object({ status: Type.Literal('ok'), version: Type.String({ maxLength: 40 }) }, { additionalProperties: false });

export const Readiness = Type.Object(
  {
    status: Type.Union([Type.Literal('ready'), Type.Literal('starting'), Type.Literal('stopping')]),
    database: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')]),
    blobs: Type.Union([Type.Literal('files'), Type.Literal('s3')], {
      description: 'Where blobs live: the data folder, or an S3-compatible bucket.',
    }),
  },
  { additionalProperties: false },
);

export const Me = Type.Object(
  {
    id: Uuid,
    email: Email,
    name: Type.String({ maxLength: 256 }),
    roles: Type.Array(RoleSchema, { maxItems: 4 }),
    role: RoleSchema,
    key: Type.Object(
      {
        id: Uuid,
        format: Type.Union([Type.Literal('standard'), Type.Literal('legacy'), Type.Literal('session')]),
        scope: Type.Union([Type.Literal('full'), Type.Literal('read')]),
        expiresAt: Nullable(Timestamp),
      },
      { additionalProperties: false },
    ),
    projectIds: Type.Array(Uuid, { maxItems: 100_000, description: 'Projects the caller is a member of.' }),
  },
  { additionalProperties: false },
);

export const LoginBody = Type.Object(
  { email: Email, password: Type.String({ minLength: 1, maxLength: 1024 }) },
  { additionalProperties: false },
);

export const LoginResult = Type.Object(
  {
    key: Type.String({ maxLength: 100, description: 'A short-lived session key, sent in `service.api-token` like any API key.' }),
    keyId: Uuid,
    expiresAt: Timestamp,
  },
  { additionalProperties: false },
);

export const getHealth = endpoint({
  operationId: 'getHealth',
  method: 'GET',
  path: '/health',
  summary: 'Liveness: the process is up and serving.',
  tag: 'Meta',
  access: { scope: 'public' },
  responses: { 200: Health },
});

export const getReadiness = endpoint({
  operationId: 'getReadiness',
  method: 'GET',
  path: '/health/ready',
  summary:
    'Readiness: start-up recovery is done and both the database and the blob store answer; 503 otherwise, naming which does not (`unreachable`).',
  tag: 'Meta',
  access: { scope: 'public' },
  responses: { 200: Readiness },
});

export const getOpenApi = endpoint({
  operationId: 'getOpenApi',
  method: 'GET',
  path: '/openapi.json',
  summary: 'This API as an OpenAPI 3.1 document; open, so code generators and linters can fetch it by URL.',
  tag: 'Meta',
  access: { scope: 'public' },
  responses: { 200: Type.Object({}, { additionalProperties: true, description: 'The OpenAPI 3.1 document.' }) },
});

export const getMe = endpoint({
  operationId: 'getMe',
  method: 'GET',
  path: '/me',
  summary: 'The caller: user, effective role, the key in use and project memberships.',
  tag: 'Meta',
  access: { scope: 'global', role: 'viewer' },
  responses: { 200: Me },
});

export const login = endpoint({
  operationId: 'login',
  method: 'POST',
  path: '/auth/login',
  summary: 'Exchange an e-mail and password for a short-lived session key.',
  tag: 'Meta',
  access: { scope: 'public' },
  body: LoginBody,
  responses: { 200: LoginResult },
});
