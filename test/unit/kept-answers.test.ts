import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeptAnswers, writingKept } from '../../src/server/http/kept-answers.ts';

// The device answers' cache (PERF-5): a write forgets its key, and an answer read across a write
// (its ticket taken before) is never kept, whichever key the write touched.

test('an answer read before a write is refused; one read after it is kept', () => {
  const answers = new KeptAnswers(1024);
  const before = answers.ticket();
  answers.forget('other-device');
  answers.store('d1', '{"name":"old"}', before);
  assert.equal(answers.get('d1'), undefined, 'read across a write: not kept');
  answers.store('d1', '{"name":"new"}', answers.ticket());
  assert.equal(answers.get('d1'), '{"name":"new"}');
});

test('writingKept forgets its key after the write, whether it committed or failed', async () => {
  const answers = new KeptAnswers(1024);
  answers.store('d1', 'a', answers.ticket());
  const result = await writingKept(answers, 'd1', async () => {
    assert.equal(answers.get('d1'), 'a', 'forgotten only once the write is done');
    return 7;
  });
  assert.equal(result, 7);
  assert.equal(answers.get('d1'), undefined);
  answers.store('d1', 'b', answers.ticket());
  const ticket = answers.ticket();
  await assert.rejects(
    writingKept(answers, 'd1', async () => {
      throw new Error('rolled back');
    }),
    /rolled back/,
  );
  assert.equal(answers.get('d1'), undefined);
  answers.store('d1', 'stale', ticket);
  assert.equal(answers.get('d1'), undefined);
});

test('bounded by the bytes of the text kept; 0 keeps nothing', () => {
  const answers = new KeptAnswers(30);
  answers.store('a', 'x'.repeat(10), answers.ticket());
  answers.store('b', 'y'.repeat(10), answers.ticket());
  assert.deepEqual(answers.size, { entries: 1, bytes: 20 });
  assert.equal(answers.get('a'), undefined, 'the oldest made room');
  const none = new KeptAnswers(0);
  none.store('a', 'x', none.ticket());
  assert.equal(none.get('a'), undefined);
});
