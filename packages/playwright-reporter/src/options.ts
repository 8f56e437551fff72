import { detectCi } from './ci.ts';

/** What the reporter takes in `playwright.config.ts`: `['@attest-hq/playwright-reporter', { … }]`. */
export interface AttestReporterOptions {
  /** The Attest instance, e.g. `https://attest.example.com` (without `/api/v1`). Env `ATTEST_URL`. */
  url?: string;
  /** The key sent as `service.api-token`. Env `ATTEST_API_KEY`. */
  apiKey?: string;
  /** The owner's e-mail, sent as `service.user` only beside an old-format (UUID) key. Env `ATTEST_USER`. */
  user?: string;
  /** The project: its id (UUID) or its key (`WEB`). Env `ATTEST_PROJECT`. */
  project?: string;
  /** The job's name. Env `ATTEST_JOB_NAME`; default `Playwright <date time>`. */
  jobName?: string;
  /**
   * Run labels, copied onto the job and every run. Env `ATTEST_ENVIRONMENT`, `ATTEST_BRANCH`, `ATTEST_BUILD`,
   * `ATTEST_COMMIT`; without them, `branch`, `build` and `commit` come from the CI system's own variables (ci.ts).
   */
  environment?: string;
  branch?: string;
  build?: string;
  commit?: string;
  /** A link to the CI build, shown on the job and run pages. Env `ATTEST_CI_URL`; default the CI system's build page. */
  ciUrl?: string;
  /**
   * The branch a pull request merges into: the job is compared with it (TRIAGE-16). Env `ATTEST_TARGET_BRANCH`;
   * default the CI system's (`GITHUB_BASE_REF`, `CI_MERGE_REQUEST_TARGET_BRANCH_NAME`, …).
   */
  targetBranch?: string;
  /**
   * Where results wait when the server cannot be reached, to be sent by the next run. Env `ATTEST_SPOOL_DIR`;
   * default `.attest-spool` beside the Playwright configuration.
   */
  spoolDir?: string;
  /**
   * Where the job's id is written at the end of the run, for the next CI step (`attest gate --job "$(cat .attest-job)"`).
   * Env `ATTEST_JOB_ID_FILE`; default `.attest-job` beside the Playwright configuration. In GitHub Actions the id is
   * also the step output `attest-job-id` (and `attest-job-url`), and a job summary is added (REP-1).
   */
  jobIdFile?: string;
  /** Most bytes the spool folder holds; a run that does not fit is spooled without attachments, or not at all (default 100 MB). */
  maxSpoolBytes?: number;
  /** How long `onEnd` waits for the queue to drain before giving up on the rest (ms). Env `ATTEST_FLUSH_TIMEOUT_MS`; default 30 000. */
  flushTimeoutMs?: number;
  /** Most items waiting to be sent; beyond it the oldest steps and attachments are dropped (default 1 000). */
  maxQueuedItems?: number;
  /** Most attachment bytes waiting to be sent; beyond it the oldest attachments are dropped (default 200 MB). */
  maxQueuedBytes?: number;
}

export interface Settings {
  url: string;
  apiKey: string;
  user?: string;
  project: string;
  jobName: string;
  labels: { environment?: string; branch?: string; build?: string; commit?: string; ciUrl?: string };
  /** The branch the pull request merges into, sent with the job only (runs have no such label). */
  targetBranch?: string;
  /** The CI system the labels came from, if any. */
  ci?: string;
  /** `undefined`: beside the Playwright configuration, known at `onBegin`. */
  spoolDir?: string;
  /** `undefined`: `.attest-job` beside the Playwright configuration. */
  jobIdFile?: string;
  maxSpoolBytes: number;
  flushTimeoutMs: number;
  maxQueuedItems: number;
  maxQueuedBytes: number;
}

const OLD_FORMAT_KEY = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
export const isOldFormatKey = (key: string) => OLD_FORMAT_KEY.test(key);

/** Options win over the environment; the answer is the settings, or why the reporter stays off. */
export function resolveSettings(
  options: AttestReporterOptions,
  env: Readonly<Record<string, string | undefined>>,
): Settings | { off: string } {
  const pick = (value: string | undefined, name: string) => (value?.trim() ? value.trim() : env[name]?.trim() || undefined);
  const url = pick(options.url, 'ATTEST_URL');
  const apiKey = pick(options.apiKey, 'ATTEST_API_KEY');
  const project = pick(options.project, 'ATTEST_PROJECT');
  if (!url) return { off: 'no url (set ATTEST_URL)' };
  if (!apiKey) return { off: 'no API key (set ATTEST_API_KEY)' };
  if (!project) return { off: 'no project (set ATTEST_PROJECT to its key or id)' };
  const user = pick(options.user, 'ATTEST_USER');
  if (isOldFormatKey(apiKey) && !user) return { off: 'an old-format (UUID) key needs its owner’s e-mail (set ATTEST_USER)' };
  const labels: Settings['labels'] = {};
  const ci = detectCi(env);
  for (const label of ['environment', 'branch', 'build', 'commit'] as const) {
    const value = pick(options[label], `ATTEST_${label.toUpperCase()}`) ?? (label === 'environment' ? undefined : ci?.[label]);
    if (value) labels[label] = value;
  }
  const ciUrl = pick(options.ciUrl, 'ATTEST_CI_URL') ?? ci?.ciUrl;
  if (ciUrl) labels.ciUrl = ciUrl;
  const targetBranch = pick(options.targetBranch, 'ATTEST_TARGET_BRANCH') ?? ci?.targetBranch;
  const spoolDir = pick(options.spoolDir, 'ATTEST_SPOOL_DIR');
  const jobIdFile = pick(options.jobIdFile, 'ATTEST_JOB_ID_FILE');
  return {
    url: url.replace(/\/+$/, ''),
    apiKey,
    ...(user ? { user } : {}),
    project,
    jobName: pick(options.jobName, 'ATTEST_JOB_NAME') ?? `Playwright ${new Date().toISOString().slice(0, 16).replace('T', ' ')}`,
    labels,
    ...(targetBranch ? { targetBranch } : {}),
    ...(ci ? { ci: ci.system } : {}),
    ...(spoolDir ? { spoolDir } : {}),
    ...(jobIdFile ? { jobIdFile } : {}),
    maxSpoolBytes: positive(options.maxSpoolBytes, 100 * 1024 * 1024),
    flushTimeoutMs: positive(options.flushTimeoutMs ?? Number(env.ATTEST_FLUSH_TIMEOUT_MS), 30_000),
    maxQueuedItems: positive(options.maxQueuedItems, 1_000),
    maxQueuedBytes: positive(options.maxQueuedBytes, 200 * 1024 * 1024),
  };
}

const positive = (value: number | undefined, fallback: number) =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : fallback;
