import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/server/config.ts';
import { detectNetworkFilesystem } from '../../src/server/db/database.ts';

describe('loadConfig', () => {
  test('serves the embedded default with no variables set', () => {
    const config = loadConfig({});
    assert.equal(config.port, 8080);
    assert.equal(config.databaseUrl, undefined);
    assert.ok(config.dataDir.endsWith('/data'));
    assert.equal(config.sqliteSynchronous, 'FULL');
    assert.equal(config.sqliteCacheMb, 64);
  });

  test('reads the SQLite page cache in MiB, and refuses a size out of range', () => {
    assert.equal(loadConfig({ ATTEST_SQLITE_CACHE_MB: '256' }).sqliteCacheMb, 256);
    for (const bad of ['0', '65537', 'lots']) assert.throws(() => loadConfig({ ATTEST_SQLITE_CACHE_MB: bad }), ConfigError, bad);
  });

  test('reports every problem at once', () => {
    assert.throws(
      () => loadConfig({ PORT: 'eighty', ATTEST_DATABASE_URL: 'mysql://x', ATTEST_LEGACY_KEYS: 'maybe', ATTEST_ADMIN_EMAIL: 'a@b.c' }),
      (error: ConfigError) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.problems.length, 4, error.problems.join('\n'));
        return true;
      },
    );
  });

  test('reads the sunset of old-format keys as a date, and refuses anything else', () => {
    assert.equal(loadConfig({ ATTEST_LEGACY_KEYS_SUNSET: '2027-06-30' }).legacyKeysSunset?.toISOString(), '2027-06-30T00:00:00.000Z');
    assert.throws(() => loadConfig({ ATTEST_LEGACY_KEYS_SUNSET: 'soon' }), ConfigError);
  });

  test('refuses a wildcard CORS origin', () => {
    assert.throws(() => loadConfig({ ATTEST_CORS_ORIGINS: '*' }), ConfigError);
  });

  test('reads the bucket settings: path style by default with an endpoint, a bucket name required, no file offload', () => {
    const aws = loadConfig({ ATTEST_BLOB_URL: 's3://attest-blobs/team-a' });
    assert.deepEqual(
      [aws.blobUrl, aws.s3Endpoint, aws.s3Region, aws.s3ForcePathStyle],
      ['s3://attest-blobs/team-a', undefined, 'us-east-1', false],
    );
    const local = loadConfig({ ATTEST_BLOB_URL: 's3://attest-blobs', ATTEST_S3_ENDPOINT: 'http://127.0.0.1:9000' });
    assert.equal(local.s3ForcePathStyle, true);
    assert.equal(loadConfig({ ATTEST_S3_ENDPOINT: 'http://127.0.0.1:9000', ATTEST_S3_FORCE_PATH_STYLE: 'false' }).s3ForcePathStyle, false);
    for (const env of [
      { ATTEST_BLOB_URL: 's3://A_B/x' },
      { ATTEST_BLOB_URL: 'https://bucket/x' },
      { ATTEST_BLOB_URL: 's3://attest-blobs', ATTEST_BLOB_OFFLOAD: 'x-accel-redirect' },
      { ATTEST_REDIS_URL: 'http://127.0.0.1:6379' },
    ]) {
      assert.throws(() => loadConfig(env), ConfigError, JSON.stringify(env));
    }
  });
});

describe('detectNetworkFilesystem', () => {
  const mountinfo = [
    '22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw',
    '40 22 0:35 / /mnt/share rw,relatime shared:20 - nfs4 server:/export rw',
    '41 22 0:36 / /mnt/fuse rw - fuse.sshfs host: rw',
  ].join('\n');

  test('finds NFS and FUSE mounts by the longest matching mount point', () => {
    assert.equal(detectNetworkFilesystem(mountinfo, '/mnt/share/attest/data'), 'nfs4');
    assert.equal(detectNetworkFilesystem(mountinfo, '/mnt/fuse/data'), 'fuse.sshfs');
  });

  test('accepts local filesystems and lookalike paths', () => {
    assert.equal(detectNetworkFilesystem(mountinfo, '/var/lib/attest'), undefined);
    assert.equal(detectNetworkFilesystem(mountinfo, '/mnt/shared-local'), undefined);
  });
});

