import type { Command } from 'commander';
import { createBlobStore } from '../../server/blob/create-blob-store.ts';
import { loadConfig } from '../../server/config.ts';
import { backupEmbedded, restoreEmbedded } from '../../server/db/backup.ts';
import { createDatabase } from '../../server/db/database.ts';
import { collectGarbage, verifyStorage } from '../../server/services/maintenance.ts';
import { progressBar } from '../progress.ts';

/** Opens the configured instance exclusively (the server must be stopped for SQLite). */
async function openInstance() {
  const config = loadConfig();
  const database = await createDatabase(config);
  const blobs = createBlobStore(config, () => {});
  return { config, database, blobs };
}

const MiB = 1024 * 1024;

/** `attest verify`, `attest gc`, `attest backup`, `attest restore`: storage maintenance. */
export function maintenanceCommands(program: Command): void {
  program
    .command('verify')
    .description('check the durability invariants: database integrity, every referenced blob present with its size and SHA-256')
    .option('--json', 'print the report as JSON')
    .option('--no-hash', 'check sizes only, without re-hashing blob contents')
    .action(async (options: { json?: boolean; hash: boolean }) => {
      const { database, blobs } = await openInstance();
      const bar = options.json ? undefined : progressBar('verifying blobs');
      try {
        const report = await verifyStorage(
          { db: database.db, blobs, database },
          { hashContents: options.hash, onProgress: (d, t) => bar?.update(d, t) },
        );
        bar?.stop();
        const sound = report.integrity.length === 0 && report.missingBlobs.length === 0 && report.badBlobs.length === 0;
        if (options.json) process.stdout.write(`${JSON.stringify({ ...report, sound })}\n`);
        else {
          process.stdout.write(
            `database: ${report.integrity.length === 0 ? 'ok' : report.integrity.join('; ')}\n` +
              `artifacts: ${report.artifactsChecked}; missing blobs: ${report.missingBlobs.length}; damaged blobs: ${report.badBlobs.length}; ` +
              `orphan blobs: ${report.orphanBlobs} (removed by gc after the grace period)\n`,
          );
        }
        if (!sound) process.exitCode = 1;
      } finally {
        await database.close();
      }
    });

  program
    .command('gc')
    .description('delete blobs no row references and older than the grace period (the server also does this periodically)')
    .option('--dry-run', 'only report what would be deleted')
    .option('--grace-minutes <minutes>', 'keep unreferenced blobs younger than this', '60')
    .action(async (options: { dryRun?: boolean; graceMinutes: string }) => {
      const { database, blobs } = await openInstance();
      try {
        const report = await collectGarbage(
          { db: database.db, blobs, clock: () => new Date() },
          { graceMs: Number(options.graceMinutes) * 60_000, dryRun: options.dryRun },
        );
        process.stdout.write(
          `${report.dryRun ? 'would delete' : 'deleted'} ${report.deleted} blobs (${(report.deletedBytes / MiB).toFixed(1)} MiB); ` +
            `scanned ${report.scanned}, referenced ${report.referenced}, kept (younger than the grace period) ${report.keptFresh}\n`,
        );
      } finally {
        await database.close();
      }
    });

  program
    .command('backup <destination>')
    .description('online backup of the embedded database and its blobs into an empty folder (safe while the server runs)')
    .action(async (destination: string) => {
      const config = loadConfig();
      if (config.databaseUrl)
        throw new Error('PostgreSQL instances are backed up with pg_dump (or your managed backups) plus a copy of the blob store');
      const bar = progressBar('copying blobs');
      const report = await backupEmbedded(config.dataDir, destination, (d, t) => bar.update(d, t));
      bar.stop();
      process.stdout.write(`backed up ${report.database} and ${report.blobs} blobs (${(report.bytes / MiB).toFixed(1)} MiB)\n`);
    });

  program
    .command('restore <backup>')
    .description('restore a backup into the (empty) data folder named by ATTEST_DATA_DIR')
    .action(async (backup: string) => {
      const config = loadConfig();
      const bar = progressBar('restoring blobs');
      const report = await restoreEmbedded(backup, config.dataDir, (d, t) => bar.update(d, t));
      bar.stop();
      process.stdout.write(`restored ${report.blobs} blobs (${(report.bytes / MiB).toFixed(1)} MiB) into ${config.dataDir}\n`);
    });
}
