import { createSign } from 'node:crypto';
import type { Octokit } from '@octokit/rest';
import type { ForgeSettingsTable } from '../../db/types.ts';
import { callJson, IntegrationError, masked } from './fetch.ts';

// The two code hosts a job reports to (FORGE-2 to FORGE-4, docs/integrations.md): GitHub's check
// runs and pull-request comments through Octokit, GitLab's commit statuses and merge-request notes
// through its REST API. Both take the same report and keep one comment per project and pull
// request, found again by a hidden marker, so a second job edits it rather than adding one.

/** One failure as an annotation: at its file and line when its trace names them, else under the test's name. */
export interface ForgeAnnotation {
  path: string;
  line: number;
  title: string;
  message: string;
}

/** What a job's state becomes on the code host. */
export interface ForgeReport {
  status: 'queued' | 'in_progress' | 'completed';
  /** Set once completed. */
  conclusion: 'success' | 'failure' | 'cancelled' | 'neutral' | null;
  startedAt: string | null;
  completedAt: string | null;
  title: string;
  /** Markdown. */
  summary: string;
  annotations: ForgeAnnotation[];
  detailsUrl: string | null;
  /** The job id, as GitHub's `external_id`. */
  externalId: string;
}

export interface ForgeTarget {
  repository: string;
  commitSha: string;
  /** The check run made by an earlier sync (GitHub). */
  checkRunId: string | null;
}

/** The hidden marker of a project's comment on a pull (merge) request. */
export const commentMarker = (projectId: string) => `<!-- attest:project:${projectId} -->`;

/** GitHub's limit of annotations in one request; a check run takes more over several, but a summary needs no more. */
export const ANNOTATIONS_MAX = 50;

export interface ForgeClient {
  /** Sends the job's state; answers the check run id to keep (GitHub), else null. */
  report(target: ForgeTarget, report: ForgeReport): Promise<string | null>;
  /** Creates or edits the project's one comment on the open pull (merge) request of the commit; false when there is none. */
  comment(target: ForgeTarget, marker: string, body: string): Promise<boolean>;
}

export function forgeClient(settings: ForgeSettingsTable, fetcher: typeof fetch, now: () => Date): ForgeClient {
  return settings.kind === 'github' ? gitHubClient(settings, fetcher, now) : gitLabClient(settings, fetcher);
}

/** A GitHub App's JWT (RS256, ten minutes at most), which buys an installation token. */
export function appJwt(appId: string, privateKey: string, now: Date): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const iat = Math.floor(now.getTime() / 1000) - 60;
  const unsigned = `${encode({ alg: 'RS256', typ: 'JWT' })}.${encode({ iat, exp: iat + 540, iss: appId })}`;
  let signature: string;
  try {
    signature = createSign('RSA-SHA256').update(unsigned).sign(privateKey, 'base64url');
  } catch {
    throw new IntegrationError("the GitHub App's private key is not a PEM RSA key");
  }
  return `${unsigned}.${signature}`;
}

/** An Octokit on the configured API with the integrations' fetch, authenticated with a token or as the App's installation. */
export async function gitHubOctokit(
  settings: Pick<ForgeSettingsTable, 'api_url' | 'auth' | 'token' | 'app_id' | 'private_key' | 'installation_id'>,
  fetcher: typeof fetch,
  now: () => Date,
): Promise<Octokit> {
  // Loaded when a project first reports to GitHub: an instance without the integration does not carry it.
  const { Octokit } = await import('@octokit/rest');
  const options = { baseUrl: settings.api_url, request: { fetch: fetcher, retries: 0 }, log: silentOctokitLog, userAgent: 'attest' };
  if (settings.auth === 'token') {
    if (!settings.token) throw new IntegrationError('no token is configured');
    return new Octokit({ ...options, auth: settings.token });
  }
  if (!settings.app_id || !settings.private_key || !settings.installation_id) {
    throw new IntegrationError('the GitHub App needs its id, private key and installation id');
  }
  const app = new Octokit({ ...options, auth: appJwt(settings.app_id, settings.private_key, now()) });
  const { data } = await github(
    () => app.request('POST /app/installations/{installation_id}/access_tokens', { installation_id: Number(settings.installation_id) }),
    'the installation token',
  );
  return new Octokit({ ...options, auth: data.token });
}

/** Octokit's own warnings and debug lines are not ours to print (they could hold URLs with secrets). */
const silentOctokitLog = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** Runs an Octokit call; its failure becomes an IntegrationError with the status and GitHub's message only. */
async function github<T>(call: () => Promise<T>, what: string): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof IntegrationError) throw error;
    const status = (error as { status?: number }).status;
    const cause = (error as { cause?: unknown }).cause;
    if (cause instanceof IntegrationError) throw cause;
    // Credentials by their shape masked before the cut (FORGE-9); those this call sent, the fetch masked already.
    const message = masked(
      String((error as { response?: { data?: { message?: string } } }).response?.data?.message ?? (error as Error).message),
      [],
      300,
    );
    throw new IntegrationError(`GitHub refused ${what}${status ? ` (${status})` : ''}: ${message}`, status);
  }
}

function ownerAndRepo(repository: string): { owner: string; repo: string } {
  const [owner, repo, ...rest] = repository.split('/');
  if (!owner || !repo || rest.length > 0) throw new IntegrationError(`${repository} is not a GitHub repository (owner/name)`);
  return { owner, repo };
}

