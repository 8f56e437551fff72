import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ByteLru } from '../../src/server/http/byte-lru.ts';

// The byte-bounded LRU behind the results and image caches (PERF-2, PERF-3).

test('the least recently used entries leave first, and the bound holds as values grow', () => {
  const lru = new ByteLru<{ bytes: number }>(10, (value) => value.bytes);
  const a = { bytes: 4 };
  const b = { bytes: 4 };
  lru.set('a', a);
  lru.set('b', b);
  assert.equal(lru.get('a'), a, 'a is now the most recently used');
  lru.set('c', { bytes: 4 });
  assert.equal(lru.has('b'), false, 'b was the least recently used');
  assert.deepEqual(lru.size, { entries: 2, bytes: 8 });
  a.bytes += 3;
  lru.grew('a', a, 3);
  assert.equal(lru.has('a'), false, 'growing is not a use: a was now the oldest');
  assert.deepEqual(lru.size, { entries: 1, bytes: 4 });
  lru.set('huge', { bytes: 11 });
  assert.equal(lru.has('huge'), false, 'a value over the capacity is never kept');
  lru.clear();
  assert.deepEqual(lru.size, { entries: 0, bytes: 0 });
});
