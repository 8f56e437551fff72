import type { Command } from 'commander';
import { CliError, MiB, report } from '../output.ts';
import { progressBar } from '../progress.ts';

/** `attest backup <destination>`: online backup of an embedded instance (safe while the server runs). */
export function backupCommand(program: Command): void {
  program
    .command('backup <destination>')
    .description('online backup of the embedded database and its blobs into an empty folder (safe while the server runs)')
    .option('--json', 'print the report as JSON')
    .action(async (destination: string, options: { json?: boolean }) => {
      const { loadConfig } = await import('../../server/config.ts');
      const { backupEmbedded } = await import('../../server/backup/backup.ts');
      const { requireDatabase } = await import('../instance.ts');
      const config = loadConfig();
      if (config.databaseUrl)
        throw new CliError('PostgreSQL instances are backed up with pg_dump (or your managed backups) plus a copy of the blob store');
      requireDatabase(config);
      const bar = options.json ? undefined : progressBar('copying blobs');
      const done = await backupEmbedded(config.dataDir, destination, (d, t) => bar?.update(d, t));
      bar?.stop();
      report(options.json, done, `backed up ${done.database} and ${done.blobs} blobs (${(done.bytes / MiB).toFixed(1)} MiB)`);
    });
}
