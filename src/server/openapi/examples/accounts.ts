import type { Static } from 'typebox';
import { finishSsoLogin, getAuthMethods, getHealth, getMe, getOpenApi, getReadiness, login, startSsoLogin } from '../../../api/v1/meta.ts';
import {
  type ApiKey,
  createApiKey,
  createUser,
  deleteUser,
  getUser,
  listApiKeys,
  listAuditLog,
  listUsers,
  revokeApiKey,
  setUserPassword,
  setUserRoles,
} from '../../../api/v1/users.ts';
import { ADMIN, IDS, TESTER, TESTER_EMAIL } from './samples.ts';
import { examplesOf } from './types.ts';

const CI_KEY: Static<typeof ApiKey> = {
  id: IDS.testerKey,
  name: 'CI pipeline',
  format: 'standard',
  scope: 'full',
  hint: 'atk_4Zq8…Xk2P',
  createdAt: '2026-02-01T07:55:00.000Z',
  expiresAt: '2027-02-01T00:00:00.000Z',
  lastUsedAt: '2026-03-02T09:14:02.118Z',
  revokedAt: null,
};

export const accountExamples = [
  examplesOf(getHealth, { responses: { 200: { status: 'ok', version: '0.1.0' } } }),
  examplesOf(getReadiness, { responses: { 200: { status: 'ready', database: 'postgres', blobs: 's3' } } }),
  examplesOf(getOpenApi, {
    responses: {
      200: {
        openapi: '3.1.0',
        info: { title: 'Attest API', version: '0.1.0' },
        servers: [{ url: '/api/v1' }],
        paths: { '/health': { get: { operationId: 'getHealth', summary: 'Liveness: the process is up and serving.' } } },
      },
    },
  }),
  examplesOf(getMe, {
    responses: {
      200: {
        id: IDS.tester,
        email: TESTER_EMAIL,
        name: TESTER.name,
        roles: ['tester'],
        role: 'tester',
        key: { id: IDS.testerKey, format: 'standard', scope: 'full', expiresAt: '2027-02-01T00:00:00.000Z' },
        projectIds: [IDS.project],
      },
    },
  }),
  examplesOf(login, {
    request: { email: TESTER_EMAIL, password: 'correct-horse-battery-staple' },
    responses: {
      200: {
        key: 'ats_7Hq2LmV9xR4tW8bN1cY6pK3sD5fG0jA2zE7uI9oQ4rT1BmW3e',
        keyId: IDS.sessionKey,
        expiresAt: '2026-03-02T21:14:00.000Z',
      },
    },
  }),
  examplesOf(getAuthMethods, { responses: { 200: { password: false, sso: { name: 'Acme SSO' } } } }),
  examplesOf(startSsoLogin, {
    responses: {
      200: {
        authorizationUrl:
          'https://sso.acme.example/realms/acme/protocol/openid-connect/auth?client_id=attest&scope=openid+email+profile+groups' +
          '&response_type=code&redirect_uri=https%3A%2F%2Fattest.acme.example%2Flogin%2Fsso' +
          '&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256' +
          '&state=dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk&nonce=n-0S6_WzA2Mj',
        state: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
        expiresAt: '2026-03-02T09:24:00.000Z',
      },
    },
  }),
  examplesOf(finishSsoLogin, {
    request: {
      state: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
      code: 'SplxlOBeZQQYbYS6WxSbIA',
      iss: 'https://sso.acme.example/realms/acme',
    },
    responses: {
      200: {
        key: 'ats_7Hq2LmV9xR4tW8bN1cY6pK3sD5fG0jA2zE7uI9oQ4rT1BmW3e',
        keyId: IDS.sessionKey,
        expiresAt: '2026-03-02T21:14:00.000Z',
        email: TESTER_EMAIL,
      },
    },
  }),
  examplesOf(listUsers, { responses: { 200: { items: [ADMIN, TESTER], nextCursor: null } } }),
  examplesOf(createUser, {
    request: { email: TESTER_EMAIL, name: TESTER.name, roles: ['tester'], password: 'correct-horse-battery-staple' },
    responses: { 201: TESTER },
  }),
  examplesOf(getUser, { responses: { 200: TESTER } }),
  examplesOf(setUserRoles, {
    request: { roles: ['tester', 'manager'] },
    responses: { 200: { ...TESTER, roles: ['tester', 'manager'], updatedAt: '2026-03-01T16:20:00.000Z' } },
  }),
  examplesOf(setUserPassword, { request: { password: 'a-much-longer-passphrase-2026' }, responses: {} }),
  examplesOf(deleteUser, { responses: {} }),
  examplesOf(listApiKeys, { responses: { 200: { items: [CI_KEY], nextCursor: null } } }),
  examplesOf(createApiKey, {
    request: { name: 'CI pipeline', scope: 'full', expiresAt: '2027-02-01T00:00:00.000Z' },
    responses: {
      201: {
        ...CI_KEY,
        lastUsedAt: null,
        key: 'atk_4Zq8wN2mR7vB3xL9kT5yH1cJ6pD0sF8gA4eU2iO7nVb5rXk2P',
      },
    },
  }),
  examplesOf(revokeApiKey, { responses: {} }),
  examplesOf(listAuditLog, {
    responses: {
      200: {
        items: [
          {
            id: IDS.auditEntry,
            at: '2026-03-01T16:20:00.000Z',
            actorUserId: IDS.admin,
            action: 'user.roles',
            targetType: 'user',
            targetId: IDS.tester,
            details: { from: ['tester'], to: ['tester', 'manager'] },
            requestId: IDS.request,
          },
        ],
        nextCursor: 'eyJhdCI6IjIwMjYtMDMtMDFUMTY6MjA6MDAuMDAwWiJ9',
      },
    },
  }),
];
