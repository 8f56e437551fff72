import type { Static } from 'typebox';
import type { BodyOf } from '../../../api/endpoint.ts';
import type { FailureRule as FailureRuleSchema, FailureTriage, putFailureRules as putRulesEndpoint } from '../../../api/v1/failures.ts';
import { LATEST_OCCURRENCES_MAX, TREND_DAYS } from '../../../api/v1/failures.ts';
import type { ServiceContext } from '../../context.ts';
import type { Page, PageRequest } from '../../db/pagination.ts';
import {
  findFailureGroup,
  findFailureGroups,
  type GroupFilter,
  type GroupSort,
  type GroupTriageChanges,
  groupsOfRun,
  latestOccurrences,
  listFailureGroups as listGroupRows,
  type OccurrenceRow,
  occurrencesPerDay,
  screenshotsOfRuns,
  setFailureRules,
  untriagedGroups,
  updateFailureGroups,
} from '../../db/repositories/failure-groups.ts';
import { failureCellsOfRuns } from '../../db/repositories/failures.ts';
import { findProject } from '../../db/repositories/projects.ts';
import { inTransaction } from '../../db/repositories/transaction.ts';
import type { Executor, FailureGroupsTable } from '../../db/types.ts';
import { AppError, found, invalid } from '../../errors.ts';
import { type FailureRule, firstMatchingRule, type RuleStatus, ruleProblems } from '../../failures/rules.ts';
import { auditBy, auditProjectChange } from '../access/audit.ts';
import type { Actor } from '../access/users.ts';
import { checkedCiUrl } from '../records/ci-url.ts';
import { rulesOf } from './failure-recording.ts';

// Error groups as the API serves them (TRIAGE-2), their triage (TRIAGE-3) and the category rules.

export type TriageInput = Static<typeof FailureTriage>;
export type RulesInput = BodyOf<typeof putRulesEndpoint>;

export interface ListGroupsQuery extends GroupFilter {
  sort?: GroupSort;
}

/** A project's groups, narrowed and sorted as asked. */
export function listFailureGroups(
  ctx: ServiceContext,
  projectId: string,
  query: ListGroupsQuery,
  page: PageRequest,
): Promise<Page<FailureGroupsTable>> {
  const { sort, ...filter } = query;
  // Stored times are toISOString() text; the bound is normalised to compare as a time.
  const since = filter.since === undefined ? undefined : new Date(filter.since).toISOString();
  return listGroupRows(ctx.db, projectId, { ...filter, since }, sort ?? 'lastSeen', page);
}

export interface Occurrence extends OccurrenceRow {
  screenshot_id: string | null;
}

export interface GroupDetails {
  group: FailureGroupsTable;
  latest: Occurrence[];
  trend: { day: string; occurrences: number }[];
}

/** A group of the project (another project's answers 404), with its latest occurrences and its trend. */
export async function getFailureGroup(ctx: ServiceContext, projectId: string, groupId: string): Promise<GroupDetails> {
  const group = found(await findFailureGroup(ctx.db, projectId, groupId), 'The error group');
  const latest = await latestOccurrences(ctx.db, groupId, LATEST_OCCURRENCES_MAX);
  // One screenshot per occurrence: the failing step's, else the run's last.
  const shots = await screenshotsOfRuns(ctx.db, [...new Set(latest.map((o) => o.run_id))]);
  const withShots = latest.map((occurrence) => {
    const ofRun = shots.filter((shot) => shot.run_id === occurrence.run_id);
    const shot = ofRun.find((s) => occurrence.step_id !== null && s.step_id === occurrence.step_id) ?? ofRun[0];
    return { ...occurrence, screenshot_id: shot?.id ?? null };
  });
  const today = new Date(ctx.clock().toISOString().slice(0, 10));
  const first = new Date(today.getTime() - (TREND_DAYS - 1) * 86_400_000);
  const perDay = await occurrencesPerDay(ctx.db, groupId, first.toISOString());
  const trend = Array.from({ length: TREND_DAYS }, (_, i) => {
    const day = new Date(first.getTime() + i * 86_400_000).toISOString().slice(0, 10);
    return { day, occurrences: perDay.get(day) ?? 0 };
  });
  return { group, latest: withShots, trend };
}

/** The groups of a run's failure and its failed steps. */
export const groupsOfRunFailures = (ctx: ServiceContext, runId: string): Promise<FailureGroupsTable[]> => groupsOfRun(ctx.db, runId);

/** The row changes of a triage; null clears a text field. Any triage marks the group as triaged by hand. */
function triageChanges(input: TriageInput, actor: Actor, now: string): GroupTriageChanges {
  const changes: GroupTriageChanges = { triaged_at: now, triaged_by: actor.userId, updated_at: now };
  if (input.defectType !== undefined) changes.defect_type = input.defectType;
  if (input.comment !== undefined) changes.comment = input.comment;
  if (input.issueUrl !== undefined) changes.issue_url = input.issueUrl === null ? null : checkedCiUrl(input.issueUrl, '/body/issueUrl');
  if (input.assignee !== undefined) changes.assignee = input.assignee;
  if (input.status !== undefined) changes.status = input.status;
  return changes;
}

async function triage(
  ctx: ServiceContext,
  trx: Executor,
  projectId: string,
  groupIds: readonly string[],
  input: TriageInput,
  actor: Actor,
): Promise<FailureGroupsTable[]> {
  const groups = await findFailureGroups(trx, projectId, groupIds);
  if (groups.length !== groupIds.length) throw new AppError('NOT_FOUND', 'The error group was not found.');
  const changes = triageChanges(input, actor, ctx.clock().toISOString());
  await updateFailureGroups(trx, groupIds, changes);
  for (const group of groups) {
    await auditBy(ctx, trx, actor, {
      action: 'failure-group.triage',
      targetType: 'failure-group',
      targetId: group.id,
      details: { projectId, changes: input },
    });
  }
  const byId = new Map((await findFailureGroups(trx, projectId, groupIds)).map((group) => [group.id, group]));
  return groupIds.map((id) => byId.get(id) as FailureGroupsTable);
}

