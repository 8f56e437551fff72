import type { Static } from 'typebox';
import type { putForgeSettings as putForgeSettingsEndpoint } from '../../../api/v1/integrations.ts';
import type { Task } from '../../background.ts';
import type { ServiceContext } from '../../context.ts';
import { failedStepsOfRuns, failureCellsOfRuns } from '../../db/repositories/failures.ts';
import {
  deleteForgeSettings as deleteSettingsRow,
  failedRunsOfJob,
  findForgeCheck,
  findForgeSettings,
  saveForgeSettings,
  unsettledChecks,
  updateForgeCheck,
} from '../../db/repositories/integrations.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { Executor, ForgeSettingsTable } from '../../db/types.ts';
import { invalid } from '../../errors.ts';
import { isLibraryFrame, parseFrame, relativeFile } from '../../failures/frames.ts';
import { checkSavedUrl, OutgoingError } from '../../outgoing/request.ts';
import { auditProjectChange } from '../access/audit.ts';
import type { UserActor } from '../actor.ts';
import { getJob, type JobView } from '../records/jobs.ts';
import { integrationFetch, masked } from './fetch.ts';
import { ANNOTATIONS_MAX, commentMarker, type ForgeAnnotation, type ForgeReport, forgeClient } from './forge-clients.ts';
import { FORGE_SYNC_TASK, queueForgeSyncs, wakeForgeSyncs } from './forge-hooks.ts';

// A project's code host and the checks its jobs send there (FORGE-1 to FORGE-4,
// docs/integrations.md). The sync is a background task per job (forge-hooks.ts queues it): it
// reads the job's state as the API derives it and sends it when it differs from what was sent
// last, so a sync run twice, late or out of order sends the job as it is, never an older state.

export type PutForgeSettingsInput = Static<NonNullable<(typeof putForgeSettingsEndpoint)['body']>>;

export const DEFAULT_API_URLS = { github: 'https://api.github.com', gitlab: 'https://gitlab.com/api/v4' } as const;
/** The periodic look at jobs whose final state was not sent: launches that ended by idling, syncs lost with an instance. */
export const FORGE_SWEEP_TASK = 'forge-sweep';

export const getForgeSettings = (ctx: ServiceContext, projectId: string) => findForgeSettings(ctx.db, projectId);

/**
 * An integration's API URL as stored: http(s), without a user name or password (the secret has a
 * field of its own, and the URL is shown), and not written as a loopback, private or other
 * special-purpose address unless the instance allows those: the same judge as webhooks' URLs
 * (`checkSavedUrl`). A name is resolved, and refused, at each call. Trailing slashes dropped.
 */
export function checkedApiUrl(ctx: ServiceContext, text: string, pointer: string): string {
  let url: URL;
  try {
    url = checkSavedUrl(text, ctx.config.integrationsAllowPrivate);
  } catch (error) {
    if (!(error instanceof OutgoingError)) throw error;
    const message = error.message.replace('ATTEST_WEBHOOK_ALLOW_PRIVATE', 'ATTEST_INTEGRATIONS_ALLOW_PRIVATE');
    throw invalid(pointer, error.code === 'invalid_url' ? message.replace(/^The URL /, '').replace(/\.$/, '') : message);
  }
  if (url.username !== '' || url.password !== '') throw invalid(pointer, 'must not hold a user name or password: give the token instead');
  return text.replace(/\/+$/, '');
}

/** Whether two API URLs name the same place: compared as `URL` reads them (host case, default port, trailing slash aside). */
function sameApiUrl(a: string, b: string): boolean {
  const normal = (text: string) => {
    try {
      return new URL(text).href.replace(/\/+$/, '');
    } catch {
      return text;
    }
  };
  return normal(a) === normal(b);
}

/**
 * Where a `PUT` moves a stored integration, if it does: to another kind (which decides the default
 * URL and how the secret is presented) or to another place at its `url` field (`sameApiUrl`).
 */
export function integrationMove<Url extends string>(
  stored: ({ kind: string } & Record<Url, string>) | undefined,
  next: { kind: string } & Record<Url, string>,
  url: Url,
): { from: string; to: string } | undefined {
  return stored && (stored.kind !== next.kind || !sameApiUrl(stored[url], next[url])) ? { from: stored[url], to: next[url] } : undefined;
}

