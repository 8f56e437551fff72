import type { Command } from 'commander';
import { report } from '../output.ts';
import { progressOf } from '../progress.ts';

/** `attest retention [--dry-run]`: applies (or shows) every project's retention, on the server's host. */
export function retentionCommand(program: Command): void {
  program
    .command('retention')
    .description('delete the finished runs each project keeps no longer (its policy, or ATTEST_RETENTION_*); --dry-run only counts them')
    .option('--dry-run', 'count what would be deleted, delete nothing')
    .option('--json', 'print the report as JSON')
    .action(async (options: { dryRun?: boolean; json?: boolean }) => {
      const { sweepRetention } = await import('../../server/services/operations/retention.ts');
      const { openInstance, withCommandContext } = await import('../instance.ts');
      const instance = await openInstance('apply retention, then start it again');
      try {
        const mode = options.json || options.dryRun ? 'none' : process.stderr.isTTY ? 'bar' : 'lines';
        const result = await withCommandContext(instance, async (ctx) => {
          if (mode === 'none') return sweepRetention(ctx, { dryRun: options.dryRun });
          // A sweep of a long-kept instance runs for minutes: counted first, it shows how far it is.
          const expired = (await sweepRetention(ctx, { dryRun: true })).projects.reduce((n, p) => n + p.expired, 0);
          const bar = progressOf('deleting', mode, ' runs');
          bar.update(0, expired);
          try {
            return await sweepRetention(ctx, { progress: (deleted) => bar.update(deleted, Math.max(expired, deleted)) });
          } finally {
            bar.stop();
          }
        });
        await instance.database.durable();
        const lines = result.projects.map((p) => {
          const rules =
            Object.entries(p.rules)
              .map(([name, value]) => `${name} ${value}`)
              .join(', ') || 'keep everything';
          return `${p.key}: ${p.expired} run${p.expired === 1 ? '' : 's'} ${result.dryRun ? 'would be deleted' : 'deleted'} (${p.source}: ${rules})`;
        });
        const total = `${result.dryRun ? 'would delete' : 'deleted'} ${result.dryRun ? result.projects.reduce((n, p) => n + p.expired, 0) : result.deleted} runs in all`;
        report(options.json, result, [...lines, total].join('\n'));
      } finally {
        await instance.database.close();
      }
    });
}
