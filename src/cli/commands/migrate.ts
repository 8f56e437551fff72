import type { Command } from 'commander';
import { CliError, report } from '../output.ts';

/** `attest migrate`: applies pending migrations to the configured database and exits (non-zero on failure). */
export function migrateCommand(program: Command): void {
  program
    .command('migrate')
    .description('apply pending database migrations (the server also does this at start-up)')
    .option('--json', 'print the report as JSON')
    .action(async (options: { json?: boolean }) => {
      const { loadConfig } = await import('../../server/config.ts');
      const { createDatabase, DataFolderBusyError } = await import('../../server/db/database.ts');
      const config = loadConfig();
      const database = await createDatabase(config).catch((error: unknown) => {
        if (error instanceof DataFolderBusyError) {
          throw new CliError(`${error.message} The running server has already migrated it: start-up applies every migration.`);
        }
        throw error;
      });
      await database.close();
      report(options.json, { upToDate: true, dialect: database.dialect }, `database is up to date (${database.dialect})`);
    });
}
