import type { Command } from 'commander';
import { loadConfig } from '../../server/config.ts';
import { createDatabase } from '../../server/db/database.ts';

/** `attest migrate`: applies pending migrations to the configured database and exits (non-zero on failure). */
export function migrateCommand(program: Command): void {
  program
    .command('migrate')
    .description('apply pending database migrations (the server also does this at start-up)')
    .action(async () => {
      const config = loadConfig();
      const database = await createDatabase(config);
      await database.close();
      process.stdout.write(`database is up to date (${database.dialect})\n`);
    });
}
