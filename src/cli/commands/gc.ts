import type { Command } from 'commander';
import { MiB, report, wholeNumber } from '../output.ts';

/** `attest gc`: deletes unreferenced blobs older than the grace period, offline. */
export function gcCommand(program: Command): void {
  program
    .command('gc')
    .description(
      'delete blobs no row references and older than the grace period, and empty blob folders (the server also does this periodically)',
    )
    .option('--dry-run', 'only report what would be deleted')
    .option('--grace-minutes <minutes>', 'keep unreferenced blobs younger than this (a whole number, 0 or more)', wholeNumber(0), 60)
    .option('--json', 'print the report as JSON')
    .action(async (options: { dryRun?: boolean; graceMinutes: number; json?: boolean }) => {
      const { collectGarbage } = await import('../../server/services/operations/maintenance.ts');
      const { openInstance } = await import('../instance.ts');
      const { database, blobs } = await openInstance('or leave it to the server, which collects garbage every hour');
      try {
        const gc = await collectGarbage(
          { db: database.db, blobs, clock: () => new Date(), database },
          { graceMs: options.graceMinutes * 60_000, dryRun: options.dryRun },
        );
        await database.durable();
        report(
          options.json,
          gc,
          `${gc.dryRun ? 'would delete' : 'deleted'} ${gc.deleted} blobs (${(gc.deletedBytes / MiB).toFixed(1)} MiB)` +
            (gc.dryRun ? '; ' : ` and ${gc.removedFolders} empty folders; `) +
            `scanned ${gc.scanned}, referenced ${gc.referenced}, kept (younger than the grace period) ${gc.keptFresh}` +
            (gc.reclaimed ? `; the database gave back ${(gc.reclaimed.freedBytes / MiB).toFixed(1)} MiB` : ''),
        );
      } finally {
        await database.close();
      }
    });
}
