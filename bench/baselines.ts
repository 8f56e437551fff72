import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

// Baselines that need no server: the SQLite driver alone and the filesystem alone, on the same
// disk as the data folder, with the same durability (WAL, synchronous=FULL; fsync per file).

function database(dir: string): Database.Database {
  const db = new Database(path.join(dir, 'baseline.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE IF NOT EXISTS steps(id TEXT PRIMARY KEY, run_id TEXT, position INT, title TEXT, status TEXT, duration_ms INT)');
  return db;
}

/** Rows per second: `rows` steps inserted in one transaction by better-sqlite3 alone. */
export function driverBulkRowsPerSecond(dir: string, rows: number): number {
  const db = database(dir);
  const insert = db.prepare('INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?)');
  const all = db.transaction(() => {
    for (let i = 0; i < rows; i++) insert.run(`${Date.now()}-${i}-${Math.random()}`, 'run', i, `Step ${i}`, 'passed', i);
  });
  const start = performance.now();
  all();
  const seconds = (performance.now() - start) / 1000;
  db.close();
  return rows / seconds;
}

/** Transactions per second: one row per transaction, back to back, for `seconds`. */
export function driverSingleRowTransactionsPerSecond(dir: string, seconds: number): number {
  const db = database(dir);
  const insert = db.prepare('INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?)');
  const one = db.transaction((i: number) => insert.run(`${Date.now()}-${i}-${Math.random()}`, 'run', i, 'Step', 'passed', i));
  const end = performance.now() + seconds * 1000;
  let count = 0;
  while (performance.now() < end) one(count++);
  db.close();
  return count / seconds;
}

/** Files per second: `bytes` written, fsynced, renamed into place and the folder fsynced, `parallel` at once. */
export async function writeFsyncPerSecond(dir: string, bytes: Uint8Array, parallel: number, seconds: number): Promise<number> {
  const folder = path.join(dir, 'files');
  fs.mkdirSync(folder, { recursive: true });
  const end = performance.now() + seconds * 1000;
  let count = 0;
  await Promise.all(
    Array.from({ length: parallel }, async (_, worker) => {
      for (let i = 0; performance.now() < end; i++) {
        const final = path.join(folder, `${worker}-${i}`);
        const handle = await fs.promises.open(`${final}.part`, 'w');
        await handle.writeFile(bytes);
        await handle.sync();
        await handle.close();
        await fs.promises.rename(`${final}.part`, final);
        const dirHandle = await fs.promises.open(folder, 'r');
        await dirHandle.sync();
        await dirHandle.close();
        count++;
      }
    }),
  );
  return count / seconds;
}
