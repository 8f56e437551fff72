import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { type Normalised, normalised } from './2026-12-02-0029-merge-equal-groups-rules.ts';

// Frozen in time, like every migration: never edited once shipped, and no application imports but
// rules frozen with it. Node's own SHA-256 and UUIDs are no application code and mean the same thing
// forever; the normaliser is the one frozen that day (src/server/failures/rules-2026-12-02/, never
// edited), read through `…-rules.ts` beside it.
//
// Groups made equal are merged (TRIAGE-10). One failure is one cause wherever it arrives from
// (TRIAGE-2): a step's error without frames that states what its run's error cell states, about the
// same target, with frames, is filed under the group with frames; and a one-line JUnit message the
// body restates is read from the body, so it states what the reporter and a JSON report say. The
// version before stored such failures apart: a reporter's step in one group, its run in another, and
// the JUnit import of the same failure in a third, each triaged (or not) on its own.
//
// This reads every recorded failure again, run by run (in batches of runs), with a copy of today's
// normaliser, and gives each group the fingerprint most of its failures now have (its own on a tie;
// a group whose failures are all gone keeps its own). Groups of one project that end with one
// fingerprint are merged into one, the survivor: the group triaged first (the earliest triage
// time; an untriaged group yields to a triaged one; among untriaged ones the one seen first, then
// the smallest id). The survivor keeps its triage (status, defect type, rule, comment, issue link,
// assignee, triaged at and by), and its frames unless it has none and another has some; it takes
// every other group's steps, runs, occurrences (a run counts once: where both hold the run, the
// survivor's occurrence stays, naming the step if either did; the group_days triggers of 0025 follow
// the occurrences), tests and branches, issue links and job incidents; its counters add theirs
// (less the runs counted twice), first seen the earliest, last seen the latest. Each merge is
// audited (`failure-group.merge`) on the survivor, naming what it took, and on each group it took.
// A group that merges with none but now has another fingerprint takes it, so that a later failure
// finds it. A database where no two groups are equal is left as it is.

const TRACE_CELLS = ['trace', 'stack', 'failure', 'error'];
const RUN_ERROR_CELLS = new Set(['error', 'failure']);
const BATCH = 500;

// biome-ignore lint/suspicious/noExplicitAny: a frozen migration must not depend on today's table types
type AnyDb = Kysely<any>;

interface Group {
  id: string;
  project_id: string;
  fingerprint: string;
  frames: string;
  triaged_at: string | null;
  first_seen_at: string;
}

/** How many failures of each group give each fingerprint today. */
type Votes = Map<string, Map<string, number>>;

function vote(votes: Votes, groupId: string, fingerprint: string): void {
  let ofGroup = votes.get(groupId);
  if (!ofGroup) {
    ofGroup = new Map();
    votes.set(groupId, ofGroup);
  }
  ofGroup.set(fingerprint, (ofGroup.get(fingerprint) ?? 0) + 1);
}

