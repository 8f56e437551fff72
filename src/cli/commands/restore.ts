import type { Command } from 'commander';
import { CliError, MiB, report } from '../output.ts';
import { progressBar } from '../progress.ts';

/** `attest restore <backup>`: a checked backup into an empty data folder, moved into place once complete. */
export function restoreCommand(program: Command): void {
  program
    .command('restore <backup>')
    .description(
      'check a backup (every blob size and SHA-256) and restore it into the empty data folder named by ATTEST_DATA_DIR, ' +
        'its blobs into that folder or, with ATTEST_BLOB_URL, uploaded into the bucket',
    )
    .option('--json', 'print the report as JSON')
    .action(async (backup: string, options: { json?: boolean }) => {
      const { loadConfig } = await import('../../server/config.ts');
      const { restoreEmbedded } = await import('../../server/backup/backup.ts');
      const { createBlobStore } = await import('../../server/blob/create-blob-store.ts');
      const config = loadConfig();
      if (config.databaseUrl)
        throw new CliError('attest restore restores backups of embedded (SQLite) instances; unset ATTEST_DATABASE_URL, or use pg_restore');
      const bucket = config.blobUrl ? await createBlobStore(config, { crashPoint: () => {} }) : undefined;
      const bar = options.json ? undefined : progressBar(bucket ? `uploading blobs to ${bucket.location}` : 'restoring blobs');
      const done = await restoreEmbedded(backup, config.dataDir, (d, t) => bar?.update(d, t), bucket);
      bar?.stop();
      const into = bucket ? `${bucket.location} and the database into ${config.dataDir}` : config.dataDir;
      report(options.json, done, `restored ${done.blobs} blobs (${(done.bytes / MiB).toFixed(1)} MiB) into ${into}`);
    });
}
