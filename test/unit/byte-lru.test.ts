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

test('a hit moves an entry only once it is older than half the entries', () => {
  const lru = new ByteLru<string>(4, () => 1);
  for (const key of ['a', 'b', 'c', 'd']) lru.set(key, key);
  assert.equal(lru.get('c'), 'c', 'c is among the newer half: it stays where it is');
  assert.equal(lru.get('b'), 'b', 'b is older than half the entries: it becomes the newest');
  lru.set('e', 'e');
  assert.equal(lru.has('a'), false, 'a, never read, leaves first');
  lru.set('f', 'f');
  assert.equal(lru.has('c'), false, 'c was not moved, so it leaves before d: least recently used to within half the entries');
  assert.deepEqual(
    ['b', 'd', 'e', 'f'].map((key) => lru.has(key)),
    [true, true, true, true],
  );
});
