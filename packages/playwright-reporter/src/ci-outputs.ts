import fs from 'node:fs';
import path from 'node:path';

// What the reporter leaves for the next CI step (REP-1): the job's id in a file (and, in GitHub
// Actions, as the step outputs `attest-job-id` and `attest-job-url`), and in GitHub Actions a job
// summary, so `attest gate --job "$(cat .attest-job)"` or `${{ steps.<id>.outputs.attest-job-id }}` needs
// no parsing of the reporter's stderr.

/** The tests of the run, as Playwright counted them (its outcomes: retries folded). */
export interface RunTally {
  passed: number;
  failed: number;
  flaky: number;
  skipped: number;
}

export interface CiOutputs {
  jobId: string;
  jobName: string;
  /** The job's page; the instance's address + `/jobs/{id}`. */
  jobUrl: string;
  tally: RunTally;
  /** Failed tests whose quarantine let the run pass, by full name. */
  quarantined: string[];
  /** Where the id goes: `jobIdFile`, else `.attest-job` beside the Playwright configuration. */
  idFile: string;
}

/** GitHub's `name=value` lines; a value with a line break would need the heredoc form, and ids and URLs have none. */
const outputLine = (name: string, value: string) => `${name}=${value.replace(/[\r\n]/g, '')}\n`;

/** Markdown, with what a table cell cannot hold made harmless. */
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/[\r\n]+/g, ' ');

export function summaryMarkdown(outputs: CiOutputs): string {
  const { tally } = outputs;
  const total = tally.passed + tally.failed + tally.flaky + tally.skipped;
  const lines = [
    `### Attest: [${cell(outputs.jobName)}](${outputs.jobUrl})`,
    '',
    '| Tests | Passed | Failed | Flaky | Skipped |',
    '|---:|---:|---:|---:|---:|',
    `| ${total} | ${tally.passed} | ${tally.failed} | ${tally.flaky} | ${tally.skipped} |`,
    '',
  ];
  if (outputs.quarantined.length > 0) {
    lines.push(
      `Quarantined, not failing the run: ${outputs.quarantined.map((name) => `\`${cell(name).replace(/`/g, "'")}\``).join(', ')}`,
      '',
    );
  }
  lines.push(`Job id \`${outputs.jobId}\`: \`npx @attest-hq/cli gate --job ${outputs.jobId}\` compares it with its base.`, '');
  return lines.join('\n');
}

/** Writes what there is to write; answers the problems, never throws (a CI file it cannot write fails no test). */
export function writeCiOutputs(outputs: CiOutputs, env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  const attempt = (what: string, write: () => void) => {
    try {
      write();
    } catch (error) {
      problems.push(`cannot write ${what}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  attempt(outputs.idFile, () => {
    fs.mkdirSync(path.dirname(outputs.idFile), { recursive: true });
    fs.writeFileSync(outputs.idFile, `${outputs.jobId}\n`);
  });
  const githubOutput = env.GITHUB_OUTPUT;
  if (githubOutput) {
    attempt(`GITHUB_OUTPUT (${githubOutput})`, () =>
      fs.appendFileSync(githubOutput, outputLine('attest-job-id', outputs.jobId) + outputLine('attest-job-url', outputs.jobUrl)),
    );
  }
  const githubSummary = env.GITHUB_STEP_SUMMARY;
  if (githubSummary) attempt(`GITHUB_STEP_SUMMARY (${githubSummary})`, () => fs.appendFileSync(githubSummary, summaryMarkdown(outputs)));
  return problems;
}
