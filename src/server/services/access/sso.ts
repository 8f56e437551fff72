import { createHash, randomUUID } from 'node:crypto';
import * as oidc from 'openid-client';
import type { Role } from '../../../api/endpoint.ts';
import type { SsoConfig } from '../../config.ts';
import type { ServiceContext } from '../../context.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { deleteMember, findMember, insertMember } from '../../db/repositories/projects.ts';
import {
  findSsoIdentity,
  insertSsoIdentity,
  insertSsoLogin,
  projectIdsByKey,
  takeSsoLogin,
  touchSsoIdentity,
} from '../../db/repositories/sso.ts';
import { findActiveUserByEmail, findUserById, insertUser, projectIdsOfUser, updateUser } from '../../db/repositories/users.ts';
import type { ApiKeysTable, Executor, UsersTable } from '../../db/types.ts';
import { AppError } from '../../errors.ts';
import { normaliseEmail } from '../../security/api-key.ts';
import { parseRoles } from '../../security/roles.ts';
import type { Actor } from '../actor.ts';
import { auditBy, auditProjectChange } from './audit.ts';
import { createApiKey, withAdminInvariant } from './users.ts';

// OpenID Connect single sign-on for the web interface (SSO-*, docs/sso.md): the authorization-code
// flow with PKCE (S256), state and nonce, through `openid-client`. The server keeps the verifier
// and the nonce (sso_logins); the browser only carries the state there and back. A finished sign-in
// answers the same session key as a password login, so the web interface works as it does today.

/** How long a started sign-in may take at the provider (a person typing a password, a second factor). */
const LOGIN_MINUTES = 10;
/** The longest wait for the provider (discovery, token, userinfo). */
const PROVIDER_TIMEOUT_SECONDS = 10;

/** The provider's metadata, read once per configuration; a failed read is forgotten, so the next sign-in asks again. */
const discovered = new WeakMap<SsoConfig, Promise<oidc.Configuration>>();

function providerOf(ctx: ServiceContext, sso: SsoConfig): Promise<oidc.Configuration> {
  let pending = discovered.get(sso);
  if (!pending) {
    const insecure = new URL(sso.issuer).protocol === 'http:';
    pending = oidc.discovery(new URL(sso.issuer), sso.clientId, undefined, oidc.ClientSecretBasic(sso.clientSecret), {
      timeout: PROVIDER_TIMEOUT_SECONDS,
      // Plain http is only configurable for a loopback issuer (config.ts).
      ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}),
    });
    pending.catch((error: unknown) => {
      discovered.delete(sso);
      ctx.log.warn({ err: error, issuer: sso.issuer }, 'single sign-on: cannot read the provider metadata');
    });
    discovered.set(sso, pending);
  }
  return pending.catch((error: unknown) => {
    throw providerUnreachable(error);
  });
}

const providerUnreachable = (error: unknown) =>
  error instanceof AppError
    ? error
    : new AppError('UNAVAILABLE', 'The single sign-on provider does not answer; try again in a moment.', {
        headers: { 'retry-after': '5' },
      });

function configured(ctx: ServiceContext): SsoConfig {
  const { sso } = ctx.config;
  if (!sso) throw new AppError('NOT_FOUND', 'Single sign-on is not configured on this instance (ATTEST_OIDC_ISSUER).');
  return sso;
}

const stateDigest = (state: string) => createHash('sha256').update(state).digest('hex');

/** How the web interface's login page offers sign-in (SSO-1). */
export function authMethods(ctx: ServiceContext): { password: boolean; sso: { name: string } | null } {
  return { password: ctx.config.passwordLogin, sso: ctx.config.sso ? { name: ctx.config.sso.name } : null };
}

/**
 * Starts a sign-in (SSO-2): a fresh state, nonce and PKCE verifier; the verifier and nonce stay
 * here, under the state's digest, for LOGIN_MINUTES. `origin` is where the browser reached Attest,
 * the redirect URL's base when neither ATTEST_OIDC_REDIRECT_URL nor ATTEST_PUBLIC_URL says.
 */
