import type { Command } from 'commander';
import type { RunCountMismatch, UsageMismatch } from '../../server/db/repositories/usage.ts';
import { progressBar } from '../progress.ts';

/** Each project whose counters differ from the recount, with both. */
const usageLines = (mismatches: UsageMismatch[]) =>
  mismatches.map((m) => `project ${m.projectId} counts ${JSON.stringify(m.counted)}, its rows ${JSON.stringify(m.recounted)}`).join('; ');
/** Each run whose artifact counter differs from the recount, with both. */
const runCountLines = (mismatches: RunCountMismatch[]) =>
  mismatches.map((m) => `run ${m.runId} counts ${m.counted} artifacts, it holds ${m.recounted}`).join('; ');

/** `attest verify`: the durability invariants, checked offline (exit 1 when one does not hold). */
export function verifyCommand(program: Command): void {
  program
    .command('verify')
    .description(
      'check the durability invariants: database integrity, every referenced blob present with its size and SHA-256, ' +
        "every project's usage counters and every run's artifact count equal to a recount",
    )
    .option('--json', 'print the report as JSON')
    .option('--no-hash', 'check sizes only, without re-hashing blob contents')
    .action(async (options: { json?: boolean; hash: boolean }) => {
      const { verifyStorage } = await import('../../server/services/operations/maintenance.ts');
      const { openInstance } = await import('../instance.ts');
      const { database, blobs } = await openInstance('then run attest verify again (the server checks the database at every start)');
      const bar = options.json ? undefined : progressBar('verifying blobs');
      try {
        const report = await verifyStorage(
          { db: database.db, blobs, database },
          { hashContents: options.hash, onProgress: (d, t) => bar?.update(d, t) },
        );
        bar?.stop();
        const sound =
          report.integrity.length === 0 &&
          report.missingBlobs.length === 0 &&
          report.badBlobs.length === 0 &&
          report.usageMismatches.length === 0 &&
          report.runCountMismatches.length === 0;
        if (options.json) process.stdout.write(`${JSON.stringify({ ...report, sound })}\n`);
        else {
          process.stdout.write(
            `database: ${report.integrity.length === 0 ? 'ok' : report.integrity.join('; ')}\n` +
              `artifacts: ${report.artifactsChecked}; missing blobs: ${report.missingBlobs.length}; damaged blobs: ${report.badBlobs.length}; ` +
              `orphan blobs: ${report.orphanBlobs} (removed by gc after the grace period)\n` +
              `usage counters: ${report.usageMismatches.length === 0 ? 'ok' : usageLines(report.usageMismatches)}\n` +
              `run artifact counts: ${report.runCountMismatches.length === 0 ? 'ok' : runCountLines(report.runCountMismatches)}\n`,
          );
        }
        if (!sound) process.exitCode = 1;
      } finally {
        await database.close();
      }
    });
}
