import { Command } from 'commander';
import { EnvFileError, loadEnvFile } from '../server/env-file.ts';
import { APP_VERSION } from '../server/version.ts';
import { adminKeyCommand } from './commands/admin-key.ts';
import { backupCommand } from './commands/backup.ts';
import { exportCommand } from './commands/export.ts';
import { gateCommand } from './commands/gate.ts';
import { gcCommand } from './commands/gc.ts';
import { importCommand } from './commands/import.ts';
import { migrateCommand } from './commands/migrate.ts';
import { remoteCommands } from './commands/remote-commands.ts';
import { restoreCommand } from './commands/restore.ts';
import { retentionCommand } from './commands/retention.ts';
import { verifyCommand } from './commands/verify.ts';

/** The `attest` command line: one command per file under ./commands; failures become exit codes here. */
export function buildProgram(): Command {
  const program = new Command('attest')
    .description('Attest: self-hosted testing platform')
    .version(APP_VERSION, '-V, --version', 'print the version')
    .showHelpAfterError();
  program
    .command('serve')
    .description('start the server (configured by environment variables, see .env.example)')
    .action(async () => {
      await import('../server/main.ts');
    });
  migrateCommand(program);
  verifyCommand(program);
  gcCommand(program);
  retentionCommand(program);
  backupCommand(program);
  restoreCommand(program);
  adminKeyCommand(program);
  remoteCommands(program);
  exportCommand(program);
  importCommand(program);
  gateCommand(program);
  return program;
}

// `.env` in the working folder first, like the server: every command reads the same configuration.
try {
  loadEnvFile();
} catch (error) {
  if (!(error instanceof EnvFileError)) throw error;
  process.stderr.write(`attest: ${error.message}\n`);
  process.exit(2);
}

buildProgram()
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    process.stderr.write(`attest: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
