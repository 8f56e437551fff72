import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RequestBudget } from '../../src/server/security/request-budget.ts';

// The per-key request budget behind ATTEST_RATE_LIMIT_PER_MINUTE (docs/configuration.md).

/** One request of `subject` at `nowMs`, and what its window then says. */
function spend(budget: RequestBudget, subject: string, nowMs: number) {
  const window = budget.spend(subject, nowMs);
  return { remaining: budget.remaining(window), resetSeconds: budget.resetSeconds(window, nowMs), exceeded: budget.exceeded(window) };
}

test('a window opens with the first request: max pass, the next is over, and a new window starts afresh', () => {
  const budget = new RequestBudget(3, 60_000);
  const t0 = 1_000_000;
  assert.deepEqual(spend(budget, 'key:a', t0), { remaining: 2, resetSeconds: 60, exceeded: false });
  assert.deepEqual(spend(budget, 'key:a', t0 + 10_500), { remaining: 1, resetSeconds: 50, exceeded: false });
  assert.deepEqual(spend(budget, 'key:a', t0 + 20_000), { remaining: 0, resetSeconds: 40, exceeded: false });
  assert.deepEqual(spend(budget, 'key:a', t0 + 59_999), { remaining: 0, resetSeconds: 1, exceeded: true });
  assert.deepEqual(spend(budget, 'key:b', t0 + 59_999), { remaining: 2, resetSeconds: 60, exceeded: false }, 'another key has its own');
  assert.deepEqual(spend(budget, 'key:a', t0 + 60_000), { remaining: 2, resetSeconds: 60, exceeded: false });
});

test('at most `capacity` subjects are remembered; the oldest window goes first', () => {
  const budget = new RequestBudget(1, 60_000, 2);
  spend(budget, 'a', 0);
  spend(budget, 'b', 1);
  assert.equal(spend(budget, 'a', 2).exceeded, true);
  spend(budget, 'c', 3);
  assert.equal(budget.size, 2);
  assert.equal(spend(budget, 'a', 4).exceeded, false, "a's window was the oldest: forgotten");
  assert.equal(spend(budget, 'c', 5).exceeded, true, 'c is still remembered');
});
