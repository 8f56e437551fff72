import type { Command } from 'commander';
import { CliError, MiB, report } from '../output.ts';
import { progressBar } from '../progress.ts';

/** What `attest backup` cannot do, said where a user of a PostgreSQL instance meets it (docs/storage.md, Backups). */
const POSTGRES_BACKUP =
  'attest backup takes embedded (SQLite) instances only. Back up a PostgreSQL instance with pg_dump (or the managed backups of ' +
  'your provider), then its blobs with their own store: the blobs/ folder of the data folder, or, in a bucket (ATTEST_BLOB_URL), ' +
  'with the versioning and replication of the bucket (or a copy of it). Blobs are immutable and named by their SHA-256, so a copy ' +
  'taken after the dump, within ATTEST_GC_GRACE_MINUTES of it, holds every blob the dump references. See docs/storage.md.';

/** `attest backup <destination>`: online backup of an embedded instance (safe while the server runs). */
export function backupCommand(program: Command): void {
  program
    .command('backup <destination>')
    .description(
      'online backup of the embedded database and its blobs (from the data folder, or downloaded from the bucket) into an empty folder (safe while the server runs)',
    )
    .option('--json', 'print the report as JSON')
    .action(async (destination: string, options: { json?: boolean }) => {
      const { loadConfig } = await import('../../server/config.ts');
      const { backupEmbedded } = await import('../../server/backup/backup.ts');
      const { createBlobStore } = await import('../../server/blob/create-blob-store.ts');
      const { requireDatabase } = await import('../instance.ts');
      const config = loadConfig();
      if (config.databaseUrl) throw new CliError(POSTGRES_BACKUP);
      requireDatabase(config);
      // Only read: the bucket's own store, without the start-up recovery the server runs.
      const bucket = config.blobUrl ? await createBlobStore(config, { crashPoint: () => {} }) : undefined;
      const bar = options.json ? undefined : progressBar(bucket ? `downloading blobs from ${bucket.location}` : 'copying blobs');
      const done = await backupEmbedded(config.dataDir, destination, (d, t) => bar?.update(d, t), bucket);
      bar?.stop();
      const from = bucket ? ` downloaded from ${bucket.location}` : '';
      report(options.json, done, `backed up ${done.database} and ${done.blobs} blobs${from} (${(done.bytes / MiB).toFixed(1)} MiB)`);
    });
}
