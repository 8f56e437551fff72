import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';

// `.env` in the working folder, as .env.example describes: read by the server and the CLI before
// their configuration, never overriding a variable the real environment already sets (even empty).

export class EnvFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvFileError';
  }
}

const ASSIGNMENT = /^(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*=(.*)$/;

/**
 * Refuses what `util.parseEnv` would silently skip: a line that is neither blank, a `#` comment
 * nor `NAME=value`, and a quoted value that never closes. Quoted values may span lines.
 */
function checkSyntax(text: string, file: string): void {
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).trim();
    if (line === '' || line.startsWith('#')) continue;
    const value = ASSIGNMENT.exec(line)?.[1];
    if (value === undefined) {
      throw new EnvFileError(`${file} line ${i + 1}: expected NAME=value (or a # comment), got something else`);
    }
    const quoted = value.trimStart();
    const quote = quoted[0];
    if (quote !== '"' && quote !== "'" && quote !== '`') continue;
    if (quoted.indexOf(quote, 1) !== -1) continue;
    const start = i;
    do i++;
    while (i < lines.length && !(lines[i] as string).includes(quote));
    if (i >= lines.length) throw new EnvFileError(`${file} line ${start + 1}: the value's ${quote} quote is never closed`);
  }
}

/**
 * Loads `<dir>/.env` into `env` for the variables `env` does not already hold; a missing file is
 * fine. Answers the names it set. An unreadable or malformed file is an EnvFileError naming it.
 */
export function loadEnvFile(env: NodeJS.ProcessEnv = process.env, dir = process.cwd()): string[] {
  const file = path.join(dir, '.env');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new EnvFileError(`cannot read ${file}: ${(error as Error).message}`);
  }
  checkSyntax(text, file);
  const set: string[] = [];
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (Object.hasOwn(env, name)) continue;
    env[name] = value;
    set.push(name);
  }
  return set;
}
