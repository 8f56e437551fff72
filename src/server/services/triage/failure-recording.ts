import { randomUUID } from 'node:crypto';
import type { ServiceContext } from '../../context.ts';
import {
  addGroupReach,
  countIntoGroup,
  ensureFailureGroups,
  FAILURE_CELL_NAMES,
  type FailedStep,
  type FailureCell,
  failedStepsOfRuns,
  failedTestsOfJobByGroup,
  failureCellsOfRuns,
  type GroupCounting,
  insertOccurrences,
  lockIncidentsOfJobs,
  setFailureGroupIds,
  setJobIncident,
  triageOfProjects,
} from '../../db/repositories/failures.ts';
import type {
  Executor,
  FailureGroupBranchesTable,
  FailureGroupsTable,
  FailureGroupTestsTable,
  FailureOccurrencesTable,
  TestRunsTable,
} from '../../db/types.ts';
import { LIMITS, type NormalisedFailure, normaliseFailure } from '../../failures/normalise.ts';
import { type FailureRule, firstMatchingRule } from '../../failures/rules.ts';
import { triageSettingsOf } from './settings.ts';

// Error groups of completed runs (TRIAGE-2, docs/triage.md), inside the transaction that completes
// them: each failed or broken step with a message, and each failed run, gets the group of its
// normalised error; groups are found or created, occurrences added and counters kept; then the
// outage guard (TRIAGE-4) looks again at each job the runs belong to.

/** A run whose failure says nothing at all. */
export const NO_MESSAGE = 'Failed without an error message';

/** Names of a step's own cells that hold its trace, and of the run-level cells that hold a run's own error. */
const TRACE_CELLS = new Set(['trace', 'stack', 'failure', 'error']);
const RUN_ERROR_CELLS = new Set(['error', 'failure']);

type FailingVerdict = 'failed' | 'broken';

/** One failure to group: what was normalised, and what a category rule reads. */
interface Failure {
  normalised: NormalisedFailure;
  message: string;
  trace: string | null;
}

/** The run's key in a job: its test, else its name (docs/triage.md, "Test key"). */
export const testKeyOf = (run: Pick<TestRunsTable, 'test_id' | 'name'>) => run.test_id ?? `name:${run.name}`;

/** The stored rule set of a project (written by the rules service, already checked). */
export function rulesOf(stored: string | null): FailureRule[] {
  if (stored === null) return [];
  try {
    const rules: unknown = JSON.parse(stored);
    return Array.isArray(rules) ? (rules as FailureRule[]) : [];
  } catch {
    return [];
  }
}

/**
 * The run's failing steps and its own failure, normalised. Steps in position order (a parent before
 * its children). The run's failure: its run-level `error` or `failure` cell, else the innermost step
 * on the chain of first failed steps that carries a message, else any failed step's, else none.
 */
function failuresOfRun(
  steps: readonly FailedStep[],
  cells: readonly FailureCell[],
  normalise: (message: string, trace: string | null) => Failure,
): { steps: { step: FailedStep; failure: Failure }[]; run: Failure } {
  const traceOf = new Map<string, string>();
  let runError: string | undefined;
  for (const cell of cells) {
    if (cell.step_id === null) {
      if (runError === undefined && RUN_ERROR_CELLS.has(cell.name) && cell.text.trim() !== '') runError = cell.text;
    } else if (!traceOf.has(cell.step_id) && TRACE_CELLS.has(cell.name)) traceOf.set(cell.step_id, cell.text);
  }
  const stepFailures = new Map<string, Failure>();
  const withFailures: { step: FailedStep; failure: Failure }[] = [];
  for (const step of steps) {
    const message = step.error_message?.trim() ? step.error_message : undefined;
    if (message === undefined) continue;
    const failure = normalise(message, traceOf.get(step.id) ?? null);
    stepFailures.set(step.id, failure);
    withFailures.push({ step, failure });
  }
  if (runError !== undefined) return withRicherEvidence(withFailures, normalise(runError, null));
  // The chain of first failed steps, from the first failed root down: its innermost failure with a message is the cause.
  const failedIds = new Set(steps.map((step) => step.id));
  const firstChild = new Map<string | null, FailedStep>();
  for (const step of steps) {
    const parent = step.parent_id !== null && failedIds.has(step.parent_id) ? step.parent_id : step.depth <= 1 ? null : undefined;
    if (parent !== undefined && !firstChild.has(parent)) firstChild.set(parent, step);
  }
  let cause: Failure | undefined;
  for (let step = firstChild.get(null); step !== undefined; step = firstChild.get(step.id)) {
    cause = stepFailures.get(step.id) ?? cause;
  }
  return withRicherEvidence(withFailures, cause ?? withFailures[0]?.failure ?? normalise(NO_MESSAGE, null));
}

