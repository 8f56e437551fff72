import { randomUUID } from 'node:crypto';
import type { Static } from 'typebox';
import type { createRunIssue as createRunIssueEndpoint, putIssueTracker as putIssueTrackerEndpoint } from '../../../api/v1/integrations.ts';
import type { Task } from '../../background.ts';
import type { ServiceContext } from '../../context.ts';
import { findFailureGroup, groupsOfRun, latestOccurrences, updateFailureGroups } from '../../db/repositories/failure-groups.ts';
import {
  deleteIssueTracker as deleteTrackerRow,
  findIssueLink,
  findIssueTracker,
  insertIssueLink,
  listIssueLinks as listLinkRows,
  saveIssueTracker,
  staleIssueLinks,
  stepsOfRun,
  updateIssueLink,
} from '../../db/repositories/integrations.ts';
import { findProject } from '../../db/repositories/projects.ts';
import { findRun } from '../../db/repositories/runs.ts';
import { enqueueTask } from '../../db/repositories/tasks.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { FailureGroupsTable, IssueLinksTable, IssueTrackersTable, TestRunsTable } from '../../db/types.ts';
import { AppError, found, invalid } from '../../errors.ts';
import { auditBy, auditProjectChange } from '../access/audit.ts';
import type { UserActor } from '../actor.ts';
import { IntegrationError, integrationFetch, masked } from './fetch.ts';
import { assertSecretStays, checkedApiUrl, DEFAULT_API_URLS, deleteIntegration, integrationMove } from './forge.ts';
import { type IssueTrackerClient, issueTrackerClient, type NewIssue, type TrackedIssue } from './issue-trackers.ts';

// Issue links (FORGE-5, FORGE-6, docs/integrations.md): a project's tracker, "Create issue" for an
// error group or a run (the tracker is called within the request: the person waits for the key),
// and the refresh of the links' titles and statuses in the background.

export type PutIssueTrackerInput = Static<NonNullable<(typeof putIssueTrackerEndpoint)['body']>>;
export type CreateIssueInput = Static<NonNullable<(typeof createRunIssueEndpoint)['body']>>;

/** The background task that reads one link's title and status again; its key is `issue-refresh:<linkId>`. */
export const ISSUE_REFRESH_TASK = 'issue-refresh';
/** The periodic refresh of links not read for `ISSUE_STALE_MS`. */
export const ISSUE_REFRESH_SWEEP_TASK = 'issue-refresh-sweep';
const ISSUE_STALE_MS = 60 * 60_000;
const STEPS_SHOWN = 50;

export const getIssueTracker = (ctx: ServiceContext, projectId: string) => findIssueTracker(ctx.db, projectId);

/**
 * Sets the project's tracker; a token left out keeps the stored one (write-only), unless the
 * tracker moves to another kind or URL: then the token is given again (FORGE-8).
 */
export async function putIssueTracker(
  ctx: ServiceContext,
  projectId: string,
  input: PutIssueTrackerInput,
  actor: UserActor,
): Promise<IssueTrackersTable> {
  if (input.kind === 'jira') {
    if (input.baseUrl === undefined) throw invalid('/body/baseUrl', "is required for Jira: the site's address");
    if (input.projectKey === undefined) throw invalid('/body/projectKey', 'is required for Jira');
  } else if (input.repository === undefined) throw invalid('/body/repository', 'is required for GitHub Issues (owner/name)');
  if (input.kind === 'github' && input.repository !== undefined && input.repository.split('/').length !== 2) {
    throw invalid('/body/repository', 'must be owner/name');
  }
  const baseUrl = checkedApiUrl(ctx, input.baseUrl ?? DEFAULT_API_URLS.github, '/body/baseUrl');
  return inTransaction(ctx.db, async (trx) => {
    const stored = await findIssueTracker(trx, projectId);
    const jira = input.kind === 'jira';
    const row: IssueTrackersTable = {
      project_id: projectId,
      kind: input.kind,
      base_url: baseUrl,
      api_version: jira ? (input.apiVersion ?? 3) : null,
      email: jira ? (input.email === undefined ? (stored?.email ?? null) : input.email) : null,
      token: input.token ?? stored?.token ?? null,
      project_key: jira ? (input.projectKey ?? null) : null,
      issue_type: jira ? (input.issueType ?? 'Bug') : null,
      repository: jira ? null : (input.repository ?? null),
      updated_at: ctx.clock().toISOString(),
      updated_by: actor.userId,
    };
    const moved = integrationMove(stored, row, 'base_url');
    assertSecretStays(moved, row.token !== null && input.token === undefined ? { pointer: '/body/token', what: 'token' } : undefined);
    if (row.token === null) throw invalid('/body/token', 'is required: no token is stored yet');
    await saveIssueTracker(trx, row);
    await auditProjectChange(ctx, trx, actor, projectId, 'issue-tracker.set', {
      kind: row.kind,
      baseUrl: row.base_url,
      tokenChanged: input.token !== undefined,
      // Where the token went before, when this moved it (FORGE-8).
      ...(moved ? { movedFrom: { kind: stored?.kind, baseUrl: moved.from } } : {}),
    });
    return row;
  });
}

