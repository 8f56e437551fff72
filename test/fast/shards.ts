import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The folders `npm run test:fast` covers: everything that spawns no server process, crash point or browser. */
export const FAST_FOLDERS = ['api', 'blob', 'cli', 'db', 'unit'];

const TEST_ROOT = fileURLToPath(new URL('../', import.meta.url));

/**
 * Runs one shard of the fast suite in this process. Loading the server's TypeScript costs about a
 * second of CPU per process, so the fast suite runs its files in a few long-lived processes
 * rather than one process per file; files go to shards by size (largest first, to the lightest
 * shard), which keeps the shards about equally long.
 */
export async function runShard(index: number, count: number): Promise<void> {
  const files = FAST_FOLDERS.flatMap((folder) =>
    readdirSync(path.join(TEST_ROOT, folder))
      .filter((name) => name.endsWith('.test.ts'))
      .map((name) => path.join(TEST_ROOT, folder, name)),
  )
    .map((file) => ({ file, size: statSync(file).size }))
    .sort((a, b) => b.size - a.size || a.file.localeCompare(b.file));
  const shards = Array.from({ length: count }, () => ({ size: 0, files: [] as string[] }));
  for (const { file, size } of files) {
    const lightest = shards.reduce((a, b) => (b.size < a.size ? b : a));
    lightest.size += size;
    lightest.files.push(file);
  }
  for (const file of (shards[index - 1] as { files: string[] }).files.sort()) await import(pathToFileURL(file).href);
}