/**
 * One cause, one group (TRIAGE-2): a failure of the run without frames that states what another
 * of its failures states, about the same target, with frames, is that failure. Playwright gives a
 * step's error without its stack and the run's `error` cell with it, so the step that failed and
 * the run it failed are one cause, filed under the group with the richer evidence. The run's own
 * failure is preferred among those with frames; failures with different frames stay apart (they
 * fail at different places).
 */
function withRicherEvidence(
  steps: { step: FailedStep; failure: Failure }[],
  run: Failure,
): { steps: { step: FailedStep; failure: Failure }[]; run: Failure } {
  const causeOf = (failure: Failure) => `${failure.normalised.message}\u0000${failure.normalised.signature.target ?? ''}`;
  const framed = new Map<string, Failure>();
  for (const failure of [run, ...steps.map((entry) => entry.failure)]) {
    if (failure.normalised.frames.length > 0 && !framed.has(causeOf(failure))) framed.set(causeOf(failure), failure);
  }
  if (framed.size === 0) return { steps, run };
  const richest = (failure: Failure) => (failure.normalised.frames.length > 0 ? failure : (framed.get(causeOf(failure)) ?? failure));
  return { steps: steps.map(({ step, failure }) => ({ step, failure: richest(failure) })), run: richest(run) };
}

/** A group row for a failure first seen in `run`, named by the project's rules. */
function newGroup(run: TestRunsTable, failure: Failure, rules: readonly FailureRule[], now: string): FailureGroupsTable {
  const rule = firstMatchingRule(rules, { message: failure.message, trace: failure.trace, status: run.verdict as FailingVerdict });
  return groupRowOf(randomUUID(), run, failure, rule, now);
}

/** The row of group `id` for a failure first seen in `run`, named by `rule` (the scale data set draws its own ids). */
export function groupRowOf(
  id: string,
  run: TestRunsTable,
  failure: Pick<Failure, 'message' | 'normalised'>,
  rule: FailureRule | undefined,
  now: string,
): FailureGroupsTable {
  const { normalised } = failure;
  const at = run.finished_at ?? now;
  return {
    id,
    project_id: run.project_id,
    fingerprint: normalised.fingerprint,
    title: normalised.title,
    message: failure.message.slice(0, LIMITS.messageChars),
    frames: JSON.stringify(normalised.frames.map((frame) => `${frame.file}:${frame.function}`)),
    category: normalised.signature.category,
    action: normalised.signature.action?.slice(0, 1000) ?? null,
    target: normalised.signature.target?.slice(0, 1000) ?? null,
    rule: rule?.name ?? null,
    status: 'new',
    defect_type: rule?.defectType ?? 'to_investigate',
    comment: null,
    issue_url: null,
    assignee: null,
    first_seen_at: at,
    first_seen_run_id: run.id,
    first_seen_job_id: run.job_id,
    last_seen_at: at,
    last_seen_run_id: run.id,
    last_seen_job_id: run.job_id,
    occurrences: 0,
    affected_tests: 0,
    affected_branches: 0,
    triaged_at: null,
    triaged_by: null,
    created_at: now,
    updated_at: now,
  };
}