/**
 * A stored secret never follows its integration to another place (FORGE-8): when a `PUT` changes
 * where the secret would be sent (the kind, which decides the default URL and how the secret is
 * presented, or the URL itself) and would keep the stored secret, it is refused. Whoever moves the
 * integration gives the secret again, so one set for a tracker is never sent to a host chosen later
 * by someone who never held it. Admins too: the rule has no exception, so no account can take a
 * secret it was never given by pointing its integration at a host of its own.
 */
export function assertSecretStays(
  moved: { from: string; to: string } | undefined,
  keeps: { pointer: string; what: string } | undefined,
): void {
  if (!moved || !keeps) return;
  throw invalid(
    keeps.pointer,
    `is required when the integration moves (${moved.from} → ${moved.to}): the stored ${keeps.what} was given for ${moved.from} and is never sent anywhere else`,
  );
}

/** The settings row a put makes: secrets left out keep the stored ones, the other method's are dropped. */
function forgeRow(
  ctx: ServiceContext,
  put: { projectId: string; input: PutForgeSettingsInput; apiUrl: string; actor: UserActor },
  stored: ForgeSettingsTable | undefined,
): ForgeSettingsTable {
  const { projectId, input, apiUrl, actor } = put;
  const auth = input.auth ?? 'token';
  return {
    project_id: projectId,
    kind: input.kind,
    api_url: apiUrl,
    auth,
    token: auth === 'token' ? (input.token ?? stored?.token ?? null) : null,
    app_id: auth === 'app' ? (input.appId ?? stored?.app_id ?? null) : null,
    private_key: auth === 'app' ? (input.privateKey ?? stored?.private_key ?? null) : null,
    installation_id: auth === 'app' ? (input.installationId ?? stored?.installation_id ?? null) : null,
    check_name: input.checkName ?? 'Attest',
    pull_request_comment: input.pullRequestComment ? 1 : 0,
    enabled: input.enabled === false ? 0 : 1,
    updated_at: ctx.clock().toISOString(),
    updated_by: actor.userId,
  };
}

/** Each secret the method needs is given or stored. */
function assertSecretsGiven(row: ForgeSettingsTable): void {
  if (row.auth === 'token' && row.token === null) throw invalid('/body/token', 'is required: no token is stored yet');
  if (row.auth === 'app') {
    if (row.app_id === null) throw invalid('/body/appId', 'is required for a GitHub App');
    if (row.installation_id === null) throw invalid('/body/installationId', 'is required for a GitHub App');
    if (row.private_key === null) throw invalid('/body/privateKey', 'is required: no private key is stored yet');
  }
}

/**
 * Sets the project's code host. Secrets left out keep the stored ones (write-only fields); a
 * switch of method drops the other method's secret, so nothing unused is kept.
 */
export async function putForgeSettings(
  ctx: ServiceContext,
  projectId: string,
  input: PutForgeSettingsInput,
  actor: UserActor,
): Promise<ForgeSettingsTable> {
  const auth = input.auth ?? 'token';
  if (input.kind === 'gitlab' && auth === 'app') throw invalid('/body/auth', 'app is for GitHub; GitLab takes a token');
  const apiUrl = checkedApiUrl(ctx, input.apiUrl ?? DEFAULT_API_URLS[input.kind], '/body/apiUrl');
  return inTransaction(ctx.db, async (trx) => {
    const stored = await findForgeSettings(trx, projectId);
    const row = forgeRow(ctx, { projectId, input, apiUrl, actor }, stored);
    const moved = integrationMove(stored, row, 'api_url');
    // A GitHub App's key never leaves Attest, but the JWTs it signs buy installation tokens: it is a secret sent all the same.
    assertSecretStays(
      moved,
      row.token !== null && input.token === undefined
        ? { pointer: '/body/token', what: 'token' }
        : row.private_key !== null && input.privateKey === undefined
          ? { pointer: '/body/privateKey', what: "GitHub App's private key" }
          : undefined,
    );
    assertSecretsGiven(row);
    await saveForgeSettings(trx, row);
    // Never the secrets: only whether they changed.
    await auditProjectChange(ctx, trx, actor, projectId, 'forge.set', {
      kind: row.kind,
      apiUrl: row.api_url,
      auth: row.auth,
      tokenChanged: input.token !== undefined,
      privateKeyChanged: input.privateKey !== undefined,
      // Where the secrets went before, when this moved them (FORGE-8).
      ...(moved ? { movedFrom: { kind: stored?.kind, apiUrl: moved.from } } : {}),
    });
    return row;
  });
}

export const deleteForgeSettings = (ctx: ServiceContext, projectId: string, actor: UserActor): Promise<void> =>
  deleteIntegration(ctx, projectId, actor, 'forge.delete', deleteSettingsRow);