describe('loadConfig: single sign-on', () => {
  test('reads single sign-on (SSO-7): the maps, the default role, the redirect URL; refuses what cannot work, all at once', () => {
    const sso = loadConfig({
      ATTEST_OIDC_ISSUER: 'https://sso.acme.example/realms/acme',
      ATTEST_OIDC_CLIENT_ID: 'attest',
      ATTEST_OIDC_CLIENT_SECRET: 'secret',
      ATTEST_OIDC_SCOPES: 'email,groups',
      ATTEST_OIDC_GROUPS_CLAIM: 'realm_access.roles',
      ATTEST_OIDC_ROLE_MAP: 'attest-admins=admin, qa=Tester',
      ATTEST_OIDC_DEFAULT_ROLE: 'none',
      ATTEST_OIDC_PROJECT_MAP: 'web-team=web,web-team=SHOP',
      ATTEST_PASSWORD_LOGIN: 'false',
    });
    assert.equal(sso.passwordLogin, false);
    assert.deepEqual(sso.sso, {
      issuer: 'https://sso.acme.example/realms/acme',
      clientId: 'attest',
      clientSecret: 'secret',
      name: 'sso.acme.example',
      redirectUrl: undefined,
      scopes: ['openid', 'email', 'groups'],
      groupsClaim: 'realm_access.roles',
      roleMap: [
        { group: 'attest-admins', role: 'admin' },
        { group: 'qa', role: 'tester' },
      ],
      defaultRole: 'none',
      projectMap: [
        { group: 'web-team', projectKey: 'WEB' },
        { group: 'web-team', projectKey: 'SHOP' },
      ],
    });
    assert.equal(loadConfig({}).sso, undefined);
    assert.equal(loadConfig({}).passwordLogin, true);
    assert.throws(
      () =>
        loadConfig({
          ATTEST_OIDC_ISSUER: 'http://sso.acme.example',
          ATTEST_OIDC_CLIENT_ID: 'attest',
          ATTEST_OIDC_ROLE_MAP: 'qa=boss,lonely',
          ATTEST_OIDC_DEFAULT_ROLE: 'guest',
        }),
      (error: ConfigError) => {
        assert.deepEqual(error.problems, [
          'ATTEST_OIDC_ISSUER must be an https:// URL (plain http only on a loopback address)',
          'ATTEST_OIDC_ISSUER needs ATTEST_OIDC_CLIENT_ID and ATTEST_OIDC_CLIENT_SECRET',
          'ATTEST_OIDC_ROLE_MAP must be a list of group=value pairs separated by commas (got "lonely")',
          'ATTEST_OIDC_ROLE_MAP maps qa to "boss", which is not one of viewer, tester, manager, admin',
          'ATTEST_OIDC_DEFAULT_ROLE must be one of viewer, tester, manager, admin or none (got "guest")',
        ]);
        return true;
      },
    );
    assert.throws(() => loadConfig({ ATTEST_PASSWORD_LOGIN: 'false' }), /leaves the web interface without a way in/);
    assert.throws(() => loadConfig({ ATTEST_OIDC_CLIENT_ID: 'attest' }), /need ATTEST_OIDC_ISSUER/);
    assert.equal(
      loadConfig({ ATTEST_OIDC_ISSUER: 'http://127.0.0.1:9000', ATTEST_OIDC_CLIENT_ID: 'a', ATTEST_OIDC_CLIENT_SECRET: 'b' }).sso?.issuer,
      'http://127.0.0.1:9000',
    );
  });
});
