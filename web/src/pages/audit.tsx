import { useLocation } from 'preact-iso';
import type { Static } from 'typebox';
import { v1 } from '../../../src/client/index.ts';
import '../admin/admin.css';
import { Page } from '../components.tsx';
import { useApi } from '../data.ts';
import { type FilterField, FilterForm, filterValues } from '../filter-form.tsx';
import { formatTime } from '../format.ts';
import { type Column, ListTable, Pager, pageQuery } from '../list-table.tsx';
import '../manage.css';

type AuditEntry = Static<typeof v1.users.AuditEntry>;

const FILTERS = [
  { name: 'action', label: 'Action', placeholder: 'run.delete' },
  { name: 'targetId', label: 'Target id', placeholder: 'an id or an e-mail' },
] as const satisfies readonly FilterField[];

/** `/admin/audit`: who changed roles, deleted things and made or revoked keys, newest first (admins; UI-12). */
export function AuditPage() {
  const { query } = useLocation();
  const filters = filterValues(query, FILTERS);
  const entries = useApi(
    (client) => client.call(v1.users.listAuditLog, { query: { ...pageQuery(query), ...filters } }),
    [query.cursor, filters.action, filters.targetId],
  );
  // Actors by id, so a row names a person rather than a UUID (admins may list users).
  const users = useApi((client) => client.call(v1.users.listUsers, { query: { limit: 200 } }), []);
  const names = new Map((users.data?.items ?? []).map((user) => [user.id, user.email] as const));
  const columns: Column<AuditEntry>[] = [
    { header: 'When', cell: (entry) => formatTime(entry.at) },
    { header: 'Who', cell: (entry) => (entry.actorUserId ? (names.get(entry.actorUserId) ?? entry.actorUserId) : 'the system') },
    { header: 'Action', cell: (entry) => <code>{entry.action}</code> },
    {
      header: 'Target',
      cell: (entry) => (
        <>
          {entry.targetType} <code class="muted">{entry.targetId}</code>
        </>
      ),
    },
    {
      header: 'Details',
      cell: (entry) => (Object.keys(entry.details).length > 0 ? <code class="audit-details">{JSON.stringify(entry.details)}</code> : '—'),
    },
  ];
  const filtered = Object.keys(filters).length > 0;
  return (
    <Page title="Audit log">
      <FilterForm label="Filter the audit log" fields={FILTERS} />
      <ListTable
        label="Audit log"
        rows={entries.data?.items}
        error={entries.error}
        empty={filtered ? 'No entry matches.' : 'Nothing audited yet.'}
        columns={columns}
        rowKey={(entry) => entry.id}
      />
      <Pager nextCursor={entries.data?.nextCursor} first="Newest entries" next="Older entries" />
    </Page>
  );
}
