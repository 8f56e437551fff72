import { useState } from 'preact/hooks';
import { ErrorBox } from '../components.tsx';
import type { Column } from '../list-table.tsx';
import { api } from '../session.ts';
import {
  DEFECT_TYPES,
  type DefectType,
  defectLabel,
  FAILURE_STATUSES,
  type FailureGroup,
  type FailureStatus,
  type Incident,
  type TriageChanges,
  triageFailureGroup,
} from './api.ts';

/** A group's status as a badge (the word is there beside the colour). */
export function GroupStatus({ status }: { status: string }) {
  return <span class={`badge badge-group-${status}`}>{status}</span>;
}

/** A defect type as words (`to_investigate` until a rule or a person says otherwise). */
export function DefectName({ type }: { type: string | null }) {
  return <span class={type ? 'defect' : 'defect muted'}>{defectLabel(type)}</span>;
}

/** What a list of error groups shows of each first: its title (linked to its page), category, status and defect type. */
export function groupColumns<G extends { id: string; title: string; category: string; status: string; defectType: string | null }>(
  projectKey: string,
): Column<G>[] {
  return [
    {
      header: 'Error',
      class: 'group-title',
      cell: (group) => group.title,
      href: (group) => `/projects/${projectKey}/failures/${group.id}`,
    },
    { header: 'Category', cell: (group) => group.category },
    { header: 'Status', cell: (group) => <GroupStatus status={group.status} /> },
    { header: 'Defect type', cell: (group) => <DefectName type={group.defectType} /> },
  ];
}

/** The mark of a job that one error group dominated (TRIAGE-4), linked to the group. */
export function IncidentMarker({ incident, projectKey }: { incident: Incident | null | undefined; projectKey: string }) {
  if (!incident) return null;
  return (
    <a
      class="incident"
      href={`/projects/${projectKey}/failures/${incident.failureGroupId}`}
      title={`An incident: ${incident.failedRuns} failed runs share one cause`}
    >
      Incident · {incident.failedRuns} failed
    </a>
  );
}

type Field = 'defectType' | 'status' | 'comment' | 'issueUrl' | 'assignee';
type Values = Record<Field, string>;

const valuesOf = (group: FailureGroup): Values => ({
  defectType: group.defectType ?? '',
  status: group.status,
  comment: group.comment ?? '',
  issueUrl: group.issueUrl ?? '',
  assignee: group.assignee ?? '',
});

/** The fields that differ from the group: only they are sent; an emptied text field is null (cleared). */
function changesOf(values: Values, group: FailureGroup, fields: readonly Field[]): TriageChanges {
  const changes: TriageChanges = {};
  for (const field of fields) {
    const value = values[field].trim() || null;
    if (value === (group[field] ?? null)) continue;
    if (field === 'status') {
      if (value) changes.status = value as FailureStatus;
    } else if (field === 'defectType') {
      if (value) changes.defectType = value as DefectType;
    } else changes[field] = value;
  }
  return changes;
}

interface SaveState {
  saving: boolean;
  error?: Error;
  saved?: string;
}

/**
 * A triage form's state: its fields (the group's values until edited, and again once the server
 * answers), and the save: a `PATCH` of what changed, whose answer replaces the group.
 */
function useTriage(projectId: string, group: FailureGroup, onSaved: (group: FailureGroup) => void, fields: readonly Field[]) {
  const [values, setValues] = useState<Values>(() => valuesOf(group));
  const [state, setState] = useState<SaveState>({ saving: false });
  const [shown, setShown] = useState(group);
  if (shown !== group) {
    // A new answer for the group (saved here, or reloaded): the fields show it.
    setShown(group);
    setValues(valuesOf(group));
  }
  const set = (field: Field) => (event: Event) => {
    const value = (event.currentTarget as HTMLInputElement).value;
    setValues((current) => ({ ...current, [field]: value }));
  };
  const submit = async (event: Event) => {
    event.preventDefault();
    const changes = changesOf(values, group, fields);
    if (Object.keys(changes).length === 0) {
      setState({ saving: false, saved: 'Nothing changed.' });
      return;
    }
    setState({ saving: true });
    try {
      const saved = await triageFailureGroup(api(), projectId, group.id, changes);
      setState({ saving: false, saved: `Saved: ${defectLabel(saved.defectType)}, ${saved.status}.` });
      onSaved(saved);
    } catch (error) {
      setState({ saving: false, error: error as Error });
    }
  };
  return { values, set, state, submit };
}