export async function up(db: AnyDb): Promise<void> {
  const now = new Date().toISOString();
  const groups = new Map<string, Group>();
  for (let after = ''; ; ) {
    const page = (await db
      .selectFrom('failure_groups')
      .select(['id', 'project_id', 'fingerprint', 'frames', 'triaged_at', 'first_seen_at'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute()) as Group[];
    for (const group of page) groups.set(group.id, group);
    if (page.length < BATCH) break;
    after = (page[page.length - 1] as Group).id;
  }
  if (groups.size < 1) return;

  const votes: Votes = new Map();
  for (let after = ''; ; ) {
    const runs = await db
      .selectFrom('test_runs')
      .select(['id', 'failure_group_id'])
      .where('failure_group_id', 'is not', null)
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    if (runs.length === 0) break;
    await voteOfRuns(db, runs as { id: string; failure_group_id: string }[], votes, groups);
    if (runs.length < BATCH) break;
    after = (runs[runs.length - 1] as { id: string }).id;
  }

  // Each group's fingerprint today: the one most of its failures give, its own on a tie or without any.
  const clusters = new Map<string, Group[]>();
  const fingerprintOf = new Map<string, string>();
  for (const group of groups.values()) {
    let best = group.fingerprint;
    let most = votes.get(group.id)?.get(group.fingerprint) ?? 0;
    for (const [fingerprint, count] of votes.get(group.id) ?? []) {
      if (count > most || (count === most && fingerprint < best && best !== group.fingerprint)) {
        best = fingerprint;
        most = count;
      }
    }
    fingerprintOf.set(group.id, best);
    const key = `${group.project_id}\u0000${best}`;
    clusters.set(key, [...(clusters.get(key) ?? []), group]);
  }

  const merged: [Group, Group[]][] = [];
  const triageOf = new Map<string, Record<string, unknown>>();
  for (const members of clusters.values()) {
    if (members.length > 1) merged.push([survivorOf(members), members]);
  }
  for (const [survivor, members] of merged) {
    for (const loser of members) if (loser.id !== survivor.id) triageOf.set(loser.id, await mergeInto(db, survivor, loser));
  }
  // Fingerprints last, in two steps, so that two groups trading fingerprints never meet in the unique index.
  const changed = [
    ...merged.map(([survivor]) => survivor),
    ...[...clusters.values()].filter((m) => m.length === 1).map((m) => m[0] as Group),
  ].filter((group) => fingerprintOf.get(group.id) !== group.fingerprint);
  for (const group of changed) {
    await db
      .updateTable('failure_groups')
      .set({ fingerprint: `merging ${group.id}` })
      .where('id', '=', group.id)
      .execute();
  }
  for (const group of changed) {
    await db
      .updateTable('failure_groups')
      .set({ fingerprint: fingerprintOf.get(group.id), updated_at: now })
      .where('id', '=', group.id)
      .execute();
  }

  const audit = (targetId: string, details: unknown) => ({
    id: randomUUID(),
    at: now,
    actor_user_id: null,
    action: 'failure-group.merge',
    target_type: 'failure-group',
    target_id: targetId,
    details: JSON.stringify(details),
    request_id: null,
  });
  for (const [survivor, members] of merged) {
    const losers = members.filter((group) => group.id !== survivor.id);
    const entries = [
      audit(survivor.id, {
        reason: 'equal',
        fingerprint: fingerprintOf.get(survivor.id),
        from: losers.map((group) => ({ id: group.id, fingerprint: group.fingerprint, ...triageOf.get(group.id) })),
      }),
      ...losers.map((group) => audit(group.id, { reason: 'equal', into: survivor.id, fingerprint: group.fingerprint })),
    ];
    await db.insertInto('audit_log').values(entries).execute();
  }
}

/** The group triaged first; untriaged groups yield to triaged ones; then the one seen first, then the smallest id. */
function survivorOf(members: readonly Group[]): Group {
  const rank = (group: Group) => [group.triaged_at === null ? 1 : 0, group.triaged_at ?? '', group.first_seen_at, group.id];
  return [...members].sort((a, b) => {
    const x = rank(a);
    const y = rank(b);
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return (x[i] as string | number) < (y[i] as string | number) ? -1 : 1;
    return 0;
  })[0] as Group;
}

/** Counts, for the runs of one batch, the fingerprint each of their failures has today under its stored group. */
async function voteOfRuns(
  db: AnyDb,
  runs: readonly { id: string; failure_group_id: string }[],
  votes: Votes,
  groups: ReadonlyMap<string, Group>,
): Promise<void> {
  const ids = runs.map((run) => run.id);
  const steps = await db
    .selectFrom('steps')
    .select(['id', 'run_id', 'error_message', 'failure_group_id'])
    .where('run_id', 'in', ids)
    .where('failure_group_id', 'is not', null)
    .orderBy('run_id')
    .orderBy('position')
    .execute();
  const cells = await db
    .selectFrom('text_cells')
    .select(['run_id', 'step_id', 'name', 'text'])
    .where('run_id', 'in', ids)
    .where('name', 'in', TRACE_CELLS)
    .orderBy('run_id')
    .orderBy('position')
    .execute();
  const traceOf = new Map<string, string>();
  const runErrorOf = new Map<string, string>();
  for (const cell of cells) {
    if (cell.step_id === null) {
      if (!runErrorOf.has(cell.run_id) && RUN_ERROR_CELLS.has(cell.name) && String(cell.text).trim() !== '')
        runErrorOf.set(cell.run_id, cell.text);
    } else if (!traceOf.has(cell.step_id)) traceOf.set(cell.step_id, cell.text);
  }
  const stepsOf = new Map<string, { groupId: string; failure: Normalised }[]>();
  for (const step of steps) {
    const message = String(step.error_message ?? '');
    if (message.trim() === '' || !groups.has(step.failure_group_id)) continue;
    const entry = { groupId: step.failure_group_id as string, failure: normalised(message, traceOf.get(step.id) ?? null) };
    stepsOf.set(step.run_id, [...(stepsOf.get(step.run_id) ?? []), entry]);
  }
  for (const run of runs) {
    if (!groups.has(run.failure_group_id)) continue;
    const ofRun = stepsOf.get(run.id) ?? [];
    const runError = runErrorOf.get(run.id);
    // The run's failure: its own error cell, else the step it took its group from (the first in its group).
    const own =
      runError !== undefined ? normalised(runError, null) : ofRun.find((entry) => entry.groupId === run.failure_group_id)?.failure;
    // One cause, one group: a failure without frames that another of the run's states, about the same target, with frames, is that one.
    const causeOf = (failure: Normalised) => `${failure.message}\u0000${failure.target ?? ''}`;
    const framed = new Map<string, Normalised>();
    for (const failure of [...(own ? [own] : []), ...ofRun.map((entry) => entry.failure)]) {
      if (failure.framed && !framed.has(causeOf(failure))) framed.set(causeOf(failure), failure);
    }
    const richest = (failure: Normalised) => (failure.framed ? failure : (framed.get(causeOf(failure)) ?? failure));
    for (const entry of ofRun) vote(votes, entry.groupId, richest(entry.failure).fingerprint);
    // A run with no failure to read (no message at all) keeps its group's fingerprint.
    vote(votes, run.failure_group_id, own ? richest(own).fingerprint : (groups.get(run.failure_group_id) as Group).fingerprint);
  }
}

/** Moves everything of `loser` to `survivor` and removes `loser` (see the header); answers the triage it had, for the audit. */
async function mergeInto(db: AnyDb, survivor: Group, loser: Group): Promise<Record<string, unknown>> {
  const both = await db.selectFrom('failure_groups').selectAll().where('id', 'in', [survivor.id, loser.id]).execute();
  const kept = both.find((row) => row.id === survivor.id);
  const gone = both.find((row) => row.id === loser.id);
  if (!kept || !gone) return {};
  const survivorRuns = db.selectFrom('failure_occurrences').select('run_id').where('group_id', '=', survivor.id);
  const twice = await db
    .selectFrom('failure_occurrences')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('group_id', '=', loser.id)
    .where('run_id', 'in', survivorRuns)
    .executeTakeFirstOrThrow();
  // A run counted by both: the survivor's occurrence stays, naming the loser's step when it named none.
  await db
    .updateTable('failure_occurrences as o')
    .set((eb) => ({
      step_id: eb
        .selectFrom('failure_occurrences as l')
        .select('l.step_id')
        .where('l.group_id', '=', loser.id)
        .whereRef('l.run_id', '=', 'o.run_id'),
    }))
    .where('o.group_id', '=', survivor.id)
    .where('o.step_id', 'is', null)
    .where(
      'o.run_id',
      'in',
      db.selectFrom('failure_occurrences as l').select('l.run_id').where('l.group_id', '=', loser.id).where('l.step_id', 'is not', null),
    )
    .execute();
  await db.deleteFrom('failure_occurrences').where('group_id', '=', loser.id).where('run_id', 'in', survivorRuns).execute();
  await db.updateTable('failure_occurrences').set({ group_id: survivor.id }).where('group_id', '=', loser.id).execute();

  // The tests and branches the survivor lacks move to it; the rest go with the loser.
  const added: Record<string, number> = {};
  for (const [table, column] of [
    ['failure_group_tests', 'test_key'],
    ['failure_group_branches', 'branch'],
  ] as const) {
    const moved = await db
      .updateTable(table)
      .set({ group_id: survivor.id })
      .where('group_id', '=', loser.id)
      .where(column, 'not in', db.selectFrom(`${table} as s`).select(`s.${column}`).where('s.group_id', '=', survivor.id))
      .executeTakeFirst();
    added[table] = Number(moved.numUpdatedRows);
    await db.deleteFrom(table).where('group_id', '=', loser.id).execute();
  }
  for (const table of ['steps', 'test_runs', 'issue_links'] as const) {
    await db.updateTable(table).set({ failure_group_id: survivor.id }).where('failure_group_id', '=', loser.id).execute();
  }
  await db.updateTable('jobs').set({ incident_group_id: survivor.id }).where('incident_group_id', '=', loser.id).execute();

  const first = String(gone.first_seen_at) < String(kept.first_seen_at) ? gone : kept;
  const last = String(gone.last_seen_at) > String(kept.last_seen_at) ? gone : kept;
  await db
    .updateTable('failure_groups')
    .set({
      occurrences: Number(kept.occurrences) + Number(gone.occurrences) - Number(twice.count),
      affected_tests: Number(kept.affected_tests) + (added.failure_group_tests as number),
      affected_branches: Number(kept.affected_branches) + (added.failure_group_branches as number),
      first_seen_at: first.first_seen_at,
      first_seen_run_id: first.first_seen_run_id,
      first_seen_job_id: first.first_seen_job_id,
      last_seen_at: last.last_seen_at,
      last_seen_run_id: last.last_seen_run_id,
      last_seen_job_id: last.last_seen_job_id,
      ...(kept.frames === '[]' && gone.frames !== '[]' ? { frames: gone.frames } : {}),
    })
    .where('id', '=', survivor.id)
    .execute();
  // Its rollup rows are all 0 now (its occurrences moved); they go with it, cascade or not.
  await db.deleteFrom('group_days').where('group_id', '=', loser.id).execute();
  await db.deleteFrom('failure_groups').where('id', '=', loser.id).execute();
  return {
    status: gone.status,
    defectType: gone.defect_type,
    rule: gone.rule,
    comment: gone.comment,
    issueUrl: gone.issue_url,
    assignee: gone.assignee,
    triagedAt: gone.triaged_at,
    triagedBy: gone.triaged_by,
  };
}

// A merge cannot be undone: the survivor may have been triaged since, and its failures are one cause.
export async function down(): Promise<void> {}
