import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../../src/server/config.ts';
import { createDatabase, type DatabaseHandle } from '../../src/server/db/database.ts';
import { tempDir } from '../helpers/data-folders.ts';
import { createPostgresDatabase, DIALECTS } from '../helpers/dialects.ts';

// Deleting a parent row makes the database find the rows that reference it (to cascade or set them
// null). Without an index led by the referencing column that is a scan of the whole child table
// per deleted parent: deleting a 1,000-step run once took 20 s with 120,000 stored cells, with the
// event loop held throughout (migration 0008). Every foreign key of the schema, today's and
// tomorrow's, must lead an index.

/** Foreign keys (table.column → parent) whose column leads no index of its table. */
async function unindexedForeignKeys(handle: DatabaseHandle, dialect: 'sqlite' | 'postgres'): Promise<string[]> {
  if (dialect === 'postgres') {
    const { rows } = await sql<{ fk: string }>`
      SELECT c.conrelid::regclass::text || '.' || a.attname || ' -> ' || c.confrelid::regclass::text AS fk
      FROM pg_constraint c
      JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
      WHERE c.contype = 'f'
        AND NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.conrelid AND i.indkey[0] = c.conkey[1])
      ORDER BY 1`.execute(handle.db);
    return rows.map((row) => row.fk);
  }
  const { rows: tables } = await sql<{ name: string }>`
    SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`.execute(handle.db);
  const missing: string[] = [];
  for (const { name: table } of tables) {
    const { rows: keys } = await sql<{ from: string; table: string; seq: number }>`
      SELECT "from", "table", seq FROM pragma_foreign_key_list(${table})`.execute(handle.db);
    const { rows: leading } = await sql<{ name: string }>`
      SELECT ii.name FROM pragma_index_list(${table}) il, pragma_index_info(il.name) ii WHERE ii.seqno = 0`.execute(handle.db);
    const led = new Set(leading.map((row) => row.name));
    for (const key of keys) if (key.seq === 0 && !led.has(key.from)) missing.push(`${table}.${key.from} -> ${key.table}`);
  }
  return missing.sort();
}

for (const dialect of DIALECTS) {
  describe(`[${dialect}] foreign keys`, () => {
    test('every foreign key column leads an index, so deleting a parent never scans a child table', async () => {
      const database = dialect === 'postgres' ? await createPostgresDatabase('attest_fk') : undefined;
      const handle = await createDatabase(
        loadConfig({ ATTEST_DATA_DIR: tempDir(), ...(database ? { ATTEST_DATABASE_URL: database.url } : {}) }),
      );
      try {
        const foreignKeys =
          dialect === 'postgres'
            ? await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_constraint WHERE contype = 'f'`.execute(handle.db)
            : await sql<{
                n: number;
              }>`SELECT count(*) AS n FROM sqlite_master m, pragma_foreign_key_list(m.name) WHERE m.type = 'table'`.execute(handle.db);
        // The check looks at something: the schema has its foreign keys.
        assert.ok(Number(foreignKeys.rows[0]?.n) >= 20, `foreign keys found: ${foreignKeys.rows[0]?.n}`);
        assert.deepEqual(await unindexedForeignKeys(handle, dialect), []);
      } finally {
        await handle.close();
        await database?.drop();
      }
    });
  });
}
