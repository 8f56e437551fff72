/**
 * What a CI system says about the build a test run belongs to, read from the variables it sets:
 * GitHub Actions, GitLab CI, Jenkins, CircleCI, Azure Pipelines and Buildkite. The live reporter
 * and `attest import` (src/cli/commands/import.ts, which imports this file) fill a job's `branch`,
 * `commit`, `build`, `ciUrl` and, in a pull request's build, `targetBranch` from it unless an option or an `ATTEST_*` variable says otherwise.
 * Dependency-free: it ships inside the reporter package.
 */

export interface CiInfo {
  /** Which system it is, for messages: `GitHub Actions`, `GitLab CI`, … */
  system: string;
  branch?: string;
  commit?: string;
  build?: string;
  /** The build's page: an absolute http(s) URL. */
  ciUrl?: string;
  /** In a pull (merge) request's build, the branch it merges into: the job's comparison base (TRIAGE-16). */
  targetBranch?: string;
}

type Env = Readonly<Record<string, string | undefined>>;

/** The variable each system is recognised by (documented by each vendor as always set in its jobs). */
export const CI_MARKERS = ['GITHUB_ACTIONS', 'GITLAB_CI', 'JENKINS_URL', 'CIRCLECI', 'TF_BUILD', 'BUILDKITE'] as const;

const value = (env: Env, name: string) => {
  const text = env[name]?.trim();
  return text ? text : undefined;
};
const first = (env: Env, ...names: string[]) => names.map((name) => value(env, name)).find((v) => v !== undefined);
/** `refs/heads/main` and `origin/main` as the branch name `main`. */
const branchName = (ref: string | undefined) => ref?.replace(/^refs\/heads\//, '').replace(/^origin\//, '');
/** Only a printable-ASCII absolute http(s) URL is a link Attest takes; anything else is left out. */
const link = (url: string | undefined) => (url && /^https?:\/\/[!-~]+$/i.test(url) && url.length <= 2000 ? url : undefined);

function compact(info: CiInfo): CiInfo {
  const out: CiInfo = { system: info.system };
  if (info.branch) out.branch = info.branch;
  if (info.commit) out.commit = info.commit;
  if (info.build) out.build = info.build;
  if (info.targetBranch) out.targetBranch = info.targetBranch;
  const url = link(info.ciUrl);
  if (url) out.ciUrl = url;
  return out;
}

function gitHubActions(env: Env): CiInfo | undefined {
  if (env.GITHUB_ACTIONS !== 'true') return undefined;
  const server = value(env, 'GITHUB_SERVER_URL') ?? 'https://github.com';
  const repository = value(env, 'GITHUB_REPOSITORY');
  const runId = value(env, 'GITHUB_RUN_ID');
  const attempt = value(env, 'GITHUB_RUN_ATTEMPT');
  return {
    system: 'GitHub Actions',
    // A pull request's own branch (GITHUB_REF_NAME is then `123/merge`).
    branch: first(env, 'GITHUB_HEAD_REF', 'GITHUB_REF_NAME'),
    commit: value(env, 'GITHUB_SHA'),
    build: first(env, 'GITHUB_RUN_NUMBER', 'GITHUB_RUN_ID'),
    // Set in pull_request builds only.
    targetBranch: value(env, 'GITHUB_BASE_REF'),
    ciUrl:
      repository && runId
        ? `${server.replace(/\/+$/, '')}/${repository}/actions/runs/${runId}${attempt && attempt !== '1' ? `/attempts/${attempt}` : ''}`
        : undefined,
  };
}

function gitLabCi(env: Env): CiInfo | undefined {
  if (env.GITLAB_CI !== 'true') return undefined;
  return {
    system: 'GitLab CI',
    branch: first(env, 'CI_MERGE_REQUEST_SOURCE_BRANCH_NAME', 'CI_COMMIT_BRANCH', 'CI_COMMIT_REF_NAME'),
    commit: value(env, 'CI_COMMIT_SHA'),
    build: first(env, 'CI_PIPELINE_IID', 'CI_PIPELINE_ID'),
    targetBranch: value(env, 'CI_MERGE_REQUEST_TARGET_BRANCH_NAME'),
    ciUrl: first(env, 'CI_JOB_URL', 'CI_PIPELINE_URL'),
  };
}

function jenkins(env: Env): CiInfo | undefined {
  if (!value(env, 'JENKINS_URL')) return undefined;
  return {
    system: 'Jenkins',
    branch: branchName(first(env, 'CHANGE_BRANCH', 'BRANCH_NAME', 'GIT_BRANCH')),
    commit: value(env, 'GIT_COMMIT'),
    build: value(env, 'BUILD_NUMBER'),
    targetBranch: branchName(value(env, 'CHANGE_TARGET')),
    ciUrl: value(env, 'BUILD_URL'),
  };
}

function circleCi(env: Env): CiInfo | undefined {
  if (env.CIRCLECI !== 'true') return undefined;
  return {
    system: 'CircleCI',
    branch: value(env, 'CIRCLE_BRANCH'),
    commit: value(env, 'CIRCLE_SHA1'),
    build: first(env, 'CIRCLE_BUILD_NUM', 'CIRCLE_WORKFLOW_ID'),
    ciUrl: value(env, 'CIRCLE_BUILD_URL'),
  };
}

function azurePipelines(env: Env): CiInfo | undefined {
  if (value(env, 'TF_BUILD')?.toLowerCase() !== 'true') return undefined;
  const collection = value(env, 'SYSTEM_COLLECTIONURI');
  const project = value(env, 'SYSTEM_TEAMPROJECT');
  const buildId = value(env, 'BUILD_BUILDID');
  return {
    system: 'Azure Pipelines',
    branch: branchName(first(env, 'SYSTEM_PULLREQUEST_SOURCEBRANCH', 'BUILD_SOURCEBRANCH', 'BUILD_SOURCEBRANCHNAME')),
    commit: value(env, 'BUILD_SOURCEVERSION'),
    build: first(env, 'BUILD_BUILDNUMBER', 'BUILD_BUILDID'),
    targetBranch: branchName(value(env, 'SYSTEM_PULLREQUEST_TARGETBRANCH')),
    ciUrl:
      collection && project && buildId
        ? `${collection.replace(/\/*$/, '/')}${encodeURIComponent(project)}/_build/results?buildId=${encodeURIComponent(buildId)}`
        : undefined,
  };
}

function buildkite(env: Env): CiInfo | undefined {
  if (env.BUILDKITE !== 'true') return undefined;
  const url = value(env, 'BUILDKITE_BUILD_URL');
  const job = value(env, 'BUILDKITE_JOB_ID');
  return {
    system: 'Buildkite',
    branch: value(env, 'BUILDKITE_BRANCH'),
    commit: value(env, 'BUILDKITE_COMMIT'),
    build: value(env, 'BUILDKITE_BUILD_NUMBER'),
    // `false` outside a pull request build.
    targetBranch: value(env, 'BUILDKITE_PULL_REQUEST') === 'false' ? undefined : value(env, 'BUILDKITE_PULL_REQUEST_BASE_BRANCH'),
    ciUrl: url && job ? `${url}#${job}` : url,
  };
}

/** One reader per system, each answering only for its own (tried in this order). */
const SYSTEMS = [gitHubActions, gitLabCi, jenkins, circleCi, azurePipelines, buildkite];

/** The CI build these variables describe, or `undefined` outside every known CI system. */
export function detectCi(env: Env): CiInfo | undefined {
  for (const system of SYSTEMS) {
    const info = system(env);
    if (info) return compact(info);
  }
  return undefined;
}
