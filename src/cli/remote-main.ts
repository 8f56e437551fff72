import { addRemoteCommands, attestProgram, runProgram } from './program.ts';

// The `attest` command of `@attest-hq/cli` (packages/cli): the remote commands only, bundled by
// scripts/build-cli.mjs with every dependency into one file, so a CI job installs it in seconds and
// compiles nothing. The maintenance commands open the database and stay with the server package.
runProgram(() =>
  addRemoteCommands(attestProgram('Attest: the commands that work against a running instance (import, gate, export, runs…)')),
);
