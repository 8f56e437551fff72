// Row shapes of single sign-on's tables (migration 0019, docs/sso.md), beside types.ts to keep it short.

/** A single sign-on started and not finished (migration 0019, SSO-2): found by its state's digest, used once. */
export interface SsoLoginsTable {
  state_digest: string;
  code_verifier: string;
  nonce: string;
  redirect_url: string;
  created_at: string;
  expires_at: string;
}

/** Which user an identity at the provider is: its issuer and subject (SSO-3). */
export interface SsoIdentitiesTable {
  issuer: string;
  subject: string;
  user_id: string;
  created_at: string;
  last_login_at: string;
}