export const deleteIssueTracker = (ctx: ServiceContext, projectId: string, actor: UserActor): Promise<void> =>
  deleteIntegration(ctx, projectId, actor, 'issue-tracker.delete', deleteTrackerRow);

export const listIssueLinks = (ctx: ServiceContext, projectId: string, filter: { failureGroupId?: string; runId?: string }) =>
  listLinkRows(ctx.db, projectId, filter, 100);

/** The tracker's secrets in the forms it sends them: the token, and Jira Cloud's `email:token` pair (sent base64-encoded). */
const secretsOf = (tracker: IssueTrackersTable) => [
  tracker.token,
  tracker.email && tracker.token ? `${tracker.email}:${tracker.token}` : null,
];

function clientOf(ctx: ServiceContext, tracker: IssueTrackersTable): IssueTrackerClient {
  const fetcher = integrationFetch({
    allowPrivate: ctx.config.integrationsAllowPrivate,
    boundTo: tracker.base_url,
    secrets: secretsOf(tracker),
  });
  return issueTrackerClient(tracker, fetcher, ctx.clock);
}

async function trackerOf(ctx: ServiceContext, projectId: string): Promise<IssueTrackersTable> {
  const tracker = await findIssueTracker(ctx.db, projectId);
  if (!tracker) throw new AppError('STATE_CONFLICT', 'The project has no issue tracker; a manager sets one in its settings.');
  return tracker;
}

/** Calls the tracker; what it refuses becomes a 502 whose detail never holds the token. */
async function filed<T>(tracker: IssueTrackersTable, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof IntegrationError)) throw error;
    throw new AppError('UPSTREAM_FAILED', masked(`The issue tracker: ${error.message}`, secretsOf(tracker)));
  }
}

const attestUrl = (ctx: ServiceContext, path: string) => (ctx.config.publicUrl ? `${ctx.config.publicUrl}${path}` : undefined);

/** The failed run's steps, indented by depth, each with its status and error. */
async function stepLines(ctx: ServiceContext, runId: string): Promise<string | undefined> {
  const steps = await stepsOfRun(ctx.db, runId, STEPS_SHOWN);
  if (steps.length === 0) return undefined;
  return steps
    .map(
      (s) =>
        `${'  '.repeat(Number(s.depth))}${s.status === 'passed' ? '✓' : s.status === 'failed' || s.status === 'broken' ? '✗' : '·'} ${s.title}${s.error_message ? `: ${s.error_message.split('\n')[0]}` : ''}`,
    )
    .join('\n');
}

function issueOf(
  ctx: ServiceContext,
  parts: { note?: string; group?: FailureGroupsTable; run?: TestRunsTable; steps?: string; projectKey: string },
  title: string,
): NewIssue {
  const blocks: NewIssue['blocks'] = [];
  if (parts.note) blocks.push({ text: parts.note });
  const { group, run } = parts;
  if (group) {
    blocks.push({
      text: `Error group (${group.category}): ${group.occurrences} failed runs, first seen ${group.first_seen_at}, last seen ${group.last_seen_at}.`,
    });
    blocks.push({ text: group.message.slice(0, 4000), code: true });
    const frames = JSON.parse(group.frames) as string[];
    if (frames.length > 0) blocks.push({ text: frames.join('\n'), code: true });
  }
  if (run) {
    blocks.push({
      text: `Run "${run.name}": ${run.verdict ?? run.status}${run.branch ? ` on ${run.branch}` : ''}${run.commit_sha ? ` at ${run.commit_sha}` : ''}.`,
    });
  }
  if (parts.steps) blocks.push({ text: `Steps:\n${parts.steps}`, code: true });
  const links: NewIssue['links'] = [];
  const groupUrl = group && attestUrl(ctx, `/projects/${parts.projectKey}/failures/${group.id}`);
  if (groupUrl) links.push({ label: 'Error group in Attest', url: groupUrl });
  const runUrl = run && attestUrl(ctx, `/runs/${run.id}`);
  if (runUrl) links.push({ label: 'Run in Attest', url: runUrl });
  if (links.length === 0) blocks.push({ text: 'Filed from Attest.' });
  return { title, blocks, links };
}

