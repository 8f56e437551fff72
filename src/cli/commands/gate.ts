import type { Command } from 'commander';
import type { Static } from 'typebox';
import { v1 } from '../../client/index.ts';
import { CliError } from '../output.ts';
import { explain, type RemoteOptions, remoteClient, remoteOptions } from '../remote.ts';

// `attest gate` (TRIAGE-7): a job compared with its base, as a CI exit code. 0: the job may pass;
// 1: it brought new failures or new error groups (or flaky tests, unless allowed); 2: no answer
// (unknown job, no access, instance unreachable), so a pipeline never mistakes "could not ask"
// for either verdict.

type Comparison = Static<typeof v1.comparison.Comparison>;
type Compared = Static<typeof v1.comparison.ComparedTest>;

interface GateOptions extends RemoteOptions {
  job: string;
  base?: string;
  baseBranch?: string;
  allowFlaky?: boolean;
  json?: boolean;
}

export interface GateVerdict {
  pass: boolean;
  reasons: string[];
}

/** Whether the comparison lets the job through, and why not. Quarantined tests never count against it. */
export function gateVerdict(comparison: Comparison, allowFlaky: boolean): GateVerdict {
  const reasons: string[] = [];
  const { counts } = comparison;
  if (counts.newFailures > 0) reasons.push(`${counts.newFailures} new failure${counts.newFailures === 1 ? '' : 's'}`);
  const groups = comparison.newErrorGroups.filter((group) => !(allowFlaky && group.flakyOnly));
  if (groups.length > 0) reasons.push(`${groups.length} new error group${groups.length === 1 ? '' : 's'}`);
  if (!allowFlaky && counts.flaky > 0)
    reasons.push(`${counts.flaky} flaky test${counts.flaky === 1 ? '' : 's'} (--allow-flaky lets them through)`);
  return { pass: reasons.length === 0, reasons };
}

const line = (test: Compared) => {
  const before = test.baseVerdict === null ? 'absent' : test.baseVerdict;
  const attempts = test.attempts > 1 ? `, ${test.attempts} attempts` : '';
  return `    ${test.name}  (${before} → ${test.verdict ?? 'unfinished'}${attempts})`;
};

/** The comparison as a person reads it in a CI log. */
export function gateReport(comparison: Comparison, verdict: GateVerdict): string {
  const { job, base, counts } = comparison;
  const out = [
    `job ${job.name} (${job.id})`,
    base ? `  compared with ${base.name} (${base.id})` : '  no base job found: every failure counts as new',
    `  ${counts.tests} tests: ${counts.newFailures} new failures, ${counts.fixed} fixed, ${counts.stillFailing} still failing, ` +
      `${counts.flaky} flaky, ${counts.quarantined} quarantined, ${counts.newErrorGroups} new error groups`,
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
      out.push(
        `    [${group.category}] ${group.title.split('\n')[0]}  (${group.tests} test${group.tests === 1 ? '' : 's'}${group.flakyOnly ? ', flaky only' : ''})`,
      );
    }
  }
  out.push(verdict.pass ? 'gate: passed' : `gate: failed: ${verdict.reasons.join(', ')}`);
  return out.join('\n');
}

export function gateCommand(program: Command): void {
  remoteOptions(
    program
      .command('gate')
      .description('compare a job with its base and exit 1 on new failures or new error groups (for CI pipelines); 2 when it cannot tell'),
  )
    .requiredOption('--job <jobId>', 'the job to judge')
    .option('--base <jobId>', 'the job to compare against')
    .option('--base-branch <branch>', 'compare against the latest completed job on this branch')
    .option('--allow-flaky', 'let tests that failed and then passed on a retry through')
    .option('--json', 'print the comparison and the verdict as JSON')
    .action(async (options: GateOptions) => {
      let comparison: Comparison;
      try {
        if (options.base !== undefined && options.baseBranch !== undefined) throw new CliError('give --base or --base-branch, not both');
        const client = remoteClient(options);
        comparison = await client.call(v1.comparison.compareJobs, {
          params: { jobId: options.job },
          query: {
            ...(options.base !== undefined ? { base: options.base } : {}),
            ...(options.baseBranch !== undefined ? { baseBranch: options.baseBranch } : {}),
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
      const verdict = gateVerdict(comparison, options.allowFlaky === true);
      process.stdout.write(options.json ? `${JSON.stringify({ ...verdict, comparison })}\n` : `${gateReport(comparison, verdict)}\n`);
      process.exitCode = verdict.pass ? 0 : 1;
    });
}
