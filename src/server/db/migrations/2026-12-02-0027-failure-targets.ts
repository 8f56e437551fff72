import { createHash, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { targetOfFailure } from './2026-12-02-0027-failure-targets-rules.ts';

// Frozen in time, like every migration: never edited once shipped, and no application imports but
// rules frozen with it. Node's own SHA-256 and UUIDs are no application code and mean the same thing
// forever; the target rules are the ones frozen that day (src/server/failures/rules-2026-12-02/,
// never edited), read through `…-failure-targets-rules.ts` beside it.
//
// Error groups take the failure's target into their fingerprint (TRIAGE-1): the target (a
// Playwright locator, a Selenium selector, a URL or address) is read from the message and, now,
// from the trace too, and the fingerprint is the SHA-256 of the old fingerprint and the target when
// there is one (a failure without one keeps its fingerprint). Before, two locators timing out on one
// line of one spec shared one group, and the triage of one was carried to the other.
//
// This re-reads every recorded failure (each failed step, each failed run with a group) for its
// target, with a copy of today's rules below, and chains its group's stored fingerprint with it. A
// group whose failures name one target (or none) keeps its id, its fingerprint and target brought
// up to date. A group whose failures name several is split: the part with the most failures keeps
// the group, each other part becomes a group of its own with the group's triage (status, defect
// type, rule, comment, issue link, assignee, triaged at and by), its steps, runs, occurrences (the
// group_days triggers of 0025 follow them), tests and branches, and counters of its own; each split
// is audited (`failure-group.split`) on every group it touches. A group whose failures are all gone
// (retention) is chained with its stored target, so that a later failure of it finds it again.
// An incident stays with the group that kept the id.

const TRACE_CELLS = ['trace', 'stack', 'failure', 'error'];
const RUN_ERROR_CELLS = new Set(['error', 'failure']);
const IN_LIST = 500;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const chained = (fingerprint: string, target: string | null) =>
  target === null ? fingerprint : sha256(`${fingerprint}\ntarget ${target}`);

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += IN_LIST) out.push(items.slice(i, i + IN_LIST));
  return out;
}

interface Failure {
  stepId: string | null;
  runId: string;
  message: string;
  target: string | null;
}

