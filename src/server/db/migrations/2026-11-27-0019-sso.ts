import type { Kysely } from 'kysely';

// Frozen in time, like every migration: no application imports, never edited once shipped.
// OpenID Connect single sign-on (SSO-*, docs/sso.md).
//
// `sso_logins`: sign-ins started and not yet finished. The row is found by the SHA-256 of the
// `state` the browser carries to the provider and back, holds the PKCE verifier and the nonce (never
// sent to the browser) and the redirect URL the code was issued for, and is deleted when the
// browser comes back: a state works once. Rows older than `expires_at` are deleted as new ones come.
//
// `sso_identities`: which Attest user an identity at a provider is, by the provider's issuer and its
// stable subject (`sub`), never by e-mail: an e-mail can change hands at the provider.

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sso_logins')
    .addColumn('state_digest', 'text', (c) => c.primaryKey())
    .addColumn('code_verifier', 'text', (c) => c.notNull())
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('redirect_url', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sso_logins_expires').on('sso_logins').column('expires_at').execute();

  await db.schema
    .createTable('sso_identities')
    .addColumn('issuer', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_login_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('sso_identities_pk', ['issuer', 'subject'])
    .execute();
  await db.schema.createIndex('sso_identities_user').on('sso_identities').column('user_id').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('sso_identities').execute();
  await db.schema.dropTable('sso_logins').execute();
}
