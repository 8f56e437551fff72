import { Command } from 'commander';
import { EnvFileError, loadEnvFile } from '../server/env-file.ts';
import { APP_VERSION } from '../server/version.ts';
import { exportCommand } from './commands/export.ts';
import { gateCommand } from './commands/gate.ts';
import { importCommand } from './commands/import.ts';
import { remoteCommands } from './commands/remote-commands.ts';

/** An `attest` program with its version (the version of the package it runs from) and nothing else yet. */
export function attestProgram(description: string): Command {
  return new Command('attest').description(description).version(APP_VERSION, '-V, --version', 'print the version').showHelpAfterError();
}

/**
 * The commands that talk to a running instance over HTTP, through the client alone: the whole of
 * `@attest-hq/cli` (remote-main.ts), and the same commands in the server package's `attest`. Nothing
 * they import opens a database or loads a native module (the CLI package's build refuses it).
 */
export function addRemoteCommands(program: Command): Command {
  remoteCommands(program);
  exportCommand(program);
  importCommand(program);
  gateCommand(program);
  return program;
}

/**
 * Reads `.env` in the working folder first (as the server does: every command reads the same
 * configuration), then builds and runs the program; failures become exit codes here.
 */
export function runProgram(build: () => Command): void {
  try {
    loadEnvFile();
  } catch (error) {
    if (!(error instanceof EnvFileError)) throw error;
    process.stderr.write(`attest: ${error.message}\n`);
    process.exit(2);
  }
  build()
    .parseAsync(process.argv)
    .catch((error: unknown) => {
      process.stderr.write(`attest: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    });
}
