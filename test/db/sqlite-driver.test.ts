import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import SQLite from 'better-sqlite3';
import { CamelCasePlugin, type Generated, Kysely, Migrator, SqliteDialect, sql, type Transaction } from 'kysely';
import { CachingSqliteDialect, EACH_ROW, type EachRowQuery, inlineLimit, StatementCache } from '../../src/server/db/sqlite-driver.ts';
import { tempDir } from '../helpers/data-folders.ts';

interface Db {
  items: { id: Generated<number>; name: string; size: number | null };
}

/** A database file with one table, opened by Kysely's own driver and by ours, side by side. */
function open() {
  const file = path.join(tempDir(), 'driver.db');
  const raw = new SQLite(file);
  raw.pragma('journal_mode = WAL');
  raw.exec('CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, size INTEGER)');
  let commits = 0;
  let statements = 0;
  const cached = new SQLite(file);
  const ours = new Kysely<Db>({
    dialect: new CachingSqliteDialect({ database: cached, cacheSize: 4, onCommit: () => commits++, onStatement: () => statements++ }),
  });
  const theirs = new Kysely<Db>({ dialect: new SqliteDialect({ database: raw }) });
  return {
    ours,
    theirs,
    commits: () => commits,
    statements: () => statements,
    /** The better-sqlite3 handle under `ours`. */
    database: cached,
    close: async () => Promise.all([ours.destroy(), theirs.destroy()]),
  };
}

/**
 * A transaction that counts the rows, then inserts one row per prefix named after that count, each
 * a turn of the event loop later: two such transactions interleaved would clash on a name.
 */
async function countThenInsert(trx: Transaction<Db>, size: number, prefixes: string[]): Promise<void> {
  const n = (await trx.selectFrom('items').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow()).n;
  for (const prefix of prefixes) {
    await new Promise((resolve) => setImmediate(resolve));
    await trx
      .insertInto('items')
      .values({ name: `${prefix}${n}`, size })
      .execute();
  }
}

