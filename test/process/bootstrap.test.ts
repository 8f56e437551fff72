import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { AttestClient, v1 } from '../../src/client/index.ts';
import { hasValidChecksum, SECRET_SCANNING_REGEX } from '../../src/server/security/api-key.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createStorage, launchServer, type ServerStorage, type SpawnedServer, spawnServer } from '../helpers/spawned-server.ts';

// First start without ATTEST_ADMIN_EMAIL / ATTEST_ADMIN_API_KEY (src/server/services/access/bootstrap.ts,
// SEC-8b): the real server creates the first admin with a generated standard key and
// prints it once on stdout. Restarted on the same data, it prints nothing of the kind again, and
// the printed key keeps working.

const KEY_LINE = /^\s*service\.api-token:\s*(\S+)\s*$/;
const USER_LINE = /^\s*service\.user:\s*(\S+)\s*$/;
const ANY_KEY = new RegExp(SECRET_SCANNING_REGEX, 'g');

/** Neither admin variable set: an empty value counts as unset (config.ts). */
const NO_ADMIN = { ATTEST_ADMIN_EMAIL: '', ATTEST_ADMIN_API_KEY: '' };

for (const dialect of DIALECTS) {
  describe(`[${dialect}] first start without an admin key`, () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-bootstrap-'));
    let storage: ServerStorage | undefined;
    let running: SpawnedServer | undefined;
    after(async () => {
      await running?.stop();
      await storage?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    test('generates an admin key, prints it once, and never again on a restart', async () => {
      storage = await createStorage(dialect, dataDir, '');
      running = await spawnServer(storage, NO_ADMIN);
      const first = running.output.slice();
      const keyLines = first.map((line) => KEY_LINE.exec(line)?.[1]).filter((key) => key !== undefined);
      assert.equal(keyLines.length, 1, `exactly one key line is printed:\n${first.join('\n')}`);
      const key = keyLines[0] as string;
      assert.ok(
        hasValidChecksum(key) && key.startsWith('atk_'),
        `a standard key with a valid checksum is printed (got ${key.slice(0, 8)}…)`,
      );
      assert.equal(first.join('\n').match(ANY_KEY)?.length, 1, 'the key appears once in the whole output');
      // A standard key is sent alone: its banner shows that header only, names the admin and says
      // when the key expires.
      assert.equal(first.filter((line) => USER_LINE.test(line)).length, 0, `no service.user line for a standard key:\n${first.join('\n')}`);
      assert.match(first.join('\n'), /created the first admin, admin@attest\.local/);
      const expires = /It expires at (\S+);/.exec(first.join('\n'))?.[1];
      assert.ok(expires, `the banner says when the key expires:\n${first.join('\n')}`);
      const listening = first.findIndex((line) => line.startsWith('attest listening'));
      assert.ok(
        first.findIndex((line) => KEY_LINE.test(line)) < listening,
        'the key is printed before the listening line, after listen succeeded',
      );

      const admin = new AttestClient({ baseUrl: running.url, apiKey: key });
      const me = await admin.call(v1.meta.getMe);
      assert.equal(me.email, 'admin@attest.local');
      assert.equal(me.role, 'admin');
      assert.deepEqual(me.roles, ['admin']);
      assert.equal(me.key.format, 'standard');
      // The admin can administer, and the generated key is listed like any other, without its secret.
      await admin.call(v1.users.createUser, { body: { email: 'second@example.test', name: 'Second', roles: ['viewer'] } });
      const keys = await admin.call(v1.users.listApiKeys, { params: { email: me.email } });
      assert.deepEqual(
        keys.items.map((k) => k.name),
        ['bootstrap'],
      );
      assert.ok(keys.items[0]?.expiresAt, 'the generated key expires like every key (AUTH-6)');
      assert.equal(keys.items[0]?.expiresAt, expires, 'the banner gives the expiry the key has');
      assert.doesNotMatch(JSON.stringify(keys), ANY_KEY);
      await running.stop();
      running = undefined;

      running = await spawnServer(storage, NO_ADMIN);
      const second = running.output.join('\n');
      assert.doesNotMatch(second, /service\.api-token/, `a restart prints no key:\n${second}`);
      assert.doesNotMatch(second, ANY_KEY);
      assert.doesNotMatch(second, /created the first admin/);
      const again = await new AttestClient({ baseUrl: running.url, apiKey: key }).call(v1.meta.getMe);
      assert.equal(again.id, me.id, 'the printed key still signs in as the same admin');
      const users = await new AttestClient({ baseUrl: running.url, apiKey: key }).call(v1.users.listUsers, { query: { role: 'admin' } });
      assert.deepEqual(
        users.items.map((u) => u.email),
        ['admin@attest.local'],
        'no second admin was created',
      );
      await running.stop();
      running = undefined;
      if (dialect === 'sqlite') {
        // The key exists only on stdout: the database files hold its digest (AUTH-3).
        for (const file of fs.readdirSync(dataDir)) {
          const full = path.join(dataDir, file);
          if (fs.statSync(full).isFile()) assert.equal(fs.readFileSync(full).indexOf(key.slice(4, 47)), -1, `the key is in ${file}`);
        }
      }
    });
  });
}

describe('[sqlite] first start on a port that is taken', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-bootstrap-port-'));
  const blocker = net.createServer();
  let running: SpawnedServer | undefined;
  after(async () => {
    await running?.stop();
    blocker.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('exits non-zero with a one-line reason, prints and stores no key; the next start on a free port does', async () => {
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    const storage = await createStorage('sqlite', dataDir, '');
    const refused = launchServer(storage, { ...NO_ADMIN, PORT: String(port) });
    const { code } = await refused.exited;
    const all = refused.output.join('\n');
    assert.notEqual(code, 0, all);
    assert.match(all, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the port is already in use`));
    assert.doesNotMatch(all, /service\.api-token|created the first admin/, `no key is printed:\n${all}`);
    assert.doesNotMatch(all, ANY_KEY);
    assert.doesNotMatch(all, /\n\s+at /, 'no stack trace');
    const db = new SQLite(path.join(dataDir, 'attest.db'), { readonly: true });
    try {
      assert.deepEqual(db.prepare('SELECT (SELECT count(*) FROM users) AS users, (SELECT count(*) FROM api_keys) AS keys').get(), {
        users: 0,
        keys: 0,
      });
    } finally {
      db.close();
    }

    running = await spawnServer(storage, NO_ADMIN);
    const key = running.output.map((line) => KEY_LINE.exec(line)?.[1]).find((k) => k !== undefined);
    assert.ok(key, `the next start prints the key:\n${running.output.join('\n')}`);
    assert.equal((await new AttestClient({ baseUrl: running.url, apiKey: key }).call(v1.meta.getMe)).role, 'admin');
  });
});
