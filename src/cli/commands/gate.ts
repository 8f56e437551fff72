import type { Command } from 'commander';
import type { Static } from 'typebox';
import { v1 } from '../../client/index.ts';
import { findGateJob, type JobLookupOptions, jobLookupOptions } from '../gate-job.ts';
import { CliError } from '../output.ts';
import { explain, type RemoteOptions, remoteClient, remoteOptions } from '../remote.ts';

// `attest gate` (TRIAGE-7): a job compared with its base, as a CI exit code. 0: the job may pass;
// 1: a test or new error group counts against it (the server's `counted`, see docs/triage.md); 2: no answer
// (unknown job, no access, instance unreachable, a job not yet completed), so a pipeline never
// mistakes "could not ask" for either verdict.

type Comparison = Static<typeof v1.comparison.Comparison>;
type Compared = Static<typeof v1.comparison.ComparedTest>;

interface GateOptions extends RemoteOptions, JobLookupOptions {
  base?: string;
  baseBranch?: string;
  allowFlaky?: boolean;
  json?: boolean;
}

export interface GateVerdict {
  pass: boolean;
  reasons: string[];
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * Whether the comparison lets the job through, and why not. The server decides what counts
 * (`counted` and `reason` on each test and group, asked with `allowFlaky`); this only sums it up.
 */
export function gateVerdict(comparison: Comparison): GateVerdict {
  const tests = [...comparison.newFailures, ...comparison.flaky].filter((test) => test.counted);
  const failures = tests.filter((test) => test.reason === 'new-failure').length;
  const retried = tests.filter((test) => test.reason === 'passed-on-retry').length;
  const groups = comparison.newErrorGroups.filter((group) => group.counted).length;
  const reasons: string[] = [];
  if (failures > 0) reasons.push(plural(failures, 'new failure'));
  if (groups > 0) reasons.push(plural(groups, 'new error group'));
  if (retried > 0) reasons.push(`${plural(retried, 'flaky test')} (--allow-flaky lets them through)`);
  return { pass: comparison.pass, reasons };
}

/** Why a test counts against the job or not, as a CI log says it. */
const WHY: Record<Compared['reason'], string> = {
  'new-failure': 'counted: a new failure',
  'flaky-health': 'not counted: its health was flaky before this job (--allow-flaky)',
  'passed-on-retry': 'passed on a retry',
  'still-failing': 'not counted: failing in the base too',
  broken: 'not counted: its health was broken before this job, still failing',
  quarantined: 'not counted: quarantined',
  fixed: 'not counted: fixed',
  passed: 'not counted: passed',
  skipped: 'not counted: skipped',
  unfinished: 'not counted: unfinished',
};

const why = (test: Compared) =>
  test.reason !== 'passed-on-retry'
    ? WHY[test.reason]
    : test.counted
      ? 'counted: passed on a retry (--allow-flaky lets it through)'
      : 'not counted: passed on a retry (--allow-flaky)';

const line = (test: Compared) => {
  const before = test.baseVerdict === null ? 'absent' : test.baseVerdict;
  const attempts = test.attempts > 1 ? `, ${test.attempts} attempts` : '';
  const health = test.health === 'stable' ? '' : `, health ${test.health}`;
  return `    ${test.name}  (${before} → ${test.verdict ?? 'unfinished'}${attempts}${health}) ${why(test)}`;
};

/** The comparison as a person reads it in a CI log. */
export function gateReport(comparison: Comparison, verdict: GateVerdict): string {
  const { job, base, counts } = comparison;
  const out = [
    `job ${job.name} (${job.id})`,
    base ? `  compared with ${base.name} (${base.id})` : '  no base job found: every failure counts as new',
    `  ${counts.tests} tests: ${counts.newFailures} new failures, ${counts.fixed} fixed, ${counts.stillFailing} still failing, ` +
      `${counts.flaky} flaky, ${counts.quarantined} quarantined, ${counts.newErrorGroups} new error groups` +
      (comparison.allowFlaky ? ' (--allow-flaky)' : ''),
  ];
  const section = (title: string, tests: Compared[]) => {
    if (tests.length > 0) out.push(`  ${title}:`, ...tests.map(line));
  };
  section('new failures', comparison.newFailures);
  section('flaky', comparison.flaky);
  section('quarantined (not counted)', comparison.quarantined);
  section('still failing', comparison.stillFailing);
  section('fixed', comparison.fixed);
  if (comparison.newErrorGroups.length > 0) {
    out.push('  new error groups:');
    for (const group of comparison.newErrorGroups) {
      const counted = group.counted ? 'counted' : 'not counted: only of tests let through (flaky or broken)';
      out.push(
        `    [${group.category}] ${group.title.split('\n')[0]}  (${plural(group.tests, 'test')}${group.flakyOnly ? ', flaky only' : ''}) ${counted}`,
      );
    }
  }
  out.push(verdict.pass ? 'gate: passed' : `gate: failed: ${verdict.reasons.join(', ')}`);
  return out.join('\n');
}

export function gateCommand(program: Command): void {
  jobLookupOptions(
    remoteOptions(
      program
        .command('gate')
        .description(
          'compare a job with its base and exit 1 on new failures or new error groups (for CI pipelines); 2 when it cannot tell',
        ),
    ),
  )
    .option('--base <jobId>', 'the job to compare against')
    .option('--base-branch <branch>', 'compare against the latest completed job on this branch')
    .option(
      '--allow-flaky',
      'let flakiness through: tests that passed on a retry, and failures of tests whose health was flaky before the job',
    )
    .option('--json', 'print the comparison and the verdict as JSON')
    .action(async (options: GateOptions) => {
      let comparison: Comparison;
      try {
        if (options.base !== undefined && options.baseBranch !== undefined) throw new CliError('give --base or --base-branch, not both');
        const client = remoteClient(options);
        const jobId = await findGateJob(client, options);
        comparison = await client.call(v1.comparison.compareJobs, {
          params: { jobId },
          query: {
            ...(options.base !== undefined ? { base: options.base } : {}),
            ...(options.baseBranch !== undefined ? { baseBranch: options.baseBranch } : {}),
            ...(options.allowFlaky === true ? { allowFlaky: true } : {}),
          },
        });
      } catch (error) {
        let message = error instanceof Error ? error.message : String(error);
        try {
          explain(error);
        } catch (explained) {
          message = explained instanceof Error ? explained.message : String(explained);
        }
        process.stderr.write(`attest gate: cannot answer: ${message}\n`);
        process.exitCode = 2;
        return;
      }
      // A job still under way has tests without a verdict yet: judging it now could pass what then fails.
      if (comparison.job.status !== 'completed') {
        process.stderr.write(
          `attest gate: cannot answer: job ${comparison.job.id} is ${comparison.job.status}; gate it once it has completed\n`,
        );
        process.exitCode = 2;
        return;
      }
      const verdict = gateVerdict(comparison);
      process.stdout.write(options.json ? `${JSON.stringify({ ...verdict, comparison })}\n` : `${gateReport(comparison, verdict)}\n`);
      process.exitCode = verdict.pass ? 0 : 1;
    });
}