/** A check run as GitHub takes it: its status, and once completed its conclusion and annotations. */
function checkRunFields(settings: ForgeSettingsTable, report: Parameters<ForgeClient['report']>[1], now: () => Date) {
  const output = {
    title: report.title,
    summary: report.summary,
    ...(report.status === 'completed' && report.annotations.length > 0
      ? {
          annotations: report.annotations.slice(0, ANNOTATIONS_MAX).map((a) => ({
            path: a.path,
            start_line: a.line,
            end_line: a.line,
            annotation_level: 'failure' as const,
            title: a.title,
            message: a.message,
          })),
        }
      : {}),
  };
  return {
    name: settings.check_name,
    status: report.status,
    ...(report.detailsUrl ? { details_url: report.detailsUrl } : {}),
    external_id: report.externalId,
    ...(report.startedAt ? { started_at: report.startedAt } : {}),
    ...(report.status === 'completed'
      ? { conclusion: report.conclusion ?? 'neutral', completed_at: report.completedAt ?? now().toISOString() }
      : {}),
    output,
  };
}

function gitHubClient(settings: ForgeSettingsTable, fetcher: typeof fetch, now: () => Date): ForgeClient {
  let octokit: Promise<Octokit> | undefined;
  const client = () => {
    octokit ??= gitHubOctokit(settings, fetcher, now);
    return octokit;
  };
  return {
    async report(target, report) {
      const gh = await client();
      const { owner, repo } = ownerAndRepo(target.repository);
      const fields = checkRunFields(settings, report, now);
      if (target.checkRunId === null) {
        const { data } = await github(() => gh.rest.checks.create({ owner, repo, head_sha: target.commitSha, ...fields }), 'the check run');
        return String(data.id);
      }
      await github(
        () => gh.rest.checks.update({ owner, repo, check_run_id: Number(target.checkRunId), ...fields }),
        'the check run update',
      );
      return target.checkRunId;
    },

    async comment(target, marker, body) {
      const gh = await client();
      const { owner, repo } = ownerAndRepo(target.repository);
      const { data: pulls } = await github(
        () => gh.rest.repos.listPullRequestsAssociatedWithCommit({ owner, repo, commit_sha: target.commitSha }),
        'the pull requests of the commit',
      );
      const pull = pulls.find((p) => p.state === 'open') ?? pulls[0];
      if (!pull) return false;
      const text = `${marker}\n${body}`;
      // The marker, not a stored id: the comment is found again whatever this instance remembers.
      const comments = await github(
        () => gh.paginate(gh.rest.issues.listComments, { owner, repo, issue_number: pull.number, per_page: 100 }),
        'the comments of the pull request',
      );
      const mine = comments.find((c) => c.body?.includes(marker));
      if (mine) {
        await github(() => gh.rest.issues.updateComment({ owner, repo, comment_id: mine.id, body: text }), 'the comment update');
      } else {
        await github(() => gh.rest.issues.createComment({ owner, repo, issue_number: pull.number, body: text }), 'the comment');
      }
      return true;
    },
  };
}

const GITLAB_STATES = { queued: 'pending', in_progress: 'running' } as const;

function gitLabClient(settings: ForgeSettingsTable, fetcher: typeof fetch): ForgeClient {
  const base = settings.api_url.replace(/\/+$/, '');
  const headers = () => {
    if (!settings.token) throw new IntegrationError('no token is configured');
    return { 'private-token': settings.token };
  };
  const project = (repository: string) => `${base}/projects/${encodeURIComponent(repository)}`;
  return {
    async report(target, report) {
      const state =
        report.status === 'completed'
          ? report.conclusion === 'success' || report.conclusion === 'neutral'
            ? 'success'
            : report.conclusion === 'cancelled'
              ? 'canceled'
              : 'failed'
          : GITLAB_STATES[report.status];
      await callJson(fetcher, `${project(target.repository)}/statuses/${encodeURIComponent(target.commitSha)}`, {
        method: 'POST',
        headers: headers(),
        body: {
          state,
          name: settings.check_name,
          description: report.title.slice(0, 255),
          ...(report.detailsUrl ? { target_url: report.detailsUrl } : {}),
        },
      });
      return null;
    },

    async comment(target, marker, body) {
      const requests = (await callJson(
        fetcher,
        `${project(target.repository)}/repository/commits/${encodeURIComponent(target.commitSha)}/merge_requests`,
        { method: 'GET', headers: headers() },
      )) as { iid: number; state: string }[] | null;
      const request = requests?.find((r) => r.state === 'opened') ?? requests?.[0];
      if (!request) return false;
      const notesUrl = `${project(target.repository)}/merge_requests/${request.iid}/notes`;
      const text = `${marker}\n${body}`;
      let mine: { id: number } | undefined;
      for (let page = 1; page <= 20 && !mine; page++) {
        const notes = (await callJson(fetcher, `${notesUrl}?per_page=100&page=${page}`, { method: 'GET', headers: headers() })) as
          | { id: number; body: string }[]
          | null;
        if (!notes || notes.length === 0) break;
        mine = notes.find((n) => n.body?.includes(marker));
        if (notes.length < 100) break;
      }
      if (mine) await callJson(fetcher, `${notesUrl}/${mine.id}`, { method: 'PUT', headers: headers(), body: { body: text } });
      else await callJson(fetcher, notesUrl, { method: 'POST', headers: headers(), body: { body: text } });
      return true;
    },
  };
}