/** How a group's counters and status move with the occurrences just recorded (docs/triage.md, steps 3 and 4). */
function counting(
  group: FailureGroupsTable,
  occurrences: readonly FailureOccurrencesTable[],
  reach: { tests: number; branches: number },
  now: string,
): GroupCounting {
  const changes: GroupCounting['changes'] = { updated_at: now };
  let latest: FailureOccurrencesTable | undefined;
  for (const occurrence of occurrences) if (!latest || occurrence.at >= latest.at) latest = occurrence;
  if (latest && (latest.at > group.last_seen_at || (group.occurrences === 0 && latest.run_id !== group.last_seen_run_id))) {
    Object.assign(changes, { last_seen_at: latest.at, last_seen_run_id: latest.run_id, last_seen_job_id: latest.job_id });
  }
  // A run without a job is a job of its own; the first run is the first job.
  const inSecondJob = occurrences.some(
    (o) => o.run_id !== group.first_seen_run_id && (group.first_seen_job_id === null || o.job_id !== group.first_seen_job_id),
  );
  if (group.status === 'resolved') changes.status = 'regressed';
  else if (group.status === 'new' && inSecondJob) changes.status = 'known';
  return { id: group.id, occurrencesAdded: occurrences.length, testsAdded: reach.tests, branchesAdded: reach.branches, changes };
}

const push = <K, V>(map: Map<K, V[]>, key: K, value: V) => {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
};

/**
 * Records the failures of the runs just completed (any path: a PATCH, a run posted finished, an
 * import's batch), in their transaction. Sets `failure_group_id` on the failing rows given too, so
 * the caller answers with it. Passed and skipped runs cost nothing unless they are retries in a job
 * (a passing retry can end a test's failure, so the job's incident is looked at again). Answers
 * the ids of the jobs whose incident changed (set, moved or cleared): the health of their tests
 * changes with it (an incident job's runs count for nothing in flaky scores).
 */
export async function recordFailures(
  ctx: ServiceContext,
  trx: Executor,
  runs: readonly TestRunsTable[],
  projects: ReadonlyMap<string, ProjectTriage>,
  options: { written?: WrittenResults; incidents?: 'now' | 'when-the-job-ends' } = {},
): Promise<string[]> {
  const failing = runs.filter((run) => run.status === 'completed' && (run.verdict === 'failed' || run.verdict === 'broken'));
  const retried = runs.filter((run) => run.status === 'completed' && run.attempt > 0 && run.job_id !== null);
  if (failing.length === 0 && retried.length === 0) return [];
  const now = ctx.clock().toISOString();
  if (failing.length > 0) await recordGroups(trx, failing, projects, now, options.written);
  if (options.incidents === 'when-the-job-ends') return [];
  return refreshIncidents(trx, [...failing, ...retried], projects);
}

/**
 * The outage guard of one job looked at once, when it ends: an import writes its job a batch at a
 * time, and counting the job's failed tests after every batch cost the failures written so far,
 * each time (a 150,000-case import read its failures 600 times). Answers the job's id when its
 * incident changed.
 */
export async function settleIncident(trx: Executor, jobId: string): Promise<string[]> {
  const [job] = await lockIncidentsOfJobs(trx, [jobId]);
  if (!job) return [];
  const projects = new Map((await triageOfProjects(trx, [job.project_id])).map((row) => [row.id, row]));
  return refreshIncidentsOf(trx, [job], projects);
}

/** A project's rules and triage settings, as `triageOfProjects` reads them. */
export type ProjectTriage = Awaited<ReturnType<typeof triageOfProjects>>[number];

/** A failing run with the failures found in it: its steps' and its own. */
interface RunFailures {
  run: TestRunsTable;
  steps: { step: FailedStep; failure: Failure }[];
  runFailure: Failure;
}

/** The failures of each failing run, from its failed steps and failure cells. */
/**
 * Every step and cell of the runs, as the caller wrote them in this transaction (an import's batch
 * has them in hand), in position order per run: read from them rather than from the database.
 */
export interface WrittenResults {
  steps: readonly FailedStep[];
  cells: readonly FailureCell[];
}

/** The failed steps and the failure cells of the runs, in position order per run: from `written`, else read. */
async function failureRowsOfRuns(
  trx: Executor,
  runIds: readonly string[],
  written: WrittenResults | undefined,
): Promise<{ steps: readonly FailedStep[]; cells: readonly FailureCell[] }> {
  if (!written) return { steps: await failedStepsOfRuns(trx, runIds), cells: await failureCellsOfRuns(trx, runIds) };
  const ids = new Set(runIds);
  const names: readonly string[] = FAILURE_CELL_NAMES;
  return {
    steps: written.steps.filter((step) => ids.has(step.run_id) && (step.status === 'failed' || step.status === 'broken')),
    cells: written.cells.filter((cell) => ids.has(cell.run_id) && names.includes(cell.name)),
  };
}