/** Deletes a project's code host or issue tracker (`remove`), audited when there was one: deleting none changes nothing. */
export async function deleteIntegration(
  ctx: ServiceContext,
  projectId: string,
  actor: UserActor,
  action: 'forge.delete' | 'issue-tracker.delete',
  remove: (trx: Executor, projectId: string) => Promise<boolean>,
): Promise<void> {
  await inTransaction(ctx.db, async (trx) => {
    if (!(await remove(trx, projectId))) return;
    await auditProjectChange(ctx, trx, actor, projectId, action);
  });
}

/** Registers the sync and the sweep with the background runner (from the catalogue, background-tasks.ts). */
export function handleForgeTasks(ctx: ServiceContext): void {
  ctx.background.handle(FORGE_SYNC_TASK, (task: Task) => syncForgeCheck(ctx, (task.payload as { jobId: string }).jobId));
  ctx.background.every(FORGE_SWEEP_TASK, ctx.config.integrationsSweepMinutes * 60_000, () => sweepForgeChecks(ctx));
}

/** Queues a sync of every check whose final state was not sent; a sync that finds nothing new sends nothing. */
export async function sweepForgeChecks(ctx: ServiceContext): Promise<void> {
  const jobIds = await unsettledChecks(ctx.db, 500);
  wakeForgeSyncs(ctx, await queueForgeSyncs(ctx, ctx.db, jobIds, 0));
}

/**
 * Sends a job's state to its code host when it differs from what was sent last. A failure is
 * recorded on the check (secrets masked) and thrown, so the runner retries with backoff.
 */
export async function syncForgeCheck(ctx: ServiceContext, jobId: string): Promise<void> {
  const check = await findForgeCheck(ctx.db, jobId);
  if (!check || check.settled === 1) return;
  const settings = await findForgeSettings(ctx.db, check.project_id);
  const now = () => ctx.clock().toISOString();
  if (settings?.enabled !== 1) {
    // Removed or switched off since: nothing is sent, and the sweep stops looking at it.
    await updateForgeCheck(ctx.db, jobId, { settled: 1, last_error: 'the project has no code host enabled', updated_at: now() });
    return;
  }
  const view = await getJob(ctx, jobId);
  const report = await reportOf(ctx, view);
  const progress = view.state.progress;
  const signature = [report.status, report.conclusion, progress.total, progress.running, progress.completed, progress.aborted].join('|');
  if (signature === check.synced) return;

  const secrets = [settings.token, settings.private_key];
  const fetcher = integrationFetch({ allowPrivate: ctx.config.integrationsAllowPrivate, boundTo: settings.api_url, secrets });
  const client = forgeClient(settings, fetcher, ctx.clock);
  const target = { repository: check.repository, commitSha: check.commit_sha, checkRunId: check.check_run_id };
  try {
    const checkRunId = await client.report(target, report);
    // Kept before the comment: a retry after a failed comment updates this check run, never makes a second.
    if (checkRunId !== check.check_run_id) await updateForgeCheck(ctx.db, jobId, { check_run_id: checkRunId, updated_at: now() });
    if (report.status === 'completed' && settings.pull_request_comment === 1) {
      await client.comment({ ...target, checkRunId }, commentMarker(check.project_id), commentOf(view, report));
    }
    await updateForgeCheck(ctx.db, jobId, {
      synced: signature,
      settled: report.status === 'completed' ? 1 : 0,
      last_error: null,
      updated_at: now(),
    });
  } catch (error) {
    const message = masked((error as Error).message, secrets);
    await updateForgeCheck(ctx.db, jobId, { last_error: message, updated_at: now() });
    throw new Error(`the code host refused job ${jobId}'s check: ${message}`);
  }
}

const jobUrl = (ctx: ServiceContext, jobId: string) => (ctx.config.publicUrl ? `${ctx.config.publicUrl}/jobs/${jobId}` : null);
const runUrl = (ctx: ServiceContext, runId: string) => (ctx.config.publicUrl ? `${ctx.config.publicUrl}/runs/${runId}` : null);

