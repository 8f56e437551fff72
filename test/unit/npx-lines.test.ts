import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { addRemoteCommands, attestProgram } from '../../src/cli/program.ts';

// PKG-3: a line that runs Attest through npx names the package it runs. `attest` alone is an
// unrelated package on the npm registry: `npx attest` downloads and runs it in any project without
// ours installed. And what `npx @attest-hq/cli` is given must be a command that package has.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Where command lines for people are written: the READMEs, docs/, and the command's own help texts. */
const SCANNED = ['README.md', 'docs', 'packages/cli/README.md', 'packages/playwright-reporter/README.md', 'src/cli'];

function files(entry: string): string[] {
  const full = path.join(ROOT, entry);
  if (!statSync(full).isDirectory()) return [entry];
  return readdirSync(full).flatMap((name) => files(path.join(entry, name)));
}

const TEXT = SCANNED.flatMap(files)
  .filter((file) => /\.(md|ts)$/.test(file))
  .map((file) => ({ file, lines: readFileSync(path.join(ROOT, file), 'utf8').split('\n') }));

/** `npx [flags] <what> <first argument>` wherever it appears in a line. */
const NPX = /\bnpx\s+(?:--?[\w-]+\s+)*([^\s`'"]+)(?:\s+([^\s`'"]+))?/g;

function npxUses(): { where: string; runs: string; first: string | undefined }[] {
  return TEXT.flatMap(({ file, lines }) =>
    lines.flatMap((line, i) => [...line.matchAll(NPX)].map((m) => ({ where: `${file}:${i + 1}`, runs: m[1] as string, first: m[2] }))),
  );
}

describe('npx lines in the documents and help texts (PKG-3)', () => {
  test('never run a bare `attest`: each names @attest-hq/cli or @attest-hq/attest', () => {
    const uses = npxUses().filter((use) => /attest/.test(use.runs));
    assert.ok(uses.length > 0, 'the scan finds the documented npx lines');
    assert.deepEqual(
      uses.filter((use) => use.runs !== '@attest-hq/cli' && use.runs !== '@attest-hq/attest').map((use) => `${use.where}: npx ${use.runs}`),
      [],
    );
  });

  test('give @attest-hq/cli only commands it has', () => {
    const commands = new Set(addRemoteCommands(attestProgram('')).commands.map((command) => command.name()));
    const unknown = npxUses()
      .filter((use) => use.runs === '@attest-hq/cli' && use.first !== undefined && !use.first.startsWith('-') && !/^(…|<)/.test(use.first))
      .filter((use) => !commands.has(use.first as string))
      .map((use) => `${use.where}: npx @attest-hq/cli ${use.first}`);
    assert.deepEqual(unknown, []);
  });
});