/** Stores the link (and the group's `issueUrl`) and queues its first refresh, in one transaction. */
async function storeLink(
  ctx: ServiceContext,
  tracker: IssueTrackersTable,
  issue: TrackedIssue,
  subject: { projectId: string; groupId: string | null; runId: string | null },
  actor: UserActor,
): Promise<IssueLinksTable> {
  const now = ctx.clock().toISOString();
  const link: IssueLinksTable = {
    id: randomUUID(),
    project_id: subject.projectId,
    failure_group_id: subject.groupId,
    run_id: subject.runId,
    tracker: tracker.kind,
    key: issue.key.slice(0, 100),
    url: issue.url,
    title: issue.title.slice(0, 256),
    status: issue.status?.slice(0, 100) ?? null,
    refreshed_at: issue.status === null ? null : now,
    created_at: now,
    created_by: actor.userId,
  };
  await inTransaction(ctx.db, async (trx) => {
    await insertIssueLink(trx, link);
    if (subject.groupId) await updateFailureGroups(trx, [subject.groupId], { issue_url: link.url, updated_at: now });
    await auditBy(ctx, trx, actor, {
      action: 'issue.create',
      targetType: subject.groupId ? 'failure-group' : 'run',
      targetId: subject.groupId ?? (subject.runId as string),
      details: { tracker: link.tracker, key: link.key, url: link.url },
    });
    // Jira answers a new issue without its status: read at once, in the background.
    if (link.status === null) {
      const at = ctx.background.time();
      await enqueueTask(trx, {
        kind: ISSUE_REFRESH_TASK,
        key: `${ISSUE_REFRESH_TASK}:${link.id}`,
        payload: JSON.stringify({ linkId: link.id }),
        runAt: at,
        now: at,
      });
    }
  });
  if (link.status === null) {
    ctx.background.announce();
    ctx.background.wake();
  }
  return link;
}

/** Files an issue for an error group of the project and makes it the group's `issueUrl`. */
export async function createFailureGroupIssue(
  ctx: ServiceContext,
  projectId: string,
  groupId: string,
  input: CreateIssueInput,
  actor: UserActor,
): Promise<IssueLinksTable> {
  const group = found(await findFailureGroup(ctx.db, projectId, groupId), 'The error group');
  const tracker = await trackerOf(ctx, projectId);
  const project = found(await findProject(ctx.db, projectId), 'The project');
  const [latest] = await latestOccurrences(ctx.db, groupId, 1);
  const run = latest ? await findRun(ctx.db, latest.run_id) : undefined;
  const steps = run ? await stepLines(ctx, run.id) : undefined;
  const title = input.title ?? `${group.title}`.slice(0, 250);
  const issue = issueOf(ctx, { note: input.note, group, run, steps, projectKey: project.key }, title);
  const created = await filed(tracker, () => clientOf(ctx, tracker).create(issue));
  return storeLink(ctx, tracker, created, { projectId, groupId, runId: null }, actor);
}

/** Files an issue for a run's failure on its project's tracker. */
export async function createRunIssue(
  ctx: ServiceContext,
  runId: string,
  input: CreateIssueInput,
  actor: UserActor,
): Promise<IssueLinksTable> {
  const run = found(await findRun(ctx.db, runId), 'The test run');
  const tracker = await trackerOf(ctx, run.project_id);
  const project = found(await findProject(ctx.db, run.project_id), 'The project');
  const [group] = await groupsOfRun(ctx.db, runId);
  const steps = await stepLines(ctx, runId);
  const title = input.title ?? `${run.name}: ${group?.title ?? run.verdict ?? run.status}`.slice(0, 250);
  const issue = issueOf(ctx, { note: input.note, group, run, steps, projectKey: project.key }, title);
  const created = await filed(tracker, () => clientOf(ctx, tracker).create(issue));
  return storeLink(ctx, tracker, created, { projectId: run.project_id, groupId: null, runId }, actor);
}

/** Reads a link's title and status from its tracker again. */
export async function refreshIssueLink(ctx: ServiceContext, linkId: string): Promise<void> {
  const link = await findIssueLink(ctx.db, linkId);
  if (!link) return;
  const tracker = await findIssueTracker(ctx.db, link.project_id);
  // No tracker any more, or another kind now: the link stays as last read.
  if (!tracker || tracker.kind !== link.tracker) return;
  let issue: TrackedIssue;
  try {
    issue = await clientOf(ctx, tracker).read(link.key);
  } catch (error) {
    throw new Error(masked(`reading issue ${link.key} failed: ${(error as Error).message}`, secretsOf(tracker)));
  }
  await updateIssueLink(ctx.db, link.id, {
    title: issue.title.slice(0, 256) || link.title,
    status: issue.status?.slice(0, 100) ?? null,
    refreshed_at: ctx.clock().toISOString(),
  });
}

/** Queues a refresh of the links not read for an hour. */
export async function sweepIssueLinks(ctx: ServiceContext): Promise<void> {
  const before = new Date(ctx.clock().getTime() - ISSUE_STALE_MS).toISOString();
  const at = ctx.background.time();
  let queued = false;
  for (const link of await staleIssueLinks(ctx.db, before, 100)) {
    queued =
      (await enqueueTask(ctx.db, {
        kind: ISSUE_REFRESH_TASK,
        key: `${ISSUE_REFRESH_TASK}:${link.id}`,
        payload: JSON.stringify({ linkId: link.id }),
        runAt: at,
        now: at,
      })) || queued;
  }
  if (queued) {
    ctx.background.announce();
    ctx.background.wake();
  }
}

/** Registers the refresh and its sweep with the background runner. */
export function handleIssueTasks(ctx: ServiceContext): void {
  ctx.background.handle(ISSUE_REFRESH_TASK, (task: Task) => refreshIssueLink(ctx, (task.payload as { linkId: string }).linkId));
  ctx.background.every(ISSUE_REFRESH_SWEEP_TASK, 3 * ctx.config.integrationsSweepMinutes * 60_000, () => sweepIssueLinks(ctx));
}
