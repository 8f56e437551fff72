import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { AttestClient, v1 } from '../../src/client/index.ts';
import { SECRET_SCANNING_REGEX } from '../../src/server/security/api-key.ts';
import { attest } from '../helpers/cli.ts';
import { tempDir } from '../helpers/data-folders.ts';
import { startTestServer } from '../helpers/server.ts';

// `attest admin-key --email`: recovery of admin access on the server's host, through the services
// the API uses, audited with no actor and `via: cli`.

const KEY_LINE = /^\s*service\.api-token:\s*(\S+)\s*$/m;

describe('attest admin-key (sqlite)', () => {
  test('refuses while the server holds the data folder; offline it mints a working admin key for a new or an existing user, audited', async () => {
    const dataDir = tempDir('attest-admin-key-');
    const server = await startTestServer('sqlite', { ATTEST_DATA_DIR: dataDir });
    await server.admin.client.call(v1.users.createUser, { body: { email: 'tess@example.test', name: 'Tess', roles: ['tester'] } });

    const busy = await attest(['admin-key', '--email', 'tess@example.test'], { ATTEST_DATA_DIR: dataDir });
    assert.notEqual(busy.code, 0);
    assert.match(busy.stderr, /A running server holds it: stop the server first/);
    assert.doesNotMatch(busy.output, new RegExp(SECRET_SCANNING_REGEX));
    await server.close();
    const keep = dataDir;

    // An existing tester becomes an admin (keeping the tester role), with a standard key.
    const promoted = await attest(['admin-key', '--email', 'Tess@Example.test'], { ATTEST_DATA_DIR: keep });
    assert.equal(promoted.code, 0, promoted.output);
    const tessKey = KEY_LINE.exec(promoted.stdout)?.[1];
    assert.ok(tessKey?.startsWith('atk_'), promoted.stdout);
    assert.match(promoted.stdout, /made tess@example\.test an admin/);
    assert.match(promoted.stdout, /It expires at \S+;/);
    assert.doesNotMatch(promoted.stdout, /service\.user/, 'a standard key is sent alone');

    // A missing user is created as an admin; an old-format key's banner names service.user; --json.
    const legacy = await attest(['admin-key', '--email', 'ops@example.test', '--format', 'legacy'], { ATTEST_DATA_DIR: keep });
    assert.equal(legacy.code, 0, legacy.output);
    assert.match(legacy.stdout, /^\s*service\.user:\s+ops@example\.test$/m);
    const json = await attest(['admin-key', '--email', 'ops@example.test', '--json'], { ATTEST_DATA_DIR: keep });
    assert.equal(json.code, 0, json.output);
    const minted = JSON.parse(json.stdout);
    assert.equal(minted.email, 'ops@example.test');
    assert.equal(minted.format, 'standard');
    assert.ok(Date.parse(minted.expiresAt) > Date.now());

    const bad = await attest(['admin-key', '--email', 'ops@example.test', '--format', 'uuid'], { ATTEST_DATA_DIR: keep });
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /--format <format>' must be standard or legacy/);

    const db = new SQLite(path.join(keep, 'attest.db'), { readonly: true });
    const entries = db
      .prepare('SELECT action, actor_user_id AS actor, details FROM audit_log WHERE details LIKE \'%"via":"cli"%\' ORDER BY at')
      .all() as { action: string; actor: string | null; details: string }[];
    db.close();
    assert.deepEqual(
      entries.map((e) => [e.action, e.actor]),
      [
        ['user.roles', null],
        ['apikey.create', null],
        ['user.create', null],
        ['apikey.create', null],
        ['apikey.create', null],
      ],
    );

    // The keys work on the next start, as admins.
    const served = await startTestServer('sqlite', { ATTEST_DATA_DIR: keep });
    try {
      const me = await new AttestClient({ baseUrl: served.url, apiKey: tessKey }).call(v1.meta.getMe);
      assert.deepEqual(me.roles, ['tester', 'admin']);
      const ops = await new AttestClient({ baseUrl: served.url, apiKey: minted.secret }).call(v1.meta.getMe);
      assert.equal(ops.role, 'admin');
    } finally {
      await served.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('refuses a data folder that holds no database', async () => {
    const empty = tempDir('attest-admin-key-');
    const refused = await attest(['admin-key', '--email', 'ops@example.test'], { ATTEST_DATA_DIR: empty });
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /holds no Attest database/);
    assert.deepEqual(fs.readdirSync(empty), []);
    fs.rmSync(empty, { recursive: true, force: true });
  });
});
