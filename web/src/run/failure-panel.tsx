import { useEffect, useState } from 'preact/hooks';
import { type AttestClient, v1 } from '../../../src/client/index.ts';
import { ErrorBox, Loading } from '../components.tsx';
import { useApi } from '../data.ts';
import { type FailureGroup, getFailureGroup } from '../triage/api.ts';
import { DefectName, GroupStatus, TriageInline } from '../triage/parts.tsx';
import type { ResultStep, TestRun } from './steps.ts';
import '../triage/triage.css';

/** The error groups a completed run failed with: its own first, then its failed steps' (TRIAGE-2). */
export function failureGroupsOf(run: TestRun, steps: readonly ResultStep[]): string[] {
  const ids = [run.failureGroupId, ...steps.map((step) => step.failureGroupId)];
  return [...new Set(ids.filter((id): id is string => id !== null))];
}

async function loadGroups(client: AttestClient, projectId: string, ids: string[]): Promise<FailureGroup[]> {
  return Promise.all(ids.map((id) => getFailureGroup(client, projectId, id)));
}

/** One group the run failed with: what it is, and its defect type and status, changeable here. */
function GroupRow({ projectId, projectKey, initial, own }: { projectId: string; projectKey: string; initial: FailureGroup; own: boolean }) {
  const [group, setGroup] = useState(initial);
  useEffect(() => setGroup(initial), [initial]);
  return (
    <li id={`failure-group-${group.id}`} class="failure-group" data-testid="run-failure-group">
      <div class="run-badges">
        <GroupStatus status={group.status} />
        <DefectName type={group.defectType} />
        <span class="muted">
          {group.category} · {group.occurrences} occurrences in {group.affectedTests} tests{own ? ' · the run’s own failure' : ''}
        </span>
      </div>
      <p class="group-title">
        <a href={`/projects/${projectKey}/failures/${group.id}`}>{group.title}</a>
      </p>
      <TriageInline projectId={projectId} group={group} onSaved={setGroup} />
    </li>
  );
}

/**
 * A failed run's error groups, each with its triage (TRIAGE-8): a defect type set here holds for
 * every failure with the same cause, earlier and later.
 */
export function FailurePanel({ run, steps }: { run: TestRun; steps: readonly ResultStep[] }) {
  const ids = run.status === 'completed' ? failureGroupsOf(run, steps) : [];
  const key = ids.join(',');
  const project = useApi((client) => client.call(v1.projects.getProject, { params: { projectId: run.projectId } }), [run.projectId]);
  const groups = useApi((client) => (key ? loadGroups(client, run.projectId, ids) : Promise.resolve([])), [run.projectId, key]);
  if (ids.length === 0) return null;
  const own = run.failureGroupId;
  return (
    <section class="panel failure-panel" aria-labelledby="failure-heading">
      <h2 id="failure-heading">{ids.length === 1 ? 'Error group' : `Error groups (${ids.length})`}</h2>
      {groups.error ? <ErrorBox error={groups.error} /> : null}
      {groups.data === undefined ? (
        groups.error ? null : (
          <Loading />
        )
      ) : (
        <ul class="failure-groups">
          {groups.data.map((group) => (
            <GroupRow
              key={group.id}
              projectId={run.projectId}
              projectKey={project.data?.key ?? run.projectId}
              initial={group}
              own={group.id === own}
            />
          ))}
        </ul>
      )}
    </section>
  );
}
