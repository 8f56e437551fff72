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
    unreachable: Type.Optional(
      Type.Array(Type.Literal('blob store'), {
        maxItems: 1,
        description:
          'Present when the blob store does not answer. The instance stays ready: every instance shares the store, so a ' +
          'balancer taking them out would refuse the requests that need no blob too; those that need it answer 503 ' +
          '`UNAVAILABLE` with `Retry-After` meanwhile.',
      }),
    ),
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
    'Readiness: start-up recovery is done, the instance is not stopping and the database answers; 503 otherwise, naming what does not ' +
    '(`unreachable`). A blob store that does not answer is named in the 200 (`unreachable`), and named with the database in a 503.',
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

export const AuthMethods = Type.Object(
  {
    password: Type.Boolean({ description: 'Whether `POST /auth/login` accepts an e-mail and password (`ATTEST_PASSWORD_LOGIN`).' }),
    sso: Type.Union(
      [
        Type.Object(
          { name: Type.String({ maxLength: 200, description: 'The provider, as the login page names it: "Sign in with <name>".' }) },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      { description: 'OpenID Connect single sign-on, when configured (`ATTEST_OIDC_ISSUER`); null otherwise.' },
    ),
  },
  { additionalProperties: false },
);

export const SsoStart = Type.Object(
  {
    authorizationUrl: Type.String({
      maxLength: 8192,
      description:
        "The provider's authorization endpoint with this sign-in's `state`, `nonce` and PKCE `code_challenge` (S256): send the browser there.",
    }),
    state: Type.String({
      maxLength: 100,
      description: 'The same `state` as in the URL: keep it (this tab only) and compare it with the one the provider sends back.',
    }),
    expiresAt: Timestamp,
  },
  { additionalProperties: false },
);

export const SsoFinishBody = Type.Object(
  {
    state: Type.String({ minLength: 1, maxLength: 200, description: 'The `state` query parameter the provider sent back.' }),
    code: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'The `code` query parameter, on success.' })),
    iss: Type.Optional(
      Type.String({ minLength: 1, maxLength: 2048, description: 'The `iss` query parameter (RFC 9207), when the provider sends one.' }),
    ),
    error: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'The `error` query parameter, when the provider refused.' }),
    ),
    error_description: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: false },
);

export const SsoLoginResult = Type.Object(
  {
    key: LoginResult.properties.key,
    keyId: Uuid,
    expiresAt: Timestamp,
    email: Email,
  },
  { additionalProperties: false },
);

export const getAuthMethods = endpoint({
  operationId: 'getAuthMethods',
  method: 'GET',
  path: '/auth/methods',
  summary: 'How people sign in to the web interface here: password, single sign-on (with the provider named), or both.',
  tag: 'Meta',
  access: { scope: 'public' },
  responses: { 200: AuthMethods },
});

export const startSsoLogin = endpoint({
  operationId: 'startSsoLogin',
  method: 'POST',
  path: '/auth/sso/start',
  summary:
    "Start an OpenID Connect sign-in: the provider's authorization URL, with state, nonce and PKCE kept by the server (404 when single sign-on is not configured).",
  tag: 'Meta',
  access: { scope: 'public' },
  responses: { 200: SsoStart },
});

export const finishSsoLogin = endpoint({
  operationId: 'finishSsoLogin',
  method: 'POST',
  path: '/auth/sso/finish',
  summary:
    'Finish an OpenID Connect sign-in with what the provider sent back to /login/sso: the code is exchanged, the user created on first sign-in, roles and memberships set from the groups claim, and a session key answered as `POST /auth/login` does.',
  tag: 'Meta',
  access: { scope: 'public' },
  body: SsoFinishBody,
  responses: { 200: SsoLoginResult },
});