/** The job's state as the code host shows it: status, conclusion, a summary and the failures as annotations. */
export async function reportOf(ctx: ServiceContext, view: JobView): Promise<ForgeReport> {
  const { state, row } = view;
  const tests = state.progress.tests;
  const done = state.status === 'completed' || state.status === 'cancelled';
  const failed = tests.failed + tests.broken;
  const conclusion = !done
    ? null
    : state.status === 'cancelled'
      ? 'cancelled'
      : failed > 0
        ? 'failure'
        : tests.total === 0 || tests.skipped === tests.total
          ? 'neutral'
          : 'success';
  const title = !done
    ? state.status === 'queued'
      ? `${tests.total} tests queued`
      : `${state.progress.completed + state.progress.aborted} of ${state.progress.total} runs finished`
    : state.status === 'cancelled'
      ? 'Cancelled'
      : failed > 0
        ? `${failed} of ${tests.total} tests failed`
        : `${tests.passed + tests.flaky} of ${tests.total} tests passed`;
  const annotations = done ? await annotationsOf(ctx, row.id) : [];
  const lines = [
    `**${row.name}**: ${title}.`,
    '',
    '| Passed | Failed | Broken | Flaky | Skipped | Unfinished |',
    '|---:|---:|---:|---:|---:|---:|',
    `| ${tests.passed} | ${tests.failed} | ${tests.broken} | ${tests.flaky} | ${tests.skipped} | ${tests.unfinished} |`,
  ];
  if (annotations.length > 0) {
    lines.push('', '**Failures**', '');
    for (const a of annotations.slice(0, 20)) lines.push(`- ${escapeMarkdown(a.title)}: ${escapeMarkdown(a.message.split('\n')[0] ?? '')}`);
    if (failed > 20) lines.push(`- … and ${failed - 20} more`);
  }
  const url = jobUrl(ctx, row.id);
  if (url) lines.push('', `[Open the job in Attest](${url})`);
  return {
    status: done ? 'completed' : state.status === 'queued' ? 'queued' : 'in_progress',
    conclusion,
    startedAt: state.startedAt,
    completedAt: done ? (state.finishedAt ?? row.cancelled_at ?? ctx.clock().toISOString()) : null,
    title,
    summary: lines.join('\n'),
    annotations,
    detailsUrl: url,
    externalId: row.id,
  };
}

/** The pull-request comment: the job's summary under a heading with its verdict. */
function commentOf(view: JobView, report: ForgeReport): string {
  const verdict = report.conclusion === 'success' ? '✅' : report.conclusion === 'failure' ? '❌' : '⚪';
  const commit = view.request.commit ?? '';
  return [
    `### ${verdict} Attest: ${escapeMarkdown(view.row.name)}`,
    '',
    report.summary,
    '',
    `<sub>Commit ${escapeMarkdown(commit)}. One comment per project, updated by each of its jobs on this pull request.</sub>`,
  ].join('\n');
}

const escapeMarkdown = (text: string) => text.replace(/[\\`*_[\]<>|]/g, (c) => `\\${c}`).slice(0, 300);

/** Where a trace points into the project: the innermost project frame that names a line. */
export function locationOf(trace: string): { path: string; line: number } | undefined {
  for (const raw of trace.split('\n')) {
    const frame = parseFrame(raw);
    if (!frame?.file || isLibraryFrame(frame)) continue;
    const line = /:(\d+)(?::\d+)?\)?\s*$/.exec(raw)?.[1] ?? /line (\d+)/.exec(raw)?.[1];
    if (line === undefined) continue;
    return { path: relativeFile(frame.file, []), line: Number(line) };
  }
  return undefined;
}

/** One annotation per failed run (at most GitHub's 50): at its trace's file and line, else under the test's name. */
async function annotationsOf(ctx: ServiceContext, jobId: string): Promise<ForgeAnnotation[]> {
  const runs = await failedRunsOfJob(ctx.db, jobId, ANNOTATIONS_MAX);
  if (runs.length === 0) return [];
  const ids = runs.map((r) => r.id);
  const [steps, cells] = await Promise.all([failedStepsOfRuns(ctx.db, ids), failureCellsOfRuns(ctx.db, ids)]);
  return runs.map((run) => {
    const step = steps.find((s) => s.run_id === run.id && s.error_message);
    const traces = cells.filter((c) => c.run_id === run.id).map((c) => c.text);
    const message = (run.group_title ?? step?.error_message ?? `The test ${run.verdict}.`).slice(0, 4000);
    const location = [step?.error_message ?? '', ...traces].map(locationOf).find((l) => l !== undefined);
    const link = runUrl(ctx, run.id);
    return {
      path: location?.path ?? run.name,
      line: location?.line ?? 1,
      title: run.name.slice(0, 255),
      message: link ? `${message}\n\n${link}` : message,
    };
  });
}
