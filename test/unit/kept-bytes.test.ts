import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KeptBytes } from '../../src/server/media/kept-bytes.ts';

async function drain(source: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const seen: Uint8Array[] = [];
  for await (const chunk of source) seen.push(chunk);
  return Buffer.concat(seen);
}

async function* parts(...texts: string[]): AsyncIterable<Uint8Array> {
  for (const text of texts) yield Buffer.from(text);
}

describe('KeptBytes (the bytes an upload keeps for its decode check)', () => {
  test('passes every chunk on and keeps the whole stream while it fits', async () => {
    const kept = new KeptBytes(10);
    assert.equal((await drain(kept.keep(parts('abc', 'defg', 'hij')))).toString(), 'abcdefghij');
    assert.equal(kept.bytes()?.toString(), 'abcdefghij');
  });

  test('keeps nothing once the stream passes the bound, and still passes every chunk on', async () => {
    const kept = new KeptBytes(10);
    assert.equal((await drain(kept.keep(parts('abcdef', 'ghijk', 'l')))).toString(), 'abcdefghijkl');
    assert.equal(kept.bytes(), undefined);
  });
});
