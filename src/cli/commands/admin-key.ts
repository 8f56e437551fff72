import type { Command } from 'commander';
import { report } from '../output.ts';

/** `attest admin-key --email <e-mail>`: recovery when no admin key is left, run on the server's host. */
export function adminKeyCommand(program: Command): void {
  program
    .command('admin-key')
    .description('mint a new admin key offline (recovery): creates the admin, or makes the user an admin, and prints the key once')
    .requiredOption('--email <e-mail>', 'the admin to mint a key for (created as an admin if missing)')
    .option('--format <format>', 'standard (atk_…, sent alone) or legacy (UUID, sent with service.user)', 'standard')
    .option('--json', 'print the key and its expiry as JSON')
    .action(async (options: { email: string; format: string; json?: boolean }) => {
      const { adminKeyBanner, mintAdminKey } = await import('../../server/services/access/bootstrap.ts');
      const { openInstance, withCommandContext } = await import('../instance.ts');
      if (options.format !== 'standard' && options.format !== 'legacy') {
        program.error(`error: option '--format <format>' must be standard or legacy (got '${options.format}')`);
      }
      if (!/^[^\s@]+@[^\s@]+$/.test(options.email)) {
        program.error(`error: option '--email <e-mail>' must be an e-mail address such as admin@example.com (got '${options.email}')`);
      }
      const instance = await openInstance('mint the key, then start it again');
      try {
        const minted = await withCommandContext(instance, (ctx) =>
          mintAdminKey(ctx, options.email, options.format as 'standard' | 'legacy'),
        );
        const heading = minted.created
          ? `created the admin ${minted.email} with a new key`
          : `${minted.promoted ? 'made ' : ''}${minted.email}${minted.promoted ? ' an admin, with' : ':'} a new admin key`;
        // The key is reported only once it is on disk (DUR-14).
        await instance.database.durable();
        report(options.json, minted, adminKeyBanner(minted, heading));
      } finally {
        await instance.database.close();
      }
    });
}
