import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import { Breadcrumb } from '../breadcrumb.tsx';
import { ErrorBox, Page, PageWaiting } from '../components.tsx';
import { useApi } from '../data.ts';
import { type FilterField, FilterForm, filterValues } from '../filter-form.tsx';
import { formatTime } from '../format.ts';
import { type Column, ListTable, Pager, pageQuery } from '../list-table.tsx';
import { api } from '../session.ts';
import {
  DEFECT_TYPES,
  type DefectType as Defect,
  defectLabel,
  FAILURE_CATEGORIES,
  FAILURE_SORTS,
  FAILURE_STATUSES,
  type FailureGroup,
  type FailureQuery,
  type FailureStatus,
  listFailures,
  type TriageChanges,
  triageFailureGroups,
} from '../triage/api.ts';
import { BulkChoice, groupColumns } from '../triage/parts.tsx';
import '../triage/triage.css';

const FAILURE_FILTERS = [
  { name: 'status', label: 'Status', options: FAILURE_STATUSES },
  { name: 'category', label: 'Category', options: FAILURE_CATEGORIES },
  { name: 'defectType', label: 'Defect type', options: DEFECT_TYPES },
  { name: 'branch', label: 'Branch' },
  { name: 'since', label: 'Seen since', type: 'datetime-local' },
  { name: 'q', label: 'Search', placeholder: 'words of the error' },
  { name: 'sort', label: 'Sort by', options: FAILURE_SORTS },
] as const satisfies readonly FilterField[];

/** The most groups one bulk triage changes (the API's limit). */
const BULK_LIMIT = 100;

function columns(projectKey: string, selected: Set<string>, toggle: (id: string) => void): Column<FailureGroup>[] {
  return [
    {
      header: 'Select',
      hideHeader: true,
      cell: (group) => (
        <input
          type="checkbox"
          checked={selected.has(group.id)}
          onChange={() => toggle(group.id)}
          aria-label={`Select ${group.title.slice(0, 80)}`}
          data-testid="select-group"
        />
      ),
    },
    ...groupColumns(projectKey),
    { header: 'Occurrences', class: 'num', cell: (group) => group.occurrences },
    { header: 'Tests', class: 'num', cell: (group) => group.affectedTests },
    { header: 'Branches', class: 'num', cell: (group) => group.affectedBranches },
    { header: 'Last seen', cell: (group) => formatTime(group.lastSeenAt) },
  ];
}

/** Sets a defect type and/or a status on every selected group at once (`PATCH …/failures`). */
function BulkTriage({ projectId, selected, onDone }: { projectId: string; selected: string[]; onDone: (count: number) => void }) {
  const [state, setState] = useState<{ saving: boolean; error?: Error; message?: string }>({ saving: false });
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const changes: TriageChanges = {};
    const defectType = String(form.get('defectType') ?? '');
    const status = String(form.get('status') ?? '');
    if (defectType) changes.defectType = defectType as Defect;
    if (status) changes.status = status as FailureStatus;
    if (Object.keys(changes).length === 0) {
      setState({ saving: false, message: 'Choose a defect type or a status to set.' });
      return;
    }
    setState({ saving: true });
    try {
      const { items } = await triageFailureGroups(api(), projectId, selected, changes);
      setState({ saving: false, message: `${items.length} groups triaged.` });
      onDone(items.length);
    } catch (error) {
      setState({ saving: false, error: error as Error });
    }
  };
  return (
    <form class="bulk panel" onSubmit={submit} aria-label="Triage the selected groups">
      <strong>{selected.length} selected</strong>
      <BulkChoice
        name="defectType"
        label="Set defect type"
        options={DEFECT_TYPES.map((type) => ({ value: type, label: defectLabel(type) }))}
      />
      <BulkChoice name="status" label="Set status" options={FAILURE_STATUSES.map((status) => ({ value: status, label: status }))} />
      <button type="submit" disabled={state.saving || selected.length === 0 || selected.length > BULK_LIMIT}>
        Apply to selected
      </button>
      {selected.length > BULK_LIMIT ? <span class="muted">At most {BULK_LIMIT} at once.</span> : null}
      {state.error ? <ErrorBox error={state.error} /> : null}
      <span class="saved" role="status" data-testid="bulk-result">
        {state.saving ? 'Saving…' : (state.message ?? '')}
      </span>
    </form>
  );
}

/** The groups selected for bulk triage. Another filter or page is another list (`listed`): a selection never reaches groups no longer shown. */
function useSelection(listed: string) {
  const [selected, setSelected] = useState<Set<string>>(new Set());
  useEffect(() => setSelected(new Set()), [listed]);
  const toggle = (id: string) =>
    setSelected((current) => {
      const next = new Set(current);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  return [selected, setSelected, toggle] as const;
}

/** The box that selects every group on the page, or none. */
function SelectAll({ checked, onChange }: { checked: boolean; onChange: () => void }) {
  return (
    <p>
      <label class="inline-check">
        <input type="checkbox" checked={checked} onChange={onChange} />
        Select every group on this page
      </label>
    </p>
  );
}

/** A project's error groups (TRIAGE-2, TRIAGE-8): filtered and sorted in the URL, selected for bulk triage. */
export function FailuresPage({ projectKey }: { projectKey: string }) {
  const { query } = useLocation();
  const project = useApi((client) => client.call(v1.projects.getProject, { params: { projectId: projectKey } }), [projectKey]);
  const projectId = project.data?.id;
  const { since, ...filters } = filterValues(query, FAILURE_FILTERS);
  const groups = useApi(
    (client) =>
      projectId
        ? listFailures(client, projectId, {
            // The select fields take only the API's own values, so the filters are the API's query as they stand.
            ...(filters as FailureQuery),
            ...(since ? { since: new Date(since).toISOString() } : {}),
            ...pageQuery(query),
          })
        : Promise.resolve(undefined),
    [projectId, JSON.stringify(query)],
  );
  const [selected, setSelected, toggle] = useSelection(JSON.stringify(query));
  if (!project.data) return <PageWaiting title="Failures" error={project.error} />;
  const items = groups.data?.items;
  const allSelected = items !== undefined && items.length > 0 && items.every((group) => selected.has(group.id));
  return (
    <Page title={`${project.data.name} · Failures`}>
      <Breadcrumb projectId={project.data.id} here="Failures" />
      <p>
        <a href={`/projects/${project.data.key}/dashboard`}>Dashboard</a>
      </p>
      <FilterForm label="Filter error groups" fields={FAILURE_FILTERS} />
      <BulkTriage
        projectId={project.data.id}
        selected={[...selected]}
        onDone={() => {
          setSelected(new Set());
          groups.reload();
        }}
      />
      {items && items.length > 0 ? (
        <SelectAll checked={allSelected} onChange={() => setSelected(allSelected ? new Set() : new Set(items.map((group) => group.id)))} />
      ) : null}
      <ListTable
        class="failures-table"
        label="Error groups"
        rows={items}
        error={groups.error}
        empty="No error group matches."
        columns={columns(project.data.key, selected, toggle)}
        rowKey={(group) => group.id}
      />
      <Pager nextCursor={groups.data?.nextCursor} first="First page" next="More groups" />
    </Page>
  );
}
