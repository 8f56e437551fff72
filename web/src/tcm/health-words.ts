import type { TestDefinition } from './tests-api.ts';

// A test's health in words (TRIAGE-11): the state, the monitor that fired and what it saw.

type Health = TestDefinition['health'];

const on = (branch: string | null) => (branch === null ? 'on every branch' : `on ${branch}`);

export function healthInWords(health: Health): string {
  const { evidence } = health;
  if (health.state === 'broken' && evidence) return `broken: failed the last ${evidence.events} jobs in a row ${on(health.branch)}`;
  if (health.monitor === 'retry' && evidence) {
    return `flaky: failed then passed on retry, or both on one commit, in ${evidence.events} of the last ${evidence.samples} jobs ${on(health.branch)}`;
  }
  if (health.monitor === 'rate' && evidence) {
    const rate = Math.round((evidence.events / Math.max(1, evidence.samples)) * 100);
    return `flaky: failed ${evidence.events} of the last ${evidence.samples} jobs ${on(health.branch)} (${rate} %)`;
  }
  if (health.runsConsidered === 0) return `stable: no completed run ${on(health.branch)} yet`;
  return `${health.state}: no monitor fired over the last ${health.runsConsidered} jobs ${on(health.branch)}`;
}
