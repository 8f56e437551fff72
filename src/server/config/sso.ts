import { ROLES, type Role } from '../../api/endpoint.ts';

/** What the settings reader of config.ts offers: the raw values, and the list every problem goes to. */
export interface SettingsReader {
  readonly problems: string[];
  string(name: string): string | undefined;
  list(name: string): string[];
}

/**
 * OpenID Connect single sign-on for the web interface (SSO-1..SSO-7, docs/sso.md). Read from the
 * `ATTEST_OIDC_*` variables; undefined when `ATTEST_OIDC_ISSUER` is not set.
 */
export interface SsoConfig {
  /** The provider's issuer URL (`ATTEST_OIDC_ISSUER`); its discovery document is read from it. */
  issuer: string;
  /** The client registered at the provider (`ATTEST_OIDC_CLIENT_ID`, `ATTEST_OIDC_CLIENT_SECRET`; HTTP Basic at the token endpoint). */
  clientId: string;
  clientSecret: string;
  /** The name on the login page's button, "Sign in with <name>" (`ATTEST_OIDC_NAME`; default the issuer's host). */
  name: string;
  /**
   * Where the provider sends the browser back (`ATTEST_OIDC_REDIRECT_URL`): the web interface's
   * `/login/sso` page. Default `ATTEST_PUBLIC_URL` + `/login/sso`, else the address the browser
   * used to reach Attest. It must be registered at the provider exactly as written.
   */
  redirectUrl: string | undefined;
  /** Scopes asked for (`ATTEST_OIDC_SCOPES`, space- or comma-separated; `openid` is always asked). */
  scopes: string[];
  /** Where the groups are in the claims (`ATTEST_OIDC_GROUPS_CLAIM`, default `groups`; a dotted path such as `realm_access.roles`). */
  groupsClaim: string;
  /** Group → global role (`ATTEST_OIDC_ROLE_MAP`: `group=role,group=role`). A user holds every role a group of theirs maps to. */
  roleMap: { group: string; role: Role }[];
  /** The role of a user whose groups map to none (`ATTEST_OIDC_DEFAULT_ROLE`, default viewer); `none` refuses them. */
  defaultRole: Role | 'none';
  /** Group → project membership (`ATTEST_OIDC_PROJECT_MAP`: `group=PROJECTKEY,…`); the projects named are managed by the groups. */
  projectMap: { group: string; projectKey: string }[];
}

/** `host` of the loopback addresses, where a plain-http provider is allowed (a provider run in tests or beside Attest). */
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|\[::1\]|localhost)$/;

function pairs(r: SettingsReader, name: string): { left: string; right: string }[] {
  return r.list(name).flatMap((entry) => {
    const at = entry.lastIndexOf('=');
    if (at <= 0 || at === entry.length - 1) {
      r.problems.push(`${name} must be a list of group=value pairs separated by commas (got "${entry}")`);
      return [];
    }
    return [{ left: entry.slice(0, at).trim(), right: entry.slice(at + 1).trim() }];
  });
}

/** Reads the single sign-on settings; every problem is added to `r.problems`. */
export function readSsoConfig(r: SettingsReader): SsoConfig | undefined {
  const issuer = r.string('ATTEST_OIDC_ISSUER');
  const clientId = r.string('ATTEST_OIDC_CLIENT_ID');
  const clientSecret = r.string('ATTEST_OIDC_CLIENT_SECRET');
  if (issuer === undefined) {
    const stray = ['ATTEST_OIDC_CLIENT_ID', 'ATTEST_OIDC_CLIENT_SECRET'].filter((n) => r.string(n) !== undefined);
    if (stray.length > 0) r.problems.push(`${stray.join(' and ')} need ATTEST_OIDC_ISSUER`);
    return undefined;
  }
  let issuerUrl: URL | undefined;
  try {
    issuerUrl = new URL(issuer);
  } catch {
    r.problems.push('ATTEST_OIDC_ISSUER must be an https:// URL');
  }
  if (issuerUrl && issuerUrl.protocol !== 'https:' && !(issuerUrl.protocol === 'http:' && LOOPBACK.test(issuerUrl.hostname))) {
    r.problems.push('ATTEST_OIDC_ISSUER must be an https:// URL (plain http only on a loopback address)');
  }
  if (clientId === undefined || clientSecret === undefined) {
    r.problems.push('ATTEST_OIDC_ISSUER needs ATTEST_OIDC_CLIENT_ID and ATTEST_OIDC_CLIENT_SECRET');
  }
  const redirectUrl = r.string('ATTEST_OIDC_REDIRECT_URL');
  if (redirectUrl !== undefined) {
    try {
      if (!['http:', 'https:'].includes(new URL(redirectUrl).protocol)) throw new Error('protocol');
    } catch {
      r.problems.push('ATTEST_OIDC_REDIRECT_URL must be an http:// or https:// URL (the /login/sso page of the web interface)');
    }
  }
  const scopes = (r.string('ATTEST_OIDC_SCOPES') ?? 'openid email profile').split(/[\s,]+/).filter(Boolean);
  if (!scopes.includes('openid')) scopes.unshift('openid');

  const roleMap = pairs(r, 'ATTEST_OIDC_ROLE_MAP').flatMap(({ left, right }) => {
    const role = ROLES.find((name) => name === right.toLowerCase());
    if (!role) {
      r.problems.push(`ATTEST_OIDC_ROLE_MAP maps ${left} to "${right}", which is not one of ${ROLES.join(', ')}`);
      return [];
    }
    return [{ group: left, role }];
  });
  const defaultRole = (r.string('ATTEST_OIDC_DEFAULT_ROLE') ?? 'viewer').toLowerCase();
  if (defaultRole !== 'none' && !ROLES.includes(defaultRole as Role)) {
    r.problems.push(`ATTEST_OIDC_DEFAULT_ROLE must be one of ${ROLES.join(', ')} or none (got "${defaultRole}")`);
  }
  const projectMap = pairs(r, 'ATTEST_OIDC_PROJECT_MAP').map(({ left, right }) => ({ group: left, projectKey: right.toUpperCase() }));
  return {
    issuer,
    clientId: clientId ?? '',
    clientSecret: clientSecret ?? '',
    name: r.string('ATTEST_OIDC_NAME') ?? issuerUrl?.host ?? issuer,
    redirectUrl,
    scopes,
    groupsClaim: r.string('ATTEST_OIDC_GROUPS_CLAIM') ?? 'groups',
    roleMap,
    defaultRole: ROLES.includes(defaultRole as Role) ? (defaultRole as Role) : 'none',
    projectMap,
  };
}