export async function startSsoLogin(
  ctx: ServiceContext,
  client: { origin: string; ip: string },
): Promise<{ authorizationUrl: string; state: string; expiresAt: string }> {
  const sso = configured(ctx);
  await notThrottled(ctx, client.ip);
  const provider = await providerOf(ctx, sso);
  const redirectUrl = sso.redirectUrl ?? `${ctx.config.publicUrl ?? client.origin}/login/sso`;
  const codeVerifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(provider, {
    redirect_uri: redirectUrl,
    scope: sso.scopes.join(' '),
    code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  const now = ctx.clock();
  const expiresAt = new Date(now.getTime() + LOGIN_MINUTES * 60_000).toISOString();
  await insertSsoLogin(
    ctx.db,
    {
      state_digest: stateDigest(state),
      code_verifier: codeVerifier,
      nonce,
      redirect_url: redirectUrl,
      created_at: now.toISOString(),
      expires_at: expiresAt,
    },
    now.toISOString(),
  );
  return { authorizationUrl: url.href, state, expiresAt };
}

export interface SsoCallback {
  state: string;
  code?: string;
  iss?: string;
  error?: string;
  error_description?: string;
}

const failed = (detail: string) => new AppError('SSO_FAILED', detail);

/**
 * Finishes a sign-in (SSO-2..SSO-5): takes the state's row (once), exchanges the code with the
 * verifier, checks the ID token (issuer, audience, signature, nonce), reads the claims (the ID
 * token's, then the userinfo endpoint's), finds or creates the user, sets their roles and the
 * memberships the groups manage, and answers a session key as `POST /auth/login` does. Any
 * refusal changes nothing but the used state.
 */
export async function finishSsoLogin(
  ctx: ServiceContext,
  callback: SsoCallback,
  client: { requestId: string; ip: string },
): Promise<{ row: ApiKeysTable; secret: string; email: string }> {
  const sso = configured(ctx);
  await notThrottled(ctx, client.ip);
  try {
    return await finish(ctx, sso, callback, client.requestId);
  } catch (error) {
    // Failed answers count against the address as failed logins do (SEC-2b): a client replaying
    // or forging answers is slowed down, and so are its starts, each of which writes a row.
    if (error instanceof AppError && error.code === 'SSO_FAILED') await ctx.authFailures.recordFailure(throttleSubject(client.ip));
    throw error;
  }
}

const throttleSubject = (ip: string) => `sso:${ip}`;

async function notThrottled(ctx: ServiceContext, ip: string): Promise<void> {
  const wait = await ctx.authFailures.retryAfter(throttleSubject(ip));
  if (wait > 0) {
    throw new AppError('RATE_LIMITED', 'Too many failed sign-ins from this address; retry after the time in Retry-After.', {
      headers: { 'retry-after': String(wait) },
    });
  }
}

async function finish(
  ctx: ServiceContext,
  sso: SsoConfig,
  callback: SsoCallback,
  requestId: string,
): Promise<{ row: ApiKeysTable; secret: string; email: string }> {
  const provider = await providerOf(ctx, sso);
  const login = await takeSsoLogin(ctx.db, stateDigest(callback.state));
  if (!login || login.expires_at <= ctx.clock().toISOString()) {
    throw failed('This sign-in is unknown, was finished already or has expired: start again from the login page.');
  }
  const returned = new URL(login.redirect_url);
  for (const [name, value] of Object.entries(callback)) if (value !== undefined) returned.searchParams.set(name, value);

  let claims: Record<string, unknown>;
  try {
    const tokens = await oidc.authorizationCodeGrant(provider, returned, {
      pkceCodeVerifier: login.code_verifier,
      expectedState: callback.state,
      expectedNonce: login.nonce,
      idTokenExpected: true,
    });
    const idClaims = tokens.claims() as Record<string, unknown> & { sub: string };
    const userinfo = provider.serverMetadata().userinfo_endpoint
      ? await oidc.fetchUserInfo(provider, tokens.access_token, idClaims.sub)
      : {};
    // The ID token's subject and issuer are the identity; userinfo may add e-mail, name and groups.
    claims = { ...userinfo, ...idClaims, ...pick(userinfo, ['email', 'email_verified', 'name', sso.groupsClaim.split('.')[0] as string]) };
  } catch (error) {
    throw providerRefusal(ctx, error);
  }
  return signIn(ctx, sso, provider.serverMetadata().issuer, claims, requestId);
}

const pick = (source: Record<string, unknown>, names: string[]) =>
  Object.fromEntries(names.filter((name) => source[name] !== undefined).map((name) => [name, source[name]]));

/** What went wrong with the provider's answer, as a problem a person can act on. */
function providerRefusal(ctx: ServiceContext, error: unknown): AppError {
  if (error instanceof oidc.AuthorizationResponseError) {
    return failed(`The provider refused the sign-in: ${error.error}${error.error_description ? ` (${error.error_description})` : ''}.`);
  }
  if (error instanceof oidc.ResponseBodyError) {
    return failed(
      `The provider refused the code (${error.error}): it was used already or has expired, or the PKCE verifier does not match. Start again from the login page.`,
    );
  }
  if (error instanceof oidc.ClientError) {
    ctx.log.warn({ err: error }, 'single sign-on: the provider answer failed a check');
    // openid-client's own message is generic ("invalid response encountered"); the check that failed is its cause's.
    const reason = error.cause instanceof Error ? error.cause.message : error.message;
    return failed(`The provider's answer failed a check, so it is not trusted: ${reason.replace(/\.$/, '')}.`);
  }
  ctx.log.warn({ err: error }, 'single sign-on: the provider did not answer');
  return providerUnreachable(error);
}

/** The groups claim: a dotted path into the claims, an array of strings (or one string). */
export function groupsOf(claims: Record<string, unknown>, path: string): string[] {
  let value: unknown = claims;
  for (const part of path.split('.'))
    value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[part] : undefined;
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((g): g is string => typeof g === 'string') : [];
}

/** The global roles the groups give (SSO-4): every role a group maps to, else the default; none refuses. */
export function rolesOf(sso: SsoConfig, groups: string[]): Role[] {
  const mapped = new Set(sso.roleMap.filter((entry) => groups.includes(entry.group)).map((entry) => entry.role));
  if (mapped.size === 0 && sso.defaultRole !== 'none') mapped.add(sso.defaultRole);
  return (['viewer', 'tester', 'manager', 'admin'] as const).filter((role) => mapped.has(role));
}

async function signIn(
  ctx: ServiceContext,
  sso: SsoConfig,
  issuer: string,
  claims: Record<string, unknown>,
  requestId: string,
): Promise<{ row: ApiKeysTable; secret: string; email: string }> {
  const subject = String(claims.sub);
  const email = typeof claims.email === 'string' && /^[^\s@]+@[^\s@]+$/.test(claims.email) ? normaliseEmail(claims.email) : undefined;
  if (!email) throw failed('The provider sent no e-mail address for this account: ask it for the `email` scope (ATTEST_OIDC_SCOPES).');
  const name = typeof claims.name === 'string' && claims.name.trim() !== '' ? claims.name.trim().slice(0, 256) : email;
  const groups = groupsOf(claims, sso.groupsClaim);
  const roles = rolesOf(sso, groups);
  if (roles.length === 0) {
    throw new AppError('SSO_ACCESS_DENIED', 'None of your groups at the provider gives access to Attest: ask an admin to add you to one.');
  }
  const attempt = () =>
    withAdminInvariant(
      ctx,
      async (trx, concerns) => {
        const user = await userOf(ctx, trx, {
          issuer,
          subject,
          email,
          name,
          roles,
          emailVerified: claims.email_verified === true,
          requestId,
        });
        concerns({ userIds: [user.id] });
        await applyRoles(ctx, trx, user, roles, requestId);
        await applyMemberships(ctx, trx, sso, user.id, groups, requestId);
        // Made before the check, undone with the rest when it refuses.
        const session = await createApiKey(ctx, user, { name: 'web session', format: 'session' }, { userId: user.id, requestId }, trx);
        return { ...session, email: user.email };
      },
      'Your groups no longer make you an admin, and you are the last one: promote another user first.',
    );
  try {
    return await attempt();
  } catch (error) {
    // Two first sign-ins of one person at once: the second finds the user the first created.
    if (isUniqueViolation(error)) return attempt();
    throw error;
  }
}

/** The signing-in user, as the changes their sign-in makes are audited: their own, `via: sso`. */
const bySso = (userId: string, requestId: string): Actor => ({ userId, requestId, via: 'sso' });

/** The user this identity is: linked before, or an active user with the e-mail the provider vouches for, or a new one (SSO-3). */
async function userOf(
  ctx: ServiceContext,
  trx: Executor,
  who: { issuer: string; subject: string; email: string; name: string; roles: Role[]; emailVerified: boolean; requestId: string },
): Promise<UsersTable> {
  const now = ctx.clock().toISOString();
  const identity = await findSsoIdentity(trx, who.issuer, who.subject);
  if (identity) {
    const user = await findUserById(trx, identity.user_id);
    if (!user || user.deleted_at !== null) {
      throw new AppError('SSO_ACCESS_DENIED', 'Your Attest account was deleted by an admin: ask them to create it again.');
    }
    await touchSsoIdentity(trx, who.issuer, who.subject, now);
    if (user.name !== who.name) {
      await updateUser(trx, user.id, { name: who.name, updated_at: now });
      return { ...user, name: who.name };
    }
    return user;
  }
  let user = await findActiveUserByEmail(trx, who.email);
  if (user && !who.emailVerified) {
    throw new AppError(
      'ALREADY_EXISTS',
      `An Attest account with the e-mail ${who.email} exists, and the provider does not say the address is verified (email_verified), so the two are not linked: ask an admin.`,
    );
  }
  if (!user) {
    user = {
      id: randomUUID(),
      email: who.email,
      name: who.name,
      roles: JSON.stringify(who.roles),
      password_hash: null,
      created_at: now,
      updated_at: now,
      deleted_at: null,
    };
    await insertUser(trx, user);
    await auditBy(ctx, trx, bySso(user.id, who.requestId), {
      action: 'user.create',
      targetType: 'user',
      targetId: user.id,
      details: { email: user.email, roles: who.roles },
    });
  }
  await insertSsoIdentity(trx, { issuer: who.issuer, subject: who.subject, user_id: user.id, created_at: now, last_login_at: now });
  return user;
}

/** The roles the groups give replace the stored ones, audited when they change (SSO-4). */
async function applyRoles(ctx: ServiceContext, trx: Executor, user: UsersTable, roles: Role[], requestId: string): Promise<void> {
  const from = parseRoles(user.roles);
  if (from.join() === roles.join()) return;
  const now = ctx.clock().toISOString();
  await updateUser(trx, user.id, { roles: JSON.stringify(roles), updated_at: now });
  user.roles = JSON.stringify(roles);
  await auditBy(ctx, trx, bySso(user.id, requestId), {
    action: 'user.roles',
    targetType: 'user',
    targetId: user.id,
    details: { from, to: roles },
  });
}

/**
 * Membership of the projects ATTEST_OIDC_PROJECT_MAP names follows the groups (SSO-5): added when a
 * group of the user maps to the project, removed when none does. Other projects are left to managers.
 */
async function applyMemberships(ctx: ServiceContext, trx: Executor, sso: SsoConfig, userId: string, groups: string[], requestId: string) {
  if (sso.projectMap.length === 0) return;
  const ids = await projectIdsByKey(trx, [...new Set(sso.projectMap.map((entry) => entry.projectKey))]);
  const wanted = new Set(sso.projectMap.filter((entry) => groups.includes(entry.group)).map((entry) => ids.get(entry.projectKey)));
  const held = new Set(await projectIdsOfUser(trx, userId));
  const now = ctx.clock().toISOString();
  for (const projectId of ids.values()) {
    const change =
      wanted.has(projectId) && !held.has(projectId) ? 'add' : !wanted.has(projectId) && held.has(projectId) ? 'remove' : undefined;
    if (!change) continue;
    if (change === 'add' && !(await findMember(trx, projectId, userId))) {
      await insertMember(trx, { project_id: projectId, user_id: userId, added_at: now });
    }
    if (change === 'remove') await deleteMember(trx, projectId, userId);
    const action = change === 'add' ? 'project.member.add' : 'project.member.remove';
    await auditProjectChange(ctx, trx, bySso(userId, requestId), projectId, action, { userId });
  }
}
