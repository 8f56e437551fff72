import { Type } from 'typebox';
import {
  Email,
  EmailParams,
  NAME_MAX,
  Name,
  NoContent,
  Nullable,
  Page,
  PageQuery,
  RoleSchema,
  Timestamp,
  UUID_PATTERN,
  Uuid,
} from '../common.ts';
import { endpoint } from '../endpoint.ts';

const Roles = Type.Array(RoleSchema, { minItems: 1, maxItems: 4, uniqueItems: true });
const Password = Type.String({ minLength: 12, maxLength: 1024, description: 'At least 12 characters.' });

export const User = Type.Object(
  {
    id: Uuid,
    email: Email,
    name: Type.String({ maxLength: NAME_MAX }),
    roles: Roles,
    hasPassword: Type.Boolean(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { additionalProperties: false },
);

export const CreateUserBody = Type.Object(
  { email: Email, name: Name, roles: Type.Optional(Roles), password: Type.Optional(Password) },
  { additionalProperties: false },
);

export const listUsers = endpoint({
  operationId: 'listUsers',
  method: 'GET',
  path: '/users',
  summary: 'List users (admin).',
  tag: 'Users',
  access: { scope: 'global', role: 'admin' },
  querystring: Type.Object(
    {
      ...PageQuery,
      role: Type.Optional(RoleSchema),
      email: Type.Optional(Type.String({ maxLength: 254, description: 'Substring of the e-mail.' })),
    },
    { additionalProperties: false },
  ),
  responses: { 200: Page(User) },
});

export const createUser = endpoint({
  operationId: 'createUser',
  method: 'POST',
  path: '/users',
  summary: 'Create a user (admin). Roles default to viewer.',
  tag: 'Users',
  access: { scope: 'global', role: 'admin' },
  body: CreateUserBody,
  responses: { 201: User },
});

export const getUser = endpoint({
  operationId: 'getUser',
  method: 'GET',
  path: '/users/{email}',
  summary: 'Get a user by e-mail (admin, or the user themself).',
  tag: 'Users',
  access: { scope: 'global', role: 'viewer' },
  params: EmailParams,
  responses: { 200: User },
});

export const setUserRoles = endpoint({
  operationId: 'setUserRoles',
  method: 'PUT',
  path: '/users/{email}/roles',
  summary: "Replace a user's roles (admin). The last admin cannot be demoted.",
  tag: 'Users',
  access: { scope: 'global', role: 'admin' },
  params: EmailParams,
  body: Type.Object({ roles: Roles }, { additionalProperties: false }),
  responses: { 200: User },
});

export const setUserPassword = endpoint({
  operationId: 'setUserPassword',
  method: 'PUT',
  path: '/users/{email}/password',
  summary: "Set a user's web-interface password (admin, or the user themself).",
  description:
    'Ends every web session of the user but the one that made the change (SEC-2e). Called with a web session (a key from ' +
    "`POST /auth/login`), the body must also carry the caller's own current password in `currentPassword`, or, for a user " +
    'who has no password (single sign-on only), the session must come from a sign-in at most 10 minutes old ' +
    '(403 `REAUTHENTICATION_REQUIRED` otherwise, SEC-2g). Called with an API key, nothing more is asked.',
  tag: 'Users',
  access: { scope: 'global', role: 'viewer' },
  params: EmailParams,
  body: Type.Object(
    {
      password: Password,
      currentPassword: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 1024,
          description:
            "The caller's own current password, required when the caller is a web session and ignored otherwise: a stolen " +
            'session must not take over its account (REAUTHENTICATION_REQUIRED when missing or wrong).',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  responses: { 204: NoContent },
});

export const deleteUser = endpoint({
  operationId: 'deleteUser',
  method: 'DELETE',
  path: '/users/{email}',
  summary: 'Delete a user (admin): revokes their keys at once, keeps the records they created.',
  tag: 'Users',
  access: { scope: 'global', role: 'admin' },
  params: EmailParams,
  responses: { 204: NoContent },
});

export const ApiKey = Type.Object(
  {
    id: Uuid,
    name: Type.String({ maxLength: NAME_MAX }),
    format: Type.Union([Type.Literal('standard'), Type.Literal('legacy'), Type.Literal('session')]),
    scope: Type.Union([Type.Literal('full'), Type.Literal('read')]),
    hint: Type.String({ maxLength: 40, description: 'The first and last characters, to recognise the key.' }),
    createdAt: Timestamp,
    expiresAt: Nullable(Timestamp),
    lastUsedAt: Nullable(Timestamp),
    revokedAt: Nullable(Timestamp),
  },
  { additionalProperties: false },
);

export const CreatedApiKey = Type.Object(
  {
    ...ApiKey.properties,
    key: Type.String({ maxLength: 100, description: 'The secret. Shown this once; only its digest is stored.' }),
  },
  { additionalProperties: false },
);

export const CreateApiKeyBody = Type.Object(
  {
    name: Name,
    format: Type.Optional(
      Type.Union([Type.Literal('standard'), Type.Literal('legacy')], { description: 'Default standard; legacy (UUID) is admin-only.' }),
    ),
    value: Type.Optional(
      Type.String({
        pattern: `^${UUID_PATTERN}$`,
        maxLength: 36,
        description: 'Import an existing legacy key value (admin, format legacy).',
      }),
    ),
    scope: Type.Optional(Type.Union([Type.Literal('full'), Type.Literal('read')], { description: 'read caps the key at viewer.' })),
    expiresAt: Type.Optional(Nullable(Timestamp)),
    password: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description:
          "The caller's own password, required when the caller is a web session (a key from POST /auth/login) and ignored otherwise: " +
          'a session must not turn into a long-lived key without it (REAUTHENTICATION_REQUIRED when missing or wrong).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const listApiKeys = endpoint({
  operationId: 'listApiKeys',
  method: 'GET',
  path: '/users/{email}/apikeys',
  summary: "List a user's API keys, without secrets (admin, or the user themself).",
  tag: 'API keys',
  access: { scope: 'global', role: 'viewer' },
  params: EmailParams,
  querystring: Type.Object(
    {
      ...PageQuery,
      includeRevoked: Type.Optional(Type.Boolean()),
      unusedForDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 36500, description: 'Only keys not used for this many days.' })),
    },
    { additionalProperties: false },
  ),
  responses: { 200: Page(ApiKey) },
});

export const createApiKey = endpoint({
  operationId: 'createApiKey',
  method: 'POST',
  path: '/users/{email}/apikeys',
  summary: 'Create (or, for admins, import a legacy) API key; the answer holds the secret once.',
  description:
    "Called with a web session (a key from `POST /auth/login`), the body must also carry the caller's own `password` " +
    '("sudo mode", as GitHub asks before such changes): a missing or wrong one answers 403 `REAUTHENTICATION_REQUIRED`, and wrong ' +
    'ones count as failed logins (429 `RATE_LIMITED` with `Retry-After` once the account or address is throttled). Called with an ' +
    'API key, no password is asked: its holder already holds a key, and a user may have no password at all.',
  tag: 'API keys',
  access: { scope: 'global', role: 'viewer' },
  params: EmailParams,
  body: CreateApiKeyBody,
  responses: { 201: CreatedApiKey },
});

export const revokeApiKey = endpoint({
  operationId: 'revokeApiKey',
  method: 'DELETE',
  path: '/users/{email}/apikeys/{keyId}',
  summary: 'Revoke an API key; it stops working on the next request.',
  tag: 'API keys',
  access: { scope: 'global', role: 'viewer' },
  params: Type.Object({ email: Email, keyId: Uuid }, { additionalProperties: false }),
  responses: { 204: NoContent },
});

export const AuditEntry = Type.Object(
  {
    id: Uuid,
    at: Timestamp,
    actorUserId: Nullable(Uuid),
    action: Type.String({ maxLength: 64 }),
    targetType: Type.String({ maxLength: 64 }),
    targetId: Type.String({ maxLength: 256 }),
    details: Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 50 }),
    requestId: Nullable(Type.String({ maxLength: 100 })),
  },
  { additionalProperties: false },
);

export const listAuditLog = endpoint({
  operationId: 'listAuditLog',
  method: 'GET',
  path: '/audit',
  summary: 'The audit log of role changes, deletions and key creation/revocation, newest first (admin).',
  tag: 'Users',
  access: { scope: 'global', role: 'admin' },
  querystring: Type.Object(
    { ...PageQuery, action: Type.Optional(Type.String({ maxLength: 64 })), targetId: Type.Optional(Type.String({ maxLength: 256 })) },
    { additionalProperties: false },
  ),
  responses: { 200: Page(AuditEntry) },
});