async function failuresOfRuns(trx: Executor, failing: readonly TestRunsTable[], written?: WrittenResults): Promise<RunFailures[]> {
  const rows = await failureRowsOfRuns(
    trx,
    failing.map((run) => run.id),
    written,
  );
  const stepsByRun = new Map<string, FailedStep[]>();
  for (const step of rows.steps) push(stepsByRun, step.run_id, step);
  const cellsByRun = new Map<string, FailureCell[]>();
  for (const cell of rows.cells) push(cellsByRun, cell.run_id, cell);

  // One normalisation per distinct message and trace: an import's failures often repeat.
  const seen = new Map<string, Failure>();
  const normalise = (message: string, trace: string | null): Failure => {
    const key = `${message}\u0000${trace ?? ''}`;
    let failure = seen.get(key);
    if (!failure) {
      failure = { normalised: normaliseFailure({ message, trace }), message, trace };
      seen.set(key, failure);
    }
    return failure;
  };
  return failing.map((run) => {
    const found = failuresOfRun(stepsByRun.get(run.id) ?? [], cellsByRun.get(run.id) ?? [], normalise);
    return { run, steps: found.steps, runFailure: found.run };
  });
}

/** The group of each failure, made where it is new (under the project's rules), by project + fingerprint. */
async function groupsOfFailures(
  trx: Executor,
  perRun: readonly RunFailures[],
  projects: ReadonlyMap<string, ProjectTriage>,
  now: string,
): Promise<Map<string, FailureGroupsTable>> {
  const rulesByProject = new Map<string, FailureRule[]>();
  const candidates = new Map<string, Map<string, FailureGroupsTable>>(); // project → fingerprint → new group
  for (const { run, steps, runFailure } of perRun) {
    let rules = rulesByProject.get(run.project_id);
    if (!rules) {
      rules = rulesOf(projects.get(run.project_id)?.failure_rules ?? null);
      rulesByProject.set(run.project_id, rules);
    }
    let byPrint = candidates.get(run.project_id);
    if (!byPrint) {
      byPrint = new Map();
      candidates.set(run.project_id, byPrint);
    }
    for (const failure of [...steps.map((entry) => entry.failure), runFailure]) {
      const fingerprint = failure.normalised.fingerprint;
      if (!byPrint.has(fingerprint)) byPrint.set(fingerprint, newGroup(run, failure, rules, now));
    }
  }
  const groups = new Map<string, FailureGroupsTable>(); // project + fingerprint → group
  for (const [projectId, byPrint] of candidates) {
    for (const group of await ensureFailureGroups(trx, projectId, [...byPrint.values()]))
      groups.set(`${projectId}\u0000${group.fingerprint}`, group);
  }
  return groups;
}

/** The rows the failures become: occurrences, the groups' reach, and the group of each step and run. */
interface GroupRows {
  occurrences: FailureOccurrencesTable[];
  tests: FailureGroupTestsTable[];
  branches: FailureGroupBranchesTable[];
  stepIds: Map<string, string[]>;
  runIdsByGroup: Map<string, string[]>;
  byGroup: Map<string, FailureOccurrencesTable[]>;
}

