import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { isBuiltin } from 'node:module';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { tempDir } from '../helpers/data-folders.ts';

// The bundle of @attest-hq/cli (scripts/build-cli.mjs, PKG-1): the remote commands with their
// dependencies in one file that imports nothing but Node's built-ins, and a build that refuses
// server code, the maintenance commands and native addons. The installed package is proven in
// test/process/packages.test.ts.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Runs `expression` (with `m`, the build script's module) in a plain Node process, as `npm run build` does, and answers its JSON. */
async function inBuildScript<T>(expression: string): Promise<T> {
  const script = `const m = await import('./scripts/build-cli.mjs'); process.stdout.write(JSON.stringify(await (${expression})));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
  return JSON.parse(stdout) as T;
}

describe('the @attest-hq/cli bundle', () => {
  test('imports only Node built-ins, and holds the remote commands without the server or the maintenance commands', async () => {
    // The reporter's dist/ is the root build's (npm run build); this build does not touch it.
    const outdir = tempDir('attest-cli-bundle-');
    const built = await inBuildScript<{ inputs: string[]; packages: string[]; imports: string[] }>(
      `m.buildCli({ outdir: ${JSON.stringify(outdir)}, reporterBuilt: true })`,
    );
    assert.deepEqual(
      built.imports.filter((specifier) => !isBuiltin(specifier)),
      [],
    );
    for (const command of ['import', 'gate', 'export', 'remote-commands'])
      assert.ok(built.inputs.includes(`src/cli/commands/${command}.ts`), command);
    assert.deepEqual(built.inputs.filter((input) => input.startsWith('src/server/')).sort(), [
      'src/server/env-file.ts',
      'src/server/version.ts',
    ]);
    assert.ok(built.packages.includes('node_modules/commander'));
  });

  test('the build refuses server code, a maintenance command and a native addon', async () => {
    const problems = await inBuildScript<string[]>(
      `m.forbiddenInputs(['src/cli/commands/gate.ts', 'src/server/version.ts', 'src/server/db/database.ts', 'src/cli/commands/verify.ts', 'src/cli/instance.ts', 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'])`,
    );
    assert.deepEqual(problems, [
      'src/server/db/database.ts: server code',
      'src/cli/commands/verify.ts: a maintenance command (it opens the database)',
      'src/cli/instance.ts: a maintenance command (it opens the database)',
      'node_modules/better-sqlite3/build/Release/better_sqlite3.node: a native addon',
    ]);
  });
});
