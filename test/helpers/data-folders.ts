import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { loadConfig } from '../../src/server/config.ts';
import { createDatabase } from '../../src/server/db/database.ts';

/** A new, empty folder under the system temp folder. */
export const tempDir = (prefix = 'attest-db-') => fs.mkdtempSync(path.join(os.tmpdir(), prefix));

/** A migrated data folder whose database file has one damaged b-tree page (in a table of its own). */
export async function damagedDataDir(): Promise<string> {
  const dir = tempDir();
  await (await createDatabase(loadConfig({ ATTEST_DATA_DIR: dir }))).close();
  damageDatabase(dir);
  return dir;
}

/** Damages one b-tree page of the database in `dir` (a table of its own), as a disk fault would. No process may have it open. */
export function damageDatabase(dir: string): void {
  const file = path.join(dir, 'attest.db');
  const raw = new SQLite(file);
  raw.exec(`CREATE TABLE filler(x TEXT);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) INSERT INTO filler SELECT printf('%0100d', i) FROM n`);
  const { rootpage } = raw.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'filler'").get() as { rootpage: number };
  const pageSize = raw.pragma('page_size', { simple: true }) as number;
  raw.close(); // checkpoints the WAL into the file
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, Buffer.alloc(64, 0xff), 0, 64, (rootpage - 1) * pageSize);
  fs.closeSync(fd);
}
