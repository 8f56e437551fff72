import type { IssueTrackersTable } from '../../db/types.ts';
import { webLinkProblem } from '../../outgoing/web-link.ts';
import { callJson, IntegrationError, masked } from './fetch.ts';
import { gitHubOctokit } from './forge-clients.ts';

// The two issue trackers "Create issue" files to (FORGE-5, FORGE-6, docs/integrations.md): Jira
// through its REST API v2 or v3 (v3 writes the description in Atlassian's document format) and
// GitHub Issues through Octokit. Both answer the same shape: key, URL, title and status.

/** An issue as Attest keeps it. */
export interface TrackedIssue {
  key: string;
  url: string;
  title: string;
  status: string | null;
}

/** What is filed: a title, and a description as paragraphs, some of them preformatted (a message, a trace). */
export interface NewIssue {
  title: string;
  blocks: { text: string; code?: boolean }[];
  /** Links back to Attest, put last. */
  links: { label: string; url: string }[];
}

export interface IssueTrackerClient {
  create(issue: NewIssue): Promise<TrackedIssue>;
  read(key: string): Promise<TrackedIssue>;
}

/**
 * A new issue as the tracker answered it, its address checked before anything stores it (FORGE-10):
 * the tracker's answer is not trusted, and a `javascript:` or `data:` "address" would become a
 * link on every page that shows the group. Refused, it is an IntegrationError saying why (the
 * issue was filed all the same: its key is named, so it can be found).
 */
function checkedIssue(tracker: string, issue: TrackedIssue): TrackedIssue {
  const problem = webLinkProblem(issue.url);
  if (problem) {
    throw new IntegrationError(
      `${tracker} filed ${issue.key} but answered an address for it that is not an http(s) link (${problem}); Attest stored no link to it`,
    );
  }
  return issue;
}

export function issueTrackerClient(tracker: IssueTrackersTable, fetcher: typeof fetch, now: () => Date): IssueTrackerClient {
  return tracker.kind === 'jira' ? jiraClient(tracker, fetcher) : gitHubIssuesClient(tracker, fetcher, now);
}

function jiraClient(tracker: IssueTrackersTable, fetcher: typeof fetch): IssueTrackerClient {
  const base = tracker.base_url.replace(/\/+$/, '');
  const version = tracker.api_version ?? 3;
  const headers = () => {
    if (!tracker.token) throw new IntegrationError('no token is configured');
    // Jira Cloud: the account's e-mail and an API token; Server and Data Center: a personal access token.
    const authorization = tracker.email
      ? `Basic ${Buffer.from(`${tracker.email}:${tracker.token}`).toString('base64')}`
      : `Bearer ${tracker.token}`;
    return { authorization };
  };
  const browse = (key: string) => `${base}/browse/${encodeURIComponent(key)}`;
  return {
    async create(issue) {
      const created = (await callJson(fetcher, `${base}/rest/api/${version}/issue`, {
        method: 'POST',
        headers: headers(),
        body: {
          fields: {
            project: { key: tracker.project_key },
            issuetype: { name: tracker.issue_type ?? 'Bug' },
            summary: issue.title,
            description: version === 3 ? documentOf(issue) : textOf(issue),
          },
        },
      })) as { key?: unknown } | null;
      if (typeof created?.key !== 'string') throw new IntegrationError('Jira answered the new issue without its key');
      return checkedIssue('Jira', { key: created.key, url: browse(created.key), title: issue.title, status: null });
    },
    async read(key) {
      const read = (await callJson(fetcher, `${base}/rest/api/${version}/issue/${encodeURIComponent(key)}?fields=summary,status`, {
        method: 'GET',
        headers: headers(),
      })) as { key?: string; fields?: { summary?: string; status?: { name?: string } } } | null;
      return {
        key,
        url: browse(key),
        title: String(read?.fields?.summary ?? ''),
        status: read?.fields?.status?.name ?? null,
      };
    },
  };
}

/** Jira v2's wiki text. */
function textOf(issue: NewIssue): string {
  const parts = issue.blocks.map((b) => (b.code ? `{noformat}\n${b.text}\n{noformat}` : b.text));
  parts.push(issue.links.map((l) => `[${l.label}|${l.url}]`).join(' · '));
  return parts.join('\n\n');
}

/** Jira v3's Atlassian document format: paragraphs, code blocks, and the links as link marks. */
function documentOf(issue: NewIssue): unknown {
  const content: unknown[] = issue.blocks.map((b) =>
    b.code
      ? { type: 'codeBlock', content: [{ type: 'text', text: b.text }] }
      : { type: 'paragraph', content: [{ type: 'text', text: b.text }] },
  );
  content.push({
    type: 'paragraph',
    content: issue.links.flatMap((l, i) => [
      ...(i > 0 ? [{ type: 'text', text: ' · ' }] : []),
      { type: 'text', text: l.label, marks: [{ type: 'link', attrs: { href: l.url } }] },
    ]),
  });
  return { type: 'doc', version: 1, content };
}

function gitHubIssuesClient(tracker: IssueTrackersTable, fetcher: typeof fetch, now: () => Date): IssueTrackerClient {
  const [owner = '', repo = ''] = (tracker.repository ?? '').split('/');
  const octokit = () =>
    gitHubOctokit(
      { api_url: tracker.base_url, auth: 'token', token: tracker.token, app_id: null, private_key: null, installation_id: null },
      fetcher,
      now,
    );
  const refused = (error: unknown, what: string): never => {
    if (error instanceof IntegrationError) throw error;
    const status = (error as { status?: number }).status;
    const message = (error as { response?: { data?: { message?: string } } }).response?.data?.message ?? (error as Error).message;
    throw new IntegrationError(`GitHub refused ${what}${status ? ` (${status})` : ''}: ${masked(String(message), [], 300)}`, status);
  };
  return {
    async create(issue) {
      const body = [
        ...issue.blocks.map((b) => (b.code ? `\`\`\`\n${b.text.replace(/```/g, '``\u200b`')}\n\`\`\`` : b.text)),
        issue.links.map((l) => `[${l.label}](${l.url})`).join(' · '),
      ].join('\n\n');
      try {
        const { data } = await (await octokit()).rest.issues.create({ owner, repo, title: issue.title, body });
        return checkedIssue('GitHub', { key: `#${Number(data.number)}`, url: data.html_url, title: data.title, status: data.state });
      } catch (error) {
        return refused(error, 'the issue');
      }
    },
    async read(key) {
      try {
        const { data } = await (await octokit()).rest.issues.get({ owner, repo, issue_number: Number(key.replace(/^#/, '')) });
        return { key, url: data.html_url, title: data.title, status: data.state };
      } catch (error) {
        return refused(error, `issue ${key}`);
      }
    },
  };
}
