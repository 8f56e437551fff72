import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

// keepTickObjectShape (src/server/tick-shape.ts): full garbage collections while Node's tick queue
// is empty must not leave process.nextTick's object literal megamorphic. Each case runs in a Node
// process of its own (a state of V8's inline caches is per process), with V8's debug print of
// nextTick's feedback: the states of the literal's property definitions (four in Node 20). The child runs with
// `--no-opt`, since V8 prints a function's feedback only while it has no optimised code; the
// interpreter collects the same feedback the optimiser later compiles from.

const MODULE = fileURLToPath(new URL('../../src/server/tick-shape.ts', import.meta.url));

const script = (keep: boolean) => `
  const { keepTickObjectShape, tickObjectKept } = await import(${JSON.stringify(MODULE)});
  if (${keep}) keepTickObjectShape();
  const noop = () => {};
  const drive = async () => {
    for (let k = 0; k < 5; k++) {
      for (let i = 0; i < 20000; i++) process.nextTick(noop);
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  // Ticks, then full collections while the queue is empty, as between requests of an idle server.
  for (let round = 0; round < 6; round++) {
    await drive();
    await new Promise((resolve) => setTimeout(resolve, 20));
    globalThis.gc();
    globalThis.gc();
  }
  await drive();
  console.log('kept=' + tickObjectKept());
  new Function('%DebugPrint(process.nextTick)')();
`;

/** The IC states of nextTick's DefineKeyedOwnPropertyInLiteral slots, and whether a tick object was held. */
async function literalStates(keep: boolean): Promise<{ states: string[]; kept: boolean }> {
  // Standard output to a file: V8 prints with C stdio, which drops what a full non-blocking pipe
  // refuses, and Node makes a pipe non-blocking.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'attest-tick-shape-'));
  const out = fs.openSync(path.join(dir, 'stdout'), 'w');
  try {
    const child = spawn(
      process.execPath,
      ['--allow-natives-syntax', '--expose-gc', '--no-opt', '--import', 'tsx', '--input-type=module', '-e', script(keep)],
      { stdio: ['ignore', out, 'inherit'] },
    );
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
    const stdout = fs.readFileSync(path.join(dir, 'stdout'), 'utf8');
    const states = [...stdout.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((match) => match[1] as string);
    return { states, kept: stdout.includes('kept=true') };
  } finally {
    fs.closeSync(out);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('process.nextTick through idle garbage collections', () => {
  test('with one tick object kept, the literal stays monomorphic', async (t) => {
    const without = await literalStates(false);
    assert.equal(without.kept, false);
    assert.ok(without.states.length > 0, "V8's print of nextTick shows the literal's property definitions");
    // The check can tell: without the kept object this runtime ends megamorphic. A runtime that no
    // longer does has nothing for the kept object to prevent.
    if (!without.states.includes('MEGAMORPHIC')) {
      t.skip(`this Node.js (${process.version}) keeps nextTick monomorphic on its own`);
      return;
    }
    const kept = await literalStates(true);
    assert.equal(kept.kept, true, 'a TickObject was caught');
    assert.deepEqual(
      kept.states,
      without.states.map(() => 'MONOMORPHIC'),
    );
  });
});
