import type { Command } from 'commander';
import { report } from '../output.ts';

/** `attest retention [--dry-run]`: applies (or shows) every project's retention, on the server's host. */
export function retentionCommand(program: Command): void {
  program
    .command('retention')
    .description('delete the finished runs each project keeps no longer (its policy, or ATTEST_RETENTION_*); --dry-run only counts them')
    .option('--dry-run', 'count what would be deleted, delete nothing')
    .option('--json', 'print the report as JSON')
    .action(async (options: { dryRun?: boolean; json?: boolean }) => {
      const { sweepRetention } = await import('../../server/services/retention.ts');
      const { openInstance, withCommandContext } = await import('../instance.ts');
      const instance = await openInstance('apply retention, then start it again');
      try {
        const result = await withCommandContext(instance, (ctx) => sweepRetention(ctx, { dryRun: options.dryRun }));
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
