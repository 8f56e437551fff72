import { randomUUID } from 'node:crypto';
import type { Static } from 'typebox';
import type { FixAttempt, TestLifecycle } from '../../../api/v1/test-lifecycle.ts';
import type { ServiceContext } from '../../context.ts';
import { findProject } from '../../db/repositories/projects.ts';
import type { Executor, TestLifecyclesTable, TestQuarantinesTable, TestsTable } from '../../db/types.ts';
import { type EventData, type QueuedEvent, queueWebhookEvents } from '../webhooks/outbox.ts';

// A test's quarantine lifecycle as answers show it (TRIAGE-13, docs/triage.md), and the webhook
// events of its transitions, queued in the transaction that makes them (HOOK-3).

export type LifecycleStateName = Static<typeof TestLifecycle>['state'];
export type LifecycleView = Static<typeof TestLifecycle>;

/** The owner a quarantine made by `autoQuarantine` names. */
export const AUTOMATIC_OWNER = 'attest';

export const inForce = (quarantine: Pick<TestQuarantinesTable, 'expires_at'> | undefined, now: string): boolean =>
  quarantine !== undefined && quarantine.expires_at > now;

/** The state of a test from its lifecycle row and its quarantine: a pending attempt or `disabled` first, then the quarantine. */
export function lifecycleStateOf(
  row: TestLifecyclesTable | undefined,
  quarantine: TestQuarantinesTable | undefined,
  now: string,
): LifecycleStateName {
  if (row?.state === 'disabled') return 'disabled';
  if (row?.state === 'fix-pending') return 'fix-pending';
  if (inForce(quarantine, now)) return 'quarantined';
  if (row?.state === 'fixed') return 'fixed';
  return 'active';
}

export function fixAttemptView(row: TestLifecyclesTable | undefined): Static<typeof FixAttempt> | null {
  if (row?.attempt_started_at == null) return null;
  const required = row.attempt_required ?? 1;
  const outcome =
    row.attempt_failed_run_id !== null
      ? 'failed'
      : row.attempt_ended_at === null
        ? 'pending'
        : row.attempt_passes >= required
          ? 'fixed'
          : 'cancelled';
  return {
    outcome,
    commit: row.attempt_commit,
    note: row.attempt_note,
    branch: row.attempt_branch,
    startedAt: row.attempt_started_at,
    startedBy: row.attempt_started_by,
    required,
    passes: row.attempt_passes,
    endedAt: row.attempt_ended_at,
    failedRunId: row.attempt_failed_run_id,
  };
}

export function lifecycleView(
  row: TestLifecyclesTable | undefined,
  quarantine: TestQuarantinesTable | undefined,
  now: string,
): LifecycleView {
  return {
    state: lifecycleStateOf(row, quarantine, now),
    fixAttempt: fixAttemptView(row),
    disabled:
      row?.state === 'disabled' && row.disabled_at !== null
        ? { reason: row.disabled_reason ?? '', at: row.disabled_at, by: row.disabled_by }
        : null,
  };
}

/** The transitions that release the quarantine they carry. */
const released = (type: LifecycleEventType) => type === 'test.unquarantined' || type === 'test.fixed';

type LifecycleEventType = 'test.quarantined' | 'test.fix_pending' | 'test.fixed' | 'test.unquarantined' | 'test.disabled' | 'test.enabled';

export interface Transition {
  type: LifecycleEventType;
  test: Pick<TestsTable, 'id' | 'project_id' | 'name'>;
  previousState: LifecycleStateName;
  /** The lifecycle row and quarantine after the transition (for a release or a fix, the quarantine released). */
  row: TestLifecyclesTable | undefined;
  quarantine: TestQuarantinesTable | undefined;
  runId?: string;
  actorUserId: string | null;
  reason?: string;
}

/** Queues the webhook events of these transitions; true when any delivery was queued (deliverSoon after the commit). */
export async function queueTransitions(ctx: ServiceContext, trx: Executor, transitions: readonly Transition[]): Promise<boolean> {
  if (transitions.length === 0) return false;
  const now = ctx.clock().toISOString();
  const link = (path: string) => (ctx.config.publicUrl === undefined ? null : `${ctx.config.publicUrl}${path}`);
  const projects = new Map<string, { id: string; key: string; name: string }>();
  const events: QueuedEvent[] = [];
  for (const t of transitions) {
    let project = projects.get(t.test.project_id);
    if (!project) {
      const row = await findProject(trx, t.test.project_id);
      project = { id: t.test.project_id, key: row?.key ?? '', name: row?.name ?? '' };
      projects.set(project.id, project);
    }
    const quarantine = t.quarantine;
    const data: EventData<LifecycleEventType> = {
      project,
      test: { id: t.test.id, name: t.test.name, url: link(`/tests/${t.test.id}`) },
      state: lifecycleStateOf(t.row, released(t.type) ? undefined : quarantine, now),
      previousState: t.previousState,
      quarantine: quarantine
        ? {
            owner: quarantine.owner,
            reason: quarantine.reason.slice(0, 2000),
            expiresAt: quarantine.expires_at,
            automatic: quarantine.created_by === null && quarantine.owner === AUTOMATIC_OWNER,
          }
        : null,
      fixAttempt: fixAttemptView(t.row),
      run: t.runId === undefined ? null : { id: t.runId, url: link(`/runs/${t.runId}`) },
      actorUserId: t.actorUserId,
      reason: t.reason === undefined ? null : t.reason.slice(0, 2000),
    };
    events.push({ projectId: project.id, type: t.type, key: `${t.type}:${t.test.id}:${randomUUID()}`, subject: { data } });
  }
  return queueWebhookEvents(ctx, trx, events);
}