function DefectSelect({ value, onChange }: { value: string; onChange: (event: Event) => void }) {
  return (
    <label>
      Defect type
      <select name="defectType" value={value} onChange={onChange}>
        {DEFECT_TYPES.map((type) => (
          <option key={type} value={type}>
            {defectLabel(type)}
          </option>
        ))}
      </select>
    </label>
  );
}

function StatusSelect({ value, onChange }: { value: string; onChange: (event: Event) => void }) {
  return (
    <label>
      Status
      <select name="status" value={value} onChange={onChange}>
        {FAILURE_STATUSES.map((status) => (
          <option key={status} value={status}>
            {status}
          </option>
        ))}
      </select>
    </label>
  );
}

function Outcome({ state }: { state: SaveState }) {
  return (
    <>
      {state.error ? <ErrorBox error={state.error} /> : null}
      <span class="saved" role="status" data-testid="triage-result">
        {state.saving ? 'Saving…' : (state.saved ?? '')}
      </span>
    </>
  );
}

/** What both triage forms edit: one group of a project, handed back as the API saved it. */
interface TriageProps {
  projectId: string;
  group: FailureGroup;
  onSaved: (group: FailureGroup) => void;
}

const ALL_FIELDS = ['defectType', 'status', 'comment', 'issueUrl', 'assignee'] as const;

/** The triage of one group: defect type, status, comment, issue link and assignee (`PATCH …/failures/{groupId}`). */
export function TriageForm({ projectId, group, onSaved }: TriageProps) {
  const { values, set, state, submit } = useTriage(projectId, group, onSaved, ALL_FIELDS);
  return (
    <form class="triage-form" onSubmit={submit} aria-label="Triage">
      <DefectSelect value={values.defectType} onChange={set('defectType')} />
      <StatusSelect value={values.status} onChange={set('status')} />
      <label>
        Assignee
        <input name="assignee" type="text" value={values.assignee} onInput={set('assignee')} placeholder="name@example.com" />
      </label>
      <label>
        Issue link
        <input name="issueUrl" type="url" value={values.issueUrl} onInput={set('issueUrl')} placeholder="https://…" />
      </label>
      <label class="wide">
        Comment
        <textarea name="comment" value={values.comment} onInput={set('comment')} />
      </label>
      <div class="triage-inline wide">
        <button type="submit" disabled={state.saving}>
          Save triage
        </button>
        <Outcome state={state} />
      </div>
    </form>
  );
}

/** The short triage of a run's page: the defect type and the status of the group it failed with. */
export function TriageInline({ projectId, group, onSaved }: TriageProps) {
  const { values, set, state, submit } = useTriage(projectId, group, onSaved, ['defectType', 'status']);
  return (
    <form class="triage-inline" onSubmit={submit} aria-label={`Triage of ${group.title.slice(0, 80)}`}>
      <DefectSelect value={values.defectType} onChange={set('defectType')} />
      <StatusSelect value={values.status} onChange={set('status')} />
      <button type="submit" disabled={state.saving}>
        Save
      </button>
      <Outcome state={state} />
    </form>
  );
}

/** One selectable status or defect type for bulk triage: "leave as is" first. */
export function BulkChoice({
  name,
  label,
  options,
}: {
  name: string;
  label: string;
  options: readonly { value: string; label: string }[];
}) {
  return (
    <label>
      {label}
      <select name={name}>
        <option value="">leave as is</option>
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
    </label>
  );
}
