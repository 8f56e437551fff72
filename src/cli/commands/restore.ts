import type { Command } from 'commander';
import { CliError, MiB, report } from '../output.ts';
import { progressBar } from '../progress.ts';

/** `attest restore <backup>`: a checked backup into an empty data folder, moved into place once complete. */
export function restoreCommand(program: Command): void {
  program
    .command('restore <backup>')
    .description('check a backup (every blob size and SHA-256) and restore it into the empty data folder named by ATTEST_DATA_DIR')
    .option('--json', 'print the report as JSON')
    .action(async (backup: string, options: { json?: boolean }) => {
      const { loadConfig } = await import('../../server/config.ts');
      const { restoreEmbedded } = await import('../../server/backup/backup.ts');
      const config = loadConfig();
      if (config.databaseUrl)
        throw new CliError('attest restore restores backups of embedded (SQLite) instances; unset ATTEST_DATABASE_URL, or use pg_restore');
      const bar = options.json ? undefined : progressBar('restoring blobs');
      const done = await restoreEmbedded(backup, config.dataDir, (d, t) => bar?.update(d, t));
      bar?.stop();
      report(options.json, done, `restored ${done.blobs} blobs (${(done.bytes / MiB).toFixed(1)} MiB) into ${config.dataDir}`);
    });
}