interface Occurrence {
  group_id: string;
  run_id: string;
  project_id: string;
  job_id: string | null;
  step_id: string | null;
  test_key: string;
  branch: string | null;
  at: string;
}

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
export async function up(db: Kysely<any>): Promise<void> {
  const now = new Date().toISOString();
  // Every id first: the groups this makes must not be read again.
  const ids = (await db.selectFrom('failure_groups').select('id').orderBy('id').execute()).map((row) => row.id as string);
  for (const id of ids) await refingerprint(db, id, now);
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
async function failuresOfGroup(db: Kysely<any>, groupId: string): Promise<Failure[]> {
  const steps = await db
    .selectFrom('steps')
    .select(['id', 'run_id', 'error_message'])
    .where('failure_group_id', '=', groupId)
    .orderBy('run_id')
    .orderBy('position')
    .execute();
  const runs = await db.selectFrom('test_runs').select('id').where('failure_group_id', '=', groupId).orderBy('id').execute();
  const runIds = [...new Set([...steps.map((step) => step.run_id as string), ...runs.map((run) => run.id as string)])];
  const traceOf = new Map<string, string>();
  const runErrorOf = new Map<string, string>();
  for (const part of chunks(runIds)) {
    const cells = await db
      .selectFrom('text_cells')
      .select(['run_id', 'step_id', 'name', 'text'])
      .where('run_id', 'in', part)
      .where('name', 'in', TRACE_CELLS)
      .orderBy('run_id')
      .orderBy('position')
      .execute();
    for (const cell of cells) {
      if (cell.step_id === null) {
        if (!runErrorOf.has(cell.run_id) && RUN_ERROR_CELLS.has(cell.name) && String(cell.text).trim() !== '')
          runErrorOf.set(cell.run_id, cell.text);
      } else if (!traceOf.has(cell.step_id)) traceOf.set(cell.step_id, cell.text);
    }
  }
  const failures: Failure[] = [];
  const firstStepOfRun = new Map<string, Failure>();
  for (const step of steps) {
    const message = String(step.error_message ?? '');
    if (message.trim() === '') continue;
    const failure = {
      stepId: step.id as string,
      runId: step.run_id as string,
      message,
      target: targetOfFailure(message, traceOf.get(step.id) ?? null),
    };
    failures.push(failure);
    if (!firstStepOfRun.has(failure.runId)) firstStepOfRun.set(failure.runId, failure);
  }
  for (const run of runs) {
    const runError = runErrorOf.get(run.id);
    // The run's failure: its own error cell, else the step it took its group from (the first of this group).
    const step = firstStepOfRun.get(run.id);
    if (runError !== undefined) failures.push({ stepId: null, runId: run.id, message: runError, target: targetOfFailure(runError, null) });
    else failures.push({ stepId: null, runId: run.id, message: step?.message ?? '', target: step?.target ?? null });
  }
  return failures;
}

// biome-ignore lint/suspicious/noExplicitAny: see up()
async function refingerprint(db: Kysely<any>, groupId: string, now: string): Promise<void> {
  const group = await db.selectFrom('failure_groups').selectAll().where('id', '=', groupId).executeTakeFirstOrThrow();
  const failures = await failuresOfGroup(db, groupId);
  const parts = new Map<string | null, Failure[]>();
  for (const failure of failures) {
    const list = parts.get(failure.target);
    if (list) list.push(failure);
    else parts.set(failure.target, [failure]);
  }
  if (parts.size <= 1) {
    const target = parts.size === 1 ? ([...parts.keys()][0] as string | null) : (group.target as string | null);
    if (target !== null) {
      await db
        .updateTable('failure_groups')
        .set({ fingerprint: chained(group.fingerprint, target), target: target.slice(0, 1000) })
        .where('id', '=', groupId)
        .execute();
    }
    return;
  }

  // The part with the most failures keeps the group (the first found, on a tie).
  let keeper: string | null = null;
  let most = -1;
  for (const [target, list] of parts) {
    if (list.length > most) {
      keeper = target;
      most = list.length;
    }
  }
  const idOf = new Map<string | null, string>([[keeper, groupId]]);
  for (const [target, list] of parts) {
    if (target === keeper) continue;
    const id = randomUUID();
    idOf.set(target, id);
    await db
      .insertInto('failure_groups')
      .values({
        ...group,
        id,
        fingerprint: chained(group.fingerprint, target),
        target: target === null ? null : target.slice(0, 1000),
        message: (list[0] as Failure).message.slice(0, 8192) || group.message,
        occurrences: 0,
        affected_tests: 0,
        affected_branches: 0,
        created_at: now,
        updated_at: now,
      })
      .execute();
    const stepIds = list.flatMap((failure) => (failure.stepId === null ? [] : [failure.stepId]));
    const runIds = list.flatMap((failure) => (failure.stepId === null ? [failure.runId] : []));
    for (const part of chunks(stepIds)) await db.updateTable('steps').set({ failure_group_id: id }).where('id', 'in', part).execute();
    for (const part of chunks(runIds)) await db.updateTable('test_runs').set({ failure_group_id: id }).where('id', 'in', part).execute();
  }
  await db
    .updateTable('failure_groups')
    .set({ fingerprint: chained(group.fingerprint, keeper), target: keeper === null ? null : keeper.slice(0, 1000), updated_at: now })
    .where('id', '=', groupId)
    .execute();

  // Occurrences: one per run and group, naming the first failed step with that cause (null: the run's own error).
  const partsOfRun = new Map<string, Map<string, string | null>>();
  for (const failure of failures) {
    const id = idOf.get(failure.target) as string;
    let ofRun = partsOfRun.get(failure.runId);
    if (!ofRun) {
      ofRun = new Map();
      partsOfRun.set(failure.runId, ofRun);
    }
    // Steps come before the run's own failure, so a step named first stays.
    if (!ofRun.has(id)) ofRun.set(id, failure.stepId);
  }
  const occurrences = (await db.selectFrom('failure_occurrences').selectAll().where('group_id', '=', groupId).execute()) as Occurrence[];
  const kept: Occurrence[] = [];
  const removed: Occurrence[] = [];
  const added = new Map<string, Occurrence[]>();
  for (const occurrence of occurrences) {
    const ofRun = partsOfRun.get(occurrence.run_id);
    if (!ofRun || ofRun.has(groupId)) kept.push(occurrence);
    else removed.push(occurrence);
    for (const [id, stepId] of ofRun ?? []) {
      if (id === groupId) continue;
      const moved = { ...occurrence, group_id: id, step_id: stepId };
      added.set(id, [...(added.get(id) ?? []), moved]);
    }
  }
  for (const part of chunks(removed.map((o) => o.run_id))) {
    await db.deleteFrom('failure_occurrences').where('group_id', '=', groupId).where('run_id', 'in', part).execute();
  }
  const seen = (list: readonly Occurrence[], pick: (a: Occurrence, b: Occurrence) => boolean) =>
    list.reduce<Occurrence | undefined>((best, o) => (best === undefined || pick(o, best) ? o : best), undefined);
  for (const [id, list] of added) {
    for (const part of chunks(list)) await db.insertInto('failure_occurrences').values(part).execute();
    const tests = [...new Set(list.map((o) => o.test_key))];
    const branches = [...new Set(list.flatMap((o) => (o.branch === null ? [] : [o.branch])))];
    for (const part of chunks(tests))
      await db
        .insertInto('failure_group_tests')
        .values(part.map((test_key) => ({ group_id: id, test_key })))
        .execute();
    for (const part of chunks(branches))
      await db
        .insertInto('failure_group_branches')
        .values(part.map((branch) => ({ group_id: id, branch })))
        .execute();
    const first = seen(list, (a, b) => a.at < b.at) as Occurrence;
    const last = seen(list, (a, b) => a.at >= b.at) as Occurrence;
    await db
      .updateTable('failure_groups')
      .set({
        occurrences: list.length,
        affected_tests: tests.length,
        affected_branches: branches.length,
        first_seen_at: first.at,
        first_seen_run_id: first.run_id,
        first_seen_job_id: first.job_id,
        last_seen_at: last.at,
        last_seen_run_id: last.run_id,
        last_seen_job_id: last.job_id,
      })
      .where('id', '=', id)
      .execute();
  }
  // The group keeps its counts of what retention took already; it loses what moved.
  const testsLeft = new Set(kept.map((o) => o.test_key));
  const branchesLeft = new Set(kept.map((o) => o.branch));
  const testsGone = [...new Set(removed.map((o) => o.test_key))].filter((key) => !testsLeft.has(key));
  const branchesGone = [...new Set(removed.flatMap((o) => (o.branch === null ? [] : [o.branch])))].filter((b) => !branchesLeft.has(b));
  for (const part of chunks(testsGone))
    await db.deleteFrom('failure_group_tests').where('group_id', '=', groupId).where('test_key', 'in', part).execute();
  for (const part of chunks(branchesGone))
    await db.deleteFrom('failure_group_branches').where('group_id', '=', groupId).where('branch', 'in', part).execute();
  const changes: Record<string, unknown> = {
    occurrences: Number(group.occurrences) - removed.length,
    affected_tests: Number(group.affected_tests) - testsGone.length,
    affected_branches: Number(group.affected_branches) - branchesGone.length,
  };
  const first = seen(kept, (a, b) => a.at < b.at);
  const last = seen(kept, (a, b) => a.at >= b.at);
  if (first && last && removed.length > 0) {
    Object.assign(changes, {
      first_seen_at: first.at,
      first_seen_run_id: first.run_id,
      first_seen_job_id: first.job_id,
      last_seen_at: last.at,
      last_seen_run_id: last.run_id,
      last_seen_job_id: last.job_id,
    });
  }
  await db.updateTable('failure_groups').set(changes).where('id', '=', groupId).execute();

  const audit = (targetId: string, details: unknown) => ({
    id: randomUUID(),
    at: now,
    actor_user_id: null,
    action: 'failure-group.split',
    target_type: 'failure-group',
    target_id: targetId,
    details: JSON.stringify(details),
    request_id: null,
  });
  const entries = [
    audit(groupId, {
      reason: 'targets',
      target: keeper,
      into: [...idOf].filter(([, id]) => id !== groupId).map(([target, id]) => ({ id, target })),
    }),
  ];
  for (const [target, id] of idOf) if (id !== groupId) entries.push(audit(id, { reason: 'targets', from: groupId, target }));
  await db.insertInto('audit_log').values(entries).execute();
}

// Splitting cannot be undone: the groups it made may have been triaged apart since.
export async function down(): Promise<void> {}
