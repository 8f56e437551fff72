import type { Command } from 'commander';
import { type AttestClient, v1 } from '../client/index.ts';
import { CliError } from './output.ts';

// How `attest gate` finds the job it judges (TRIAGE-17): by its id, or in a CI step without glue by
// the CI build, the CI link, or as the newest job of a branch, through `GET /testmgmt/jobs`'s
// filters. Several jobs match: the newest. None: the gate cannot answer (exit 2), like any other
// question it cannot put.

export interface JobLookupOptions {
  job?: string;
  build?: string;
  ciUrl?: string;
  latest?: boolean;
  branch?: string;
  project?: string;
}

/** The options that name the job, on the gate command. */
export function jobLookupOptions(command: Command): Command {
  return command
    .option('--job <jobId>', 'the job to judge, by id')
    .option('--build <build>', "the newest job of this CI build (its build label, e.g. GitHub's run number)")
    .option('--ci-url <url>', 'the newest job linking this CI build page (its ciUrl, compared exactly)')
    .option('--latest', 'the newest job of --branch')
    .option('--branch <branch>', 'with --latest: the branch; with --build or --ci-url: only jobs of this branch')
    .option('-p, --project <key>', 'the project (key or id) --build, --ci-url and --latest look in (default: ATTEST_PROJECT)');
}

/** What the options ask for, checked before anything is sent; a CliError says what is wrong. */
function lookupQuery(
  options: JobLookupOptions,
  env: NodeJS.ProcessEnv,
): { projectId: string; build?: string; ciUrl?: string; branch?: string; described: string } {
  if (options.latest === true && options.branch === undefined) throw new CliError('--latest needs --branch <branch>');
  const projectId = options.project ?? env.ATTEST_PROJECT;
  if (!projectId) throw new CliError('--build, --ci-url and --latest look in one project: pass --project or set ATTEST_PROJECT');
  const on = options.branch !== undefined ? ` on branch ${options.branch}` : '';
  return {
    projectId,
    ...(options.build !== undefined ? { build: options.build } : {}),
    ...(options.ciUrl !== undefined ? { ciUrl: options.ciUrl } : {}),
    ...(options.branch !== undefined ? { branch: options.branch } : {}),
    described:
      options.build !== undefined
        ? `of build ${options.build}${on}`
        : options.ciUrl !== undefined
          ? `linking ${options.ciUrl}${on}`
          : on.trim(),
  };
}

/**
 * The id of the job the options name. `--job` is taken as it is (the comparison says when it is
 * unknown); the others ask the project's jobs for the newest match and say on stderr which it is.
 */
export async function findGateJob(client: AttestClient, options: JobLookupOptions, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const ways = [options.job, options.build, options.ciUrl, options.latest].filter((way) => way !== undefined).length;
  if (ways !== 1) throw new CliError('name the job one way: --job <id>, --build <build>, --ci-url <url>, or --latest --branch <branch>');
  if (options.job !== undefined) {
    if (options.branch !== undefined || options.project !== undefined)
      throw new CliError('--job names the job alone: drop --branch and --project');
    return options.job;
  }
  const { described, ...query } = lookupQuery(options, env);
  const page = await client.call(v1.jobs.listJobs, { query: { ...query, limit: 2 } });
  const [newest, older] = page.items;
  if (newest === undefined) throw new CliError(`no job of project ${query.projectId} ${described}`);
  process.stderr.write(
    `attest gate: job ${newest.name} (${newest.id}), ${older !== undefined ? 'the newest of several' : 'the one'} ${described}\n`,
  );
  return newest.id;
}