describe('[sqlite] the statement-caching driver', () => {
  test('answers exactly as Kysely’s own driver: rows, affected counts, insert ids, RETURNING', async () => {
    const { ours, theirs, close } = open();
    try {
      for (const [i, db] of [ours, theirs].entries()) {
        const inserted = await db
          .insertInto('items')
          .values({ name: `a${i}`, size: 3 })
          .executeTakeFirstOrThrow();
        const returned = await db
          .insertInto('items')
          .values({ name: `b${i}`, size: null })
          .returning(['id', 'name'])
          .execute();
        const updated = await db.updateTable('items').set({ size: 7 }).where('name', 'like', '%').executeTakeFirstOrThrow();
        assert.equal(typeof inserted.insertId, 'bigint');
        assert.equal(returned.length, 1);
        assert.equal(updated.numUpdatedRows, BigInt(2 * (i + 1)));
      }
      const query = (db: Kysely<Db>) => db.selectFrom('items').selectAll().orderBy('id').execute();
      assert.deepEqual(await query(ours), await query(theirs));
      assert.deepEqual(
        (await sql<{ n: number }>`SELECT count(*) AS n FROM items WHERE size = ${7}`.execute(ours)).rows,
        (await sql<{ n: number }>`SELECT count(*) AS n FROM items WHERE size = ${7}`.execute(theirs)).rows,
      );
    } finally {
      await close();
    }
  });

  test('rows come back as the same objects as Kysely’s own driver gives, whatever the column names', async () => {
    const { ours, theirs, close } = open();
    try {
      await ours.insertInto('items').values({ name: 'one', size: 1 }).execute();
      // Duplicate names (the last value wins), quotes, a name that is not an identifier, a
      // `__proto__` column (never the prototype), no rows, and a single row.
      const texts = [
        sql`SELECT name, size, size + 1 AS size, 'x' AS "we""ird", 2 AS "a b", NULL AS "", id FROM items`,
        sql`SELECT name AS "__proto__", size FROM items`,
        sql`SELECT name AS constructor, size AS "toString" FROM items WHERE size = ${1} LIMIT 1`,
        sql`SELECT * FROM items WHERE size = ${99}`,
      ];
      for (const text of texts) {
        const mine = (await text.execute(ours)).rows;
        const kysely = (await text.execute(theirs)).rows;
        assert.deepEqual(mine, kysely);
        for (const row of mine) assert.equal(Object.getPrototypeOf(row), Object.prototype);
      }
      // A statement run again answers from its cached row builder.
      assert.deepEqual((await texts[0]?.execute(ours))?.rows, (await texts[0]?.execute(theirs))?.rows);
    } finally {
      await close();
    }
  });

  test('reuses one prepared statement per SQL text and keeps at most its bound, least recently used out', () => {
    const database = new SQLite(':memory:');
    const cache = new StatementCache(database, 3);
    const first = cache.get('SELECT 1');
    assert.equal(cache.get('SELECT 1'), first);
    cache.get('SELECT 2');
    cache.get('SELECT 3');
    cache.get('SELECT 1'); // now the most recently used
    cache.get('SELECT 4'); // evicts SELECT 2
    assert.equal(cache.size, 3);
    assert.equal(cache.get('SELECT 1'), first);
    const before = cache.get('SELECT 3');
    cache.get('SELECT 2'); // prepared anew, evicting SELECT 4
    assert.equal(cache.size, 3);
    assert.equal(cache.get('SELECT 3'), before);
    for (let i = 0; i < 50; i++) cache.get(`SELECT ${i + 100}`);
    assert.equal(cache.size, 3);
    database.close();
  });

  test('a statement that fails to prepare or to run leaves the cache sound', async () => {
    const { ours, close } = open();
    try {
      await assert.rejects(sql`SELEC nonsense`.execute(ours), /syntax error/);
      await assert.rejects(sql`SELEC nonsense`.execute(ours), /syntax error/);
      await ours.insertInto('items').values({ name: 'same', size: 1 }).execute();
      // The same cached INSERT fails on the unique name, then runs with other values.
      await assert.rejects(ours.insertInto('items').values({ name: 'same', size: 2 }).execute(), /UNIQUE/);
      await ours.insertInto('items').values({ name: 'other', size: 2 }).execute();
      const rows = await ours.selectFrom('items').select(['name', 'size']).orderBy('id').execute();
      assert.deepEqual(rows, [
        { name: 'same', size: 1 },
        { name: 'other', size: 2 },
      ]);
    } finally {
      await close();
    }
  });

  test('transactions and savepoints commit and roll back, and each commit is reported once', async () => {
    const { ours, commits, close } = open();
    try {
      const start = commits();
      await ours.selectFrom('items').selectAll().execute();
      assert.equal(commits(), start, 'a read commits nothing');
      await ours.insertInto('items').values({ name: 'auto', size: 1 }).execute();
      assert.equal(commits(), start + 1, 'an autocommit write');
      await ours.insertInto('items').values({ name: 'returning', size: 1 }).returning('id').execute();
      assert.equal(commits(), start + 2, 'an autocommit INSERT … RETURNING (a reader that writes)');
      const trx = await ours.startTransaction().execute();
      await trx.insertInto('items').values({ name: 't1', size: 1 }).execute();
      await trx.insertInto('items').values({ name: 't2', size: 1 }).execute();
      const inner = await trx.savepoint('inner').execute();
      await inner.insertInto('items').values({ name: 'undone', size: 1 }).execute();
      await inner.rollbackToSavepoint('inner').execute();
      const kept = await trx.savepoint('kept').execute();
      await kept.releaseSavepoint('kept').execute();
      assert.equal(commits(), start + 2, 'nothing commits before the transaction does');
      await trx.commit().execute();
      assert.equal(commits(), start + 3, 'a transaction commits once');
      await assert.rejects(
        ours.transaction().execute(async (trx) => {
          await trx.insertInto('items').values({ name: 'rolled back', size: 1 }).execute();
          throw new Error('abort');
        }),
        /abort/,
      );
      const names = (await ours.selectFrom('items').select('name').orderBy('id').execute()).map((r) => r.name);
      assert.deepEqual(names, ['auto', 'returning', 't1', 't2']);
    } finally {
      await close();
    }
  });

  test('every statement it runs is counted, transaction control and failures included', async () => {
    const { ours, statements, close } = open();
    try {
      const start = statements();
      await ours.selectFrom('items').selectAll().execute();
      assert.equal(statements(), start + 1);
      await ours.transaction().execute(async (trx) => {
        await trx.insertInto('items').values({ name: 'n', size: 1 }).execute();
      });
      assert.equal(statements(), start + 4, 'begin, the insert, commit');
      await assert.rejects(ours.insertInto('items').values({ name: 'n', size: 1 }).execute(), /UNIQUE/);
      assert.equal(statements(), start + 5);
      for await (const _ of ours.selectFrom('items').selectAll().stream());
      assert.equal(statements(), start + 6, 'a streamed read');
    } finally {
      await close();
    }
  });

  test('a bound LIMIT runs inlined, and every limit and offset answers as Kysely’s own driver does', async () => {
    const { ours, theirs, close } = open();
    try {
      // Both connections read the same file.
      await ours
        .insertInto('items')
        .values(Array.from({ length: 12 }, (_, i) => ({ name: `n${String(i).padStart(2, '0')}`, size: i })))
        .execute();
      const page = (db: Kysely<Db>, limit: number | bigint, offset?: number) => {
        const query = db.selectFrom('items').select(['name', 'size']).orderBy('name').limit(limit);
        return (offset === undefined ? query : query.offset(offset)).execute();
      };
      for (const [limit, offset] of [[0], [1], [5], [5, 3], [100, 10], [3n], [2, 11]] as [number | bigint, number?][]) {
        assert.deepEqual(await page(ours, limit, offset), await page(theirs, limit, offset), `limit ${limit} offset ${offset}`);
      }
      // A subquery's LIMIT stays bound: only a LIMIT that ends the statement is inlined.
      const nested = (db: Kysely<Db>) =>
        db
          .selectFrom('items')
          .select('name')
          .where('id', 'in', db.selectFrom('items').select('id').orderBy('id').limit(2))
          .orderBy('name')
          .execute();
      assert.deepEqual(await nested(ours), await nested(theirs));
    } finally {
      await close();
    }
  });

  test('what Kysely compiles gets both: its LIMIT written in, and a row builder for its rows', async () => {
    // Both rely on the text Kysely writes (` limit ?` at the end, column names from `columns()`): if
    // a Kysely upgrade wrote it otherwise, the answers would stay right and only this test would
    // notice that the driver no longer applies either.
    const file = path.join(tempDir(), 'applies.db');
    const database = new SQLite(file);
    database.exec('CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, size INTEGER)');
    const dialect = new CachingSqliteDialect({ database });
    const db = new Kysely<Db>({ dialect });
    try {
      await db.insertInto('items').values({ name: 'a', size: 1 }).execute();
      await db.selectFrom('items').selectAll().orderBy('id').limit(7).execute();
      await db.selectFrom('items').select('name').orderBy('id').limit(3).offset(1).execute();
      await db.selectFrom('items').select('name').where('id', '=', 1).limit(1).executeTakeFirst();
      const texts = dialect.statements?.texts() ?? [];
      const selects = texts.filter((text) => text.startsWith('select'));
      assert.deepEqual(
        selects.map((text) => text.slice(text.indexOf(' limit '))),
        [' limit 7', ' limit 3 offset ?', ' limit 1'],
        `the limits were not written in: ${selects.join(' | ')}`,
      );
      for (const text of selects) {
        const cached = dialect.statements?.peek(text);
        assert.ok(cached?.toObject, `no row builder for ${text}`);
        assert.equal(cached?.statement.reader, true);
      }
      const insert = texts.find((text) => text.startsWith('insert'));
      assert.equal(dialect.statements?.peek(insert as string)?.toObject, undefined, 'a writer returns no rows to build');
    } finally {
      await db.destroy();
    }
  });

  test('inlineLimit writes in only a non-negative whole limit that ends the statement', () => {
    assert.deepEqual(inlineLimit('select * from t where a = ? limit ?', ['x', 1]), {
      sql: 'select * from t where a = ? limit 1',
      parameters: ['x'],
    });
    assert.deepEqual(inlineLimit('select * from t limit ? offset ?', [50, 100]), {
      sql: 'select * from t limit 50 offset ?',
      parameters: [100],
    });
    assert.deepEqual(inlineLimit('select * from t limit ?', [7n]), { sql: 'select * from t limit 7', parameters: [] });
    for (const odd of [1.5, -1, '1; drop table t', null, Number.MAX_SAFE_INTEGER + 2]) {
      assert.deepEqual(inlineLimit('select * from t limit ?', [odd]), { sql: 'select * from t limit ?', parameters: [odd] });
    }
    const untouched = ['select * from (select * from t limit ?) where a = ?', 'select * from t'];
    for (const text of untouched) assert.equal(inlineLimit(text, [1, 2]).sql, text);
  });

  test('rows inserted one prepared statement at a time (EACH_ROW) land as one multi-row insert would, in or out of a transaction', async () => {
    const { ours, theirs, commits, close } = open();
    try {
      const rows = (prefix: string, n: number) =>
        Array.from({ length: n }, (_, i) => ({ name: `${prefix}${String(i).padStart(5, '0')}`, size: i % 3 === 0 ? null : i }));
      const sqlOf = (rows: { name: string; size: number | null }[]) =>
        ours
          .insertInto('items')
          .values(rows[0] as never)
          .compile();
      const eachRow = (executor: Kysely<Db> | Transaction<Db>, batch: { name: string; size: number | null }[]) =>
        executor.executeQuery({ ...sqlOf(batch), [EACH_ROW]: batch.map((row) => [row.name, row.size]) } as EachRowQuery);

      const before = commits();
      const result = await eachRow(ours, rows('a', 5000));
      assert.equal(result.numAffectedRows, 5000n);
      assert.equal(commits(), before + 1, 'outside a transaction the rows commit together, once');
      await theirs.insertInto('items').values(rows('b', 5000)).execute();
      const read = async (prefix: string) =>
        (await ours.selectFrom('items').select(['name', 'size']).where('name', 'like', `${prefix}%`).orderBy('name').execute()).map(
          (row) => [row.name.slice(1), row.size],
        );
      assert.deepEqual(await read('a'), await read('b'));

      // Inside a transaction they are part of it: a rollback leaves none, and a failing row fails the whole.
      await assert.rejects(
        ours.transaction().execute(async (trx) => {
          await eachRow(trx, rows('c', 100));
          throw new Error('abort');
        }),
        /abort/,
      );
      await assert.rejects(eachRow(ours, [...rows('d', 10), { name: 'a00000', size: 1 }]), /UNIQUE/);
      assert.equal((await ours.selectFrom('items').select('name').where('name', 'like', 'c%').execute()).length, 0);
      assert.equal((await ours.selectFrom('items').select('name').where('name', 'like', 'd%').execute()).length, 0);
    } finally {
      await close();
    }
  });

  test('concurrent transactions take the one connection in turn', async () => {
    const { ours, close } = open();
    try {
      await Promise.all(Array.from({ length: 20 }, (_, i) => ours.transaction().execute((trx) => countThenInsert(trx, i, ['n']))));
      // Serialised: each saw the rows of the ones before it, so the names are n0 … n19 without a clash.
      assert.equal((await ours.selectFrom('items').select('name').execute()).length, 20);
    } finally {
      await close();
    }
  });

  describe('Kysely’s own transactions on the caching driver', () => {
    const run = <T>(db: Kysely<Db>, work: (trx: Transaction<Db>) => Promise<T>) => db.transaction().execute(work);

    test('commit once, roll back on an error and pass it on, and refuse statements after the end', async () => {
      const { ours, theirs, commits, statements, database, close } = open();
      try {
        const before = { commits: commits(), statements: statements() };
        let kept: Transaction<Db> | undefined;
        const ids = await run(ours, async (trx) => {
          kept = trx;
          assert.equal(trx.isTransaction, true);
          await trx.insertInto('items').values({ name: 'a', size: 1 }).execute();
          await sql`INSERT INTO items (name, size) VALUES (${'b'}, ${2})`.execute(trx);
          return (await trx.selectFrom('items').select('id').orderBy('id').execute()).map((row) => row.id);
        });
        assert.equal(ids.length, 2);
        assert.equal(commits(), before.commits + 1, 'one commit');
        assert.equal(statements(), before.statements + 5, 'begin, three statements, commit');
        await assert.rejects(kept?.selectFrom('items').selectAll().execute() ?? Promise.resolve(), /already committed/);

        const failure = new Error('abort');
        await assert.rejects(
          run(ours, async (trx) => {
            await trx.insertInto('items').values({ name: 'undone', size: 3 }).execute();
            throw failure;
          }),
          (error) => error === failure,
        );
        // A statement that fails inside rolls the whole transaction back, and its error comes out.
        await assert.rejects(
          run(ours, async (trx) => {
            await trx.insertInto('items').values({ name: 'undone too', size: 3 }).execute();
            await trx.insertInto('items').values({ name: 'a', size: 4 }).execute();
          }),
          /UNIQUE/,
        );
        const names = (await theirs.selectFrom('items').select('name').orderBy('id').execute()).map((row) => row.name);
        assert.deepEqual(names, ['a', 'b']);
        assert.equal(database.inTransaction, false);
      } finally {
        await close();
      }
    });

    test('one at a time with every other use of the connection: no statement runs inside another’s transaction', async () => {
      const { ours, database, close } = open();
      try {
        const seen: number[] = [];
        await Promise.all([
          ...Array.from({ length: 10 }, (_, i) => run(ours, (trx) => countThenInsert(trx, i, ['n', 'm']))),
          // Reads and Kysely's own transactions between them wait for the connection: a read never
          // sees a row that is not committed (each transaction adds two, so the count stays even).
          ...Array.from({ length: 10 }, async () => {
            seen.push(Number((await ours.selectFrom('items').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow()).n));
            await ours.transaction().execute(async (trx) => {
              await trx.selectFrom('items').selectAll().execute();
            });
          }),
        ]);
        assert.equal((await ours.selectFrom('items').select('name').execute()).length, 20);
        assert.deepEqual(
          seen.filter((count) => count % 2 === 1),
          [],
          'a read ran inside a transaction',
        );
        assert.equal(seen.length, 10);
        assert.equal(database.inTransaction, false);
      } finally {
        await close();
      }
    });

    test('Kysely’s plugins apply inside and around it, and a nested transaction is refused as Kysely refuses it', async () => {
      const { ours, close } = open();
      try {
        const camel = sql<{ itemName: string }>`SELECT name AS item_name FROM items`;
        await run(ours, async (trx) => {
          await trx.insertInto('items').values({ name: 'x', size: 1 }).execute();
          assert.deepEqual((await camel.execute(trx.withPlugin(new CamelCasePlugin()))).rows, [{ itemName: 'x' }]);
          assert.throws(() => trx.transaction(), /not supported/);
        });
        // Plugins given to the database apply inside its transactions too.
        await run(ours.withPlugin(new CamelCasePlugin()), async (trx) => {
          assert.deepEqual((await camel.execute(trx)).rows, [{ itemName: 'x' }]);
        });
      } finally {
        await close();
      }
    });
  });
});

