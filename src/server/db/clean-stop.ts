import fs from 'node:fs';
import path from 'node:path';
import { fsyncDirectory } from './wal-sync.ts';

// Whether the previous process that used a data folder stopped cleanly, so start-up runs the
// whole-file integrity check (SQLite quick_check) only when it may have stopped mid-write (DUR-9).

/** Present while a server has the data folder open; removed once it has closed the database. */
const MARKER = 'attest.open';

/** True when the last server on this folder never closed it (killed, crashed, power lost). */
export function stoppedUncleanly(dataDir: string): boolean {
  return fs.existsSync(path.join(dataDir, MARKER));
}

/**
 * Records that a server has the folder open. Written and flushed (file and folder) before the
 * server takes any request, so a crash at any later moment leaves it behind.
 */
export function markOpen(dataDir: string): void {
  const file = path.join(dataDir, MARKER);
  const fd = fs.openSync(file, 'w');
  try {
    fs.writeSync(fd, `${JSON.stringify({ pid: process.pid, openedAt: new Date().toISOString() })}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fsyncDirectory(dataDir);
}

/** Records a clean stop: the database is closed (its WAL checkpointed), nothing is half-written. */
export function markClosed(dataDir: string): void {
  fs.rmSync(path.join(dataDir, MARKER), { force: true });
  fsyncDirectory(dataDir);
}
