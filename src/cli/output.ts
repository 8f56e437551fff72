import { InvalidArgumentError } from 'commander';

/** A refusal the command explains itself: `runProgram` (program.ts) prints the message alone (no stack) and exits 1. */
export class CliError extends Error {
  override name = 'CliError';
}

/** An option parser for a whole number of at least `min`; commander names the option in its message. */
export function wholeNumber(min: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value.trim()) || Number(value) < min) {
      throw new InvalidArgumentError(`expected a whole number, ${min} or more (for example 60)`);
    }
    return Number(value);
  };
}

/** Prints a command's report: one JSON line with --json, else the human text. */
export function report(json: boolean | undefined, value: unknown, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
}

export const MiB = 1024 * 1024;