/** One occurrence per run and group (at the first failed step with that cause); sets each run's group. */
function rowsOfFailures(perRun: readonly RunFailures[], groups: ReadonlyMap<string, FailureGroupsTable>, now: string): GroupRows {
  const groupOf = (run: TestRunsTable, failure: Failure) =>
    groups.get(`${run.project_id}\u0000${failure.normalised.fingerprint}`) as FailureGroupsTable;
  const rows: GroupRows = { occurrences: [], tests: [], branches: [], stepIds: new Map(), runIdsByGroup: new Map(), byGroup: new Map() };
  for (const { run, steps, runFailure } of perRun) {
    const firstStep = new Map<string, string | null>(); // group → the first failed step with that cause
    for (const { step, failure } of steps) {
      const group = groupOf(run, failure);
      push(rows.stepIds, group.id, step.id);
      if (!firstStep.has(group.id)) firstStep.set(group.id, step.id);
    }
    const runGroup = groupOf(run, runFailure);
    if (!firstStep.has(runGroup.id)) firstStep.set(runGroup.id, null);
    push(rows.runIdsByGroup, runGroup.id, run.id);
    run.failure_group_id = runGroup.id;
    const testKey = testKeyOf(run);
    for (const [groupId, stepId] of firstStep) {
      const occurrence: FailureOccurrencesTable = {
        group_id: groupId,
        run_id: run.id,
        project_id: run.project_id,
        job_id: run.job_id,
        step_id: stepId,
        test_key: testKey,
        branch: run.branch,
        at: run.finished_at ?? now,
      };
      rows.occurrences.push(occurrence);
      push(rows.byGroup, groupId, occurrence);
      rows.tests.push({ group_id: groupId, test_key: testKey });
      if (run.branch !== null) rows.branches.push({ group_id: groupId, branch: run.branch });
    }
  }
  return rows;
}

async function recordGroups(
  trx: Executor,
  failing: readonly TestRunsTable[],
  projects: ReadonlyMap<string, ProjectTriage>,
  now: string,
  written: WrittenResults | undefined,
) {
  const perRun = await failuresOfRuns(trx, failing, written);
  const groups = await groupsOfFailures(trx, perRun, projects, now);
  const rows = rowsOfFailures(perRun, groups, now);
  await insertOccurrences(trx, rows.occurrences);
  const gained = await addGroupReach(trx, rows.tests, rows.branches);
  const byId = new Map([...groups.values()].map((group) => [group.id, group]));
  for (const [groupId, list] of rows.byGroup) {
    const reach = { tests: gained.tests.get(groupId) ?? 0, branches: gained.branches.get(groupId) ?? 0 };
    await countIntoGroup(trx, counting(byId.get(groupId) as FailureGroupsTable, list, reach, now));
  }
  await setFailureGroupIds(trx, 'steps', rows.stepIds);
  await setFailureGroupIds(trx, 'test_runs', rows.runIdsByGroup);
}

/**
 * The outage guard (TRIAGE-4): for each job of the runs, its failed tests (final attempts) by
 * group; when there are at least `incidentMinFailures` and one group holds more than
 * `incidentShare` of them, the job is an incident of that group, else of none. The jobs' rows are
 * locked first (on PostgreSQL; in job-id order, after the group locks of `recordGroups`), so two
 * transactions completing runs of one job count in turn, the second with the first's runs.
 */
async function refreshIncidents(
  trx: Executor,
  runs: readonly TestRunsTable[],
  projects: ReadonlyMap<string, ProjectTriage>,
): Promise<string[]> {
  const jobIds = [...new Set(runs.map((run) => run.job_id).filter((id): id is string => id !== null))];
  return refreshIncidentsOf(trx, await lockIncidentsOfJobs(trx, jobIds), projects);
}

/** `refreshIncidents` of the jobs as locked. */
async function refreshIncidentsOf(
  trx: Executor,
  jobs: Awaited<ReturnType<typeof lockIncidentsOfJobs>>,
  projects: ReadonlyMap<string, ProjectTriage>,
): Promise<string[]> {
  const changed: string[] = [];
  for (const job of jobs) {
    const project = projects.get(job.project_id);
    const settings = triageSettingsOf({ triage_settings: project?.triage_settings ?? null });
    const counts = await failedTestsOfJobByGroup(trx, job.id);
    const total = counts.reduce((sum, entry) => sum + entry.tests, 0);
    let top: { groupId: string | null; tests: number } | undefined;
    for (const entry of counts) if (entry.groupId !== null && (!top || entry.tests > top.tests)) top = entry;
    const incident = top && total >= settings.incidentMinFailures && top.tests > settings.incidentShare * total ? top : undefined;
    const groupId = incident?.groupId ?? null;
    const failedRuns = incident?.tests ?? null;
    if (groupId !== job.incident_group_id || failedRuns !== (job.incident_failed_runs === null ? null : Number(job.incident_failed_runs))) {
      await setJobIncident(trx, job.id, groupId, failedRuns);
      if (groupId !== job.incident_group_id) changed.push(job.id);
    }
  }
  return changed;
}
