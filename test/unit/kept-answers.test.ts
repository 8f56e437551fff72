import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeptAnswers, KeptOwners, textBytes } from '../../src/server/http/kept-answers.ts';

// The ticketed cache behind the device answers (PERF-5) and completed results (PERF-2): a write
// forgets its key, and an answer read across a write (its ticket taken before) is never kept,
// whichever key the write touched.

test('an answer read before a write is refused; one read after it is kept', () => {
  const answers = new KeptAnswers(1024, textBytes);
  const before = answers.ticket();
  answers.forget('other-device');
  answers.store('d1', '{"name":"old"}', before);
  assert.equal(answers.get('d1'), undefined, 'read across a write: not kept');
  answers.store('d1', '{"name":"new"}', answers.ticket());
  assert.equal(answers.get('d1'), '{"name":"new"}');
});

test('forgetting a key drops it and refuses every answer read before', () => {
  const answers = new KeptAnswers(1024, textBytes);
  answers.store('d1', 'a', answers.ticket());
  answers.store('d2', 'b', answers.ticket());
  const ticket = answers.ticket();
  answers.forget('d1');
  assert.equal(answers.get('d1'), undefined);
  assert.equal(answers.get('d2'), 'b', 'other keys stay');
  answers.store('d1', 'stale', ticket);
  assert.equal(answers.get('d1'), undefined);
});

test('forgetAll drops every key and refuses every answer read before', () => {
  const answers = new KeptAnswers(1024, textBytes);
  answers.store('d1', 'a', answers.ticket());
  const ticket = answers.ticket();
  answers.forgetAll();
  assert.deepEqual(answers.size, { entries: 0, bytes: 0 });
  answers.store('d2', 'stale', ticket);
  assert.equal(answers.get('d2'), undefined);
});

test('bounded by the bytes of the text kept; 0 keeps nothing', () => {
  const answers = new KeptAnswers(30, textBytes);
  answers.store('a', 'x'.repeat(10), answers.ticket());
  answers.store('b', 'y'.repeat(10), answers.ticket());
  assert.deepEqual(answers.size, { entries: 1, bytes: 20 });
  assert.equal(answers.get('a'), undefined, 'the oldest made room');
  const none = new KeptAnswers(0, textBytes);
  none.store('a', 'x', none.ticket());
  assert.equal(none.get('a'), undefined);
});

test('owners (PERF-7) are kept by kind and id: a run and a test with the same id are two entries', () => {
  const owners = new KeptOwners();
  const id = '0b5e7c1a-8f43-4d2e-9a6b-3c1d2e4f5a6b';
  owners.store('run', id, 'project-a', owners.ticket());
  assert.equal(owners.get('run', id), 'project-a');
  assert.equal(owners.get('test', id), undefined);
  const before = owners.ticket();
  owners.forget('artifact', 'another');
  owners.store('test', id, 'project-b', before);
  assert.equal(owners.get('test', id), undefined, 'looked up across a deletion: not kept');
  assert.equal(owners.get('run', id), 'project-a', 'forgetting one owner keeps the others');
  owners.forgetAll();
  assert.equal(owners.get('run', id), undefined);
  const none = new KeptOwners(0);
  none.store('run', id, 'project-a', none.ticket());
  assert.equal(none.get('run', id), undefined);
});

test('through keeps what it loaded unless a write overlapped; the switch off finds and keeps nothing', async () => {
  const keeping = { on: true };
  const answers = new KeptAnswers(1024, textBytes, keeping);
  const load = async (value: string) => value;
  assert.equal(await answers.through('d1', load, 'first'), 'first');
  assert.equal(answers.through('d1', load, 'second'), 'first', 'kept: answered at once, not loaded');
  const overlapped = answers.through(
    'd2',
    async (value: string) => {
      answers.forget('other');
      return value;
    },
    'read across a write',
  );
  assert.equal(await overlapped, 'read across a write');
  assert.equal(answers.get('d2'), undefined, 'not kept');
  assert.equal(await answers.through('d3', async () => undefined, undefined), undefined);
  assert.equal(answers.size.entries, 1, 'a "no" is never kept');
  keeping.on = false;
  assert.equal(await answers.through('d1', load, 'fresh'), 'fresh', 'off: read afresh');
  answers.store('d4', 'x', answers.ticket());
  keeping.on = true;
  assert.equal(answers.get('d4'), undefined, 'off: nothing stored');
  assert.equal(answers.get('d1'), 'first', 'what was kept stays while off');
});
