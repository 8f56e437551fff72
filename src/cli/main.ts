import type { Command } from 'commander';
import { adminKeyCommand } from './commands/admin-key.ts';
import { backupCommand } from './commands/backup.ts';
import { gcCommand } from './commands/gc.ts';
import { migrateCommand } from './commands/migrate.ts';
import { restoreCommand } from './commands/restore.ts';
import { retentionCommand } from './commands/retention.ts';
import { verifyCommand } from './commands/verify.ts';
import { addRemoteCommands, attestProgram, runProgram } from './program.ts';

/** The server package's `attest` command line: the server, the maintenance commands, and every remote command. */
export function buildProgram(): Command {
  const program = attestProgram('Attest: self-hosted testing platform');
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
  return addRemoteCommands(program);
}

runProgram(buildProgram);