describe('[sqlite] migrations through the driver', () => {
  test('pending migrations apply in one transaction: one that fails leaves the schema and the data as they were', async () => {
    const { ours, close } = open();
    // biome-ignore lint/suspicious/noExplicitAny: migrations run on a schema-less handle
    const migrator = (migrations: Record<string, { up(db: Kysely<any>): Promise<void> }>) =>
      new Migrator({ db: ours, provider: { getMigrations: async () => migrations } });
    try {
      await ours.insertInto('items').values({ name: 'kept', size: 1 }).execute();
      // A table rebuild that dies between its DROP and its RENAME, as a crash would.
      const rebuild = {
        up: async (db: Kysely<unknown>) => {
          await sql`CREATE TABLE items_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, size INTEGER)`.execute(db);
          await sql`INSERT INTO items_new SELECT * FROM items`.execute(db);
          await sql`DROP TABLE items`.execute(db);
          throw new Error('died before the rename');
        },
      };
      const first = { up: async (db: Kysely<unknown>) => void (await sql`CREATE TABLE first (x INTEGER)`.execute(db)) };
      const { error } = await migrator({ '0001': first, '0002': rebuild }).migrateToLatest();
      assert.match(String(error), /died before the rename/);
      const tables = await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`.execute(ours);
      assert.deepEqual(
        tables.rows.map((row) => row.name).filter((name) => !name.startsWith('kysely_')),
        ['items'],
      );
      assert.deepEqual(await ours.selectFrom('items').select(['name', 'size']).execute(), [{ name: 'kept', size: 1 }]);
      const recorded = await sql<{ n: number }>`SELECT count(*) AS n FROM kysely_migration`.execute(ours);
      assert.equal(Number(recorded.rows[0]?.n), 0, 'neither migration is recorded');
    } finally {
      await close();
    }
  });
});