/** Triages one group of the project; later failures with its fingerprint arrive triaged. */
export async function triageFailureGroup(
  ctx: ServiceContext,
  projectId: string,
  groupId: string,
  input: TriageInput,
  actor: Actor,
): Promise<FailureGroupsTable> {
  const [group] = await inTransaction(ctx.db, (trx) => triage(ctx, trx, projectId, [groupId], input, actor));
  return group as FailureGroupsTable;
}

/** Triages several groups of the project in one transaction: all of them, or none when one is unknown. */
export function triageFailureGroups(
  ctx: ServiceContext,
  projectId: string,
  groupIds: readonly string[],
  input: TriageInput,
  actor: Actor,
): Promise<FailureGroupsTable[]> {
  return inTransaction(ctx.db, (trx) => triage(ctx, trx, projectId, groupIds, input, actor));
}

/** The project's rules, in order. */
export async function getFailureRules(ctx: ServiceContext, projectId: string): Promise<FailureRule[]> {
  const project = found(await findProject(ctx.db, projectId), 'The project');
  return rulesOf(project.failure_rules);
}

/** A rule as stored: the fields Attest reads, Allure's statuses other than failed and broken dropped. */
function storedRule(rule: Static<typeof FailureRuleSchema> | Record<string, unknown>): FailureRule {
  const { name, messageRegex, traceRegex, matchedStatuses, defectType } = rule as Static<typeof FailureRuleSchema> & {
    matchedStatuses?: string[];
  };
  const stored: FailureRule = { name };
  if (messageRegex !== undefined) stored.messageRegex = messageRegex;
  if (traceRegex !== undefined) stored.traceRegex = traceRegex;
  if (matchedStatuses !== undefined) {
    stored.matchedStatuses = [...new Set(matchedStatuses.filter((s): s is RuleStatus => s === 'failed' || s === 'broken'))];
  }
  if (defectType !== undefined) stored.defectType = defectType;
  return stored;
}

/**
 * Replaces the project's rules (`{ rules }` or Allure's categories.json array), refusing regexes
 * that are not RE2 syntax, and names again every group not triaged by hand: from its message as first written and
 * the verdict of its last run. A trace regex needs the trace, which a group does not keep: it is
 * read from the last run's cells while that run is stored; without it such a rule does not match.
 */
export async function putFailureRules(ctx: ServiceContext, projectId: string, input: RulesInput, actor: Actor): Promise<FailureRule[]> {
  const given = Array.isArray(input) ? input : input.rules;
  const pointer = Array.isArray(input) ? '/body' : '/body/rules';
  const rules = given.map(storedRule);
  const [problem] = ruleProblems(rules);
  if (problem) throw invalid(`${pointer}/${problem.index}/${problem.field}`, problem.message);
  await inTransaction(ctx.db, async (trx) => {
    await setFailureRules(trx, projectId, rules.length === 0 ? null : JSON.stringify(rules));
    await renameGroups(trx, projectId, rules, ctx.clock().toISOString());
    await auditProjectChange(ctx, trx, actor, projectId, 'failure-rules.set', {
      rules: rules.length,
      names: rules.map((rule) => rule.name),
    });
  });
  return rules;
}

/** Applies the rules again to the project's groups not triaged by hand. */
async function renameGroups(trx: Executor, projectId: string, rules: readonly FailureRule[], now: string): Promise<void> {
  const groups = await untriagedGroups(trx, projectId);
  const traces = rules.some((rule) => rule.traceRegex !== undefined) ? await tracesOf(trx, groups) : new Map<string, string>();
  const changed = new Map<string, string[]>(); // rule name + defect type → groups
  for (const group of groups) {
    const status: RuleStatus = group.verdict === 'broken' ? 'broken' : 'failed';
    const rule = firstMatchingRule(rules, { message: group.message, trace: traces.get(group.id) ?? null, status });
    const name = rule?.name ?? null;
    const defectType = rule?.defectType ?? 'to_investigate';
    if (name === group.rule && defectType === group.defect_type) continue;
    const key = JSON.stringify([name, defectType]);
    const list = changed.get(key);
    if (list) list.push(group.id);
    else changed.set(key, [group.id]);
  }
  for (const [key, ids] of changed) {
    const [rule, defectType] = JSON.parse(key) as [string | null, FailureGroupsTable['defect_type']];
    await updateFailureGroups(trx, ids, { rule, defect_type: defectType, updated_at: now });
  }
}

/** The trace of each group's last occurrence, when its run is still stored: its step's own trace cell, or the run's error cell. */
async function tracesOf(trx: Executor, groups: Awaited<ReturnType<typeof untriagedGroups>>): Promise<Map<string, string>> {
  const cells = await failureCellsOfRuns(trx, [...new Set(groups.filter((g) => g.verdict !== null).map((g) => g.run_id))]);
  const first = new Map<string, string>(); // run + step (none for run-level) → the first such cell, in position order
  for (const cell of cells) {
    const key = `${cell.run_id}\u0000${cell.step_id ?? ''}`;
    if (!first.has(key)) first.set(key, cell.text);
  }
  const traces = new Map<string, string>();
  for (const group of groups) {
    const text = first.get(`${group.run_id}\u0000${group.step_id ?? ''}`);
    if (text !== undefined) traces.set(group.id, text);
  }
  return traces;
}
