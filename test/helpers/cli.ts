import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { builtEntry } from './built.ts';

const run = promisify(execFile);

/** The `attest` command, as built in dist/, as a child process; resolves with its exit code and output. */
export const attest = (args: string[], env: Record<string, string>) =>
  run(process.execPath, [builtEntry('cli/main'), ...args], { env: { ...process.env, ...env } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr, output: stdout + stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      stdout: error.stdout,
      stderr: error.stderr,
      output: error.stdout + error.stderr,
    }),
  );
