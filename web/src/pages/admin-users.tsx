import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import type { Static } from 'typebox';
import type { QueryOf } from '../../../src/api/endpoint.ts';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import '../admin/admin.css';
import { ApiKeysPanel } from '../admin/api-keys.tsx';
import { ConfirmAction } from '../admin/confirm.tsx';
import { atLeast, useMe } from '../admin/me.ts';
import { ProjectMembers } from '../admin/members.tsx';
import { ROLES, type Role, RolesEditor } from '../admin/roles.tsx';
import { ActionStatus } from '../admin/status.tsx';
import { ErrorBox, Loading, Page, PageWaiting } from '../components.tsx';
import { useApi } from '../data.ts';
import { type FilterField, FilterForm, filterValues } from '../filter-form.tsx';
import { formatTime } from '../format.ts';
import { type Column, ListTable, Pager, pageQuery } from '../list-table.tsx';
import { withQuery } from '../url.ts';

type User = Static<typeof v1.users.User>;

function CreateUserForm({ onCreated }: { onCreated: (email: string) => void }) {
  const action = useAction();
  const [form, setForm] = useState({ email: '', name: '', role: 'viewer' as Role, password: '' });
  const set = (field: keyof typeof form) => (e: Event) => setForm({ ...form, [field]: (e.currentTarget as HTMLInputElement).value });
  const submit = async (event: Event) => {
    event.preventDefault();
    const user = await action.run(
      (client) =>
        client.call(v1.users.createUser, {
          body: {
            email: form.email.trim(),
            name: form.name.trim(),
            roles: [form.role],
            ...(form.password ? { password: form.password } : {}),
          },
        }),
      (created) => `Created ${created.email} (${created.roles.join(', ')}).`,
    );
    if (user) {
      setForm({ email: '', name: '', role: 'viewer', password: '' });
      onCreated(user.email);
    }
  };
  return (
    <details class="panel">
      <summary>Add a user</summary>
      <form class="inline-form" onSubmit={submit} aria-label="Add a user">
        <label>
          E-mail
          <input type="email" required value={form.email} onInput={set('email')} />
        </label>
        <label>
          Name
          <input required maxLength={256} value={form.name} onInput={set('name')} />
        </label>
        <label>
          Role
          <select value={form.role} onChange={set('role')}>
            {ROLES.map((role) => (
              <option key={role} value={role}>
                {role}
              </option>
            ))}
          </select>
        </label>
        <label>
          Password (optional, 12+ characters)
          <input type="password" autoComplete="new-password" minLength={12} value={form.password} onInput={set('password')} />
        </label>
        <button type="submit" disabled={action.busy}>
          Add user
        </button>
      </form>
      <ActionStatus state={action} />
    </details>
  );
}

const USER_FILTERS = [
  { name: 'email', label: 'E-mail contains' },
  { name: 'role', label: 'Role', options: ROLES },
] as const satisfies readonly FilterField[];

/** One user, chosen from the list: their roles and their API keys. */
function UserDetail({
  email,
  onChanged,
  closeHref,
  currentKeyId,
  onDeleted,
}: {
  email: string;
  onChanged: () => void;
  closeHref: string;
  currentKeyId: string;
  onDeleted: () => void;
}) {
  const user = useApi((client) => client.call(v1.users.getUser, { params: { email } }), [email]);
  if (user.error) return <ErrorBox error={user.error} />;
  if (user.data === undefined) return <Loading />;
  const u = user.data;
  return (
    <section class="panel" aria-labelledby="user-heading" data-testid="user-detail">
      <div class="panel-header">
        <h2 id="user-heading">
          {u.name} <span class="muted">({u.email})</span>
        </h2>
        <a href={closeHref}>Close</a>
      </div>
      <p class="muted">
        Created {formatTime(u.createdAt)}; {u.hasPassword ? 'can sign in to the web interface' : 'no password: API keys only'}.
      </p>
      <RolesEditor
        email={u.email}
        roles={u.roles}
        onSaved={() => {
          user.reload();
          onChanged();
        }}
      />
      <h3>API keys</h3>
      <ApiKeysPanel email={u.email} currentKeyId={currentKeyId} />
      <h3>Delete</h3>
      <p class="muted">Revokes their keys at once; what they created stays.</p>
      <ConfirmAction
        verb="Delete user"
        what={u.email}
        done={`Deleted ${u.email}.`}
        perform={(client) => client.call(v1.users.deleteUser, { params: { email: u.email } })}
        onDone={onDeleted}
      />
    </section>
  );
}

/** A user's e-mail, a link that chooses them on this page. */
function ManageLink({ email }: { email: string }) {
  const { query, path } = useLocation();
  return (
    <a href={withQuery(path, query, { user: email })} aria-label={`Manage ${email}`}>
      {email}
    </a>
  );
}

const USER_COLUMNS: Column<User>[] = [
  { header: 'E-mail', cell: (user) => <ManageLink email={user.email} /> },
  { header: 'Name', cell: (user) => user.name },
  { header: 'Roles', cell: (user) => user.roles.join(', ') },
  { header: 'Password', cell: (user) => (user.hasPassword ? 'yes' : 'no') },
  { header: 'Created', cell: (user) => formatTime(user.createdAt) },
];

/** Every user (admins): filtered by e-mail and role, paged; one chosen with `?user=`. */
function UsersSection({ currentKeyId }: { currentKeyId: string }) {
  const { query, path, route } = useLocation();
  const filters = filterValues(query, USER_FILTERS);
  const users = useApi(
    // The role field takes only the API's own roles, so the filters are the API's query as they stand.
    (client) => client.call(v1.users.listUsers, { query: { ...pageQuery(query), ...(filters as QueryOf<typeof v1.users.listUsers>) } }),
    [query.cursor, filters.email, filters.role],
  );
  return (
    <>
      <CreateUserForm
        onCreated={(email) => {
          users.reload();
          route(withQuery(path, query, { user: email }));
        }}
      />
      {query.user ? (
        <UserDetail
          email={query.user}
          onChanged={users.reload}
          closeHref={withQuery(path, query, { user: undefined })}
          currentKeyId={currentKeyId}
          onDeleted={() => {
            users.reload();
            route(withQuery(path, query, { user: undefined }));
          }}
        />
      ) : null}
      <section class="panel" aria-labelledby="users-heading">
        <h2 id="users-heading">Users</h2>
        <FilterForm label="Filter users" fields={USER_FILTERS} />
        <ListTable
          label="Users"
          rows={users.data?.items}
          error={users.error}
          empty="No user matches."
          columns={USER_COLUMNS}
          rowKey={(user) => user.id}
          rowClass={(user) => (user.email === query.user ? 'selected' : undefined)}
        />
        <Pager nextCursor={users.data?.nextCursor} first="First page" next="Next page" />
      </section>
    </>
  );
}

/** The members of the projects the caller sees (managers and admins); one chosen with `?project=`. */
function MembersSection({ heading }: { heading: string }) {
  const { query, path, route } = useLocation();
  const projects = useApi((client) => client.call(v1.projects.listProjects, { query: { limit: 200 } }), []);
  if (projects.error) return <ErrorBox error={projects.error} />;
  if (projects.data === undefined) return <Loading />;
  const list = projects.data.items;
  const chosen = list.find((p) => p.id === query.project || p.key === query.project) ?? list[0];
  return (
    <section class="panel" aria-labelledby="members-heading">
      <h2 id="members-heading">{heading}</h2>
      {chosen === undefined ? (
        <p class="muted">No project you can manage.</p>
      ) : (
        <>
          <label>
            Project
            <select
              aria-label="Project"
              value={chosen.id}
              onChange={(e) => route(withQuery(path, query, { project: e.currentTarget.value }))}
            >
              {list.map((project) => (
                <option key={project.id} value={project.id}>
                  {project.key} · {project.name}
                </option>
              ))}
            </select>
          </label>
          <ProjectMembers projectId={chosen.id} projectName={`${chosen.key} · ${chosen.name}`} />
        </>
      )}
    </section>
  );
}

/**
 * Users and access. Admins: every user, their roles and API keys, and project members. Managers:
 * the members of their projects. The API decides each change; a refusal is shown as it answers.
 */
export function UsersPage() {
  const me = useMe();
  if (me.data === undefined) return <PageWaiting title="Users" error={me.error} />;
  const role = me.data.role;
  return (
    <Page title={role === 'admin' ? 'Users' : 'Project members'}>
      {atLeast(role, 'manager') ? null : (
        <p class="muted">
          Managing users and project members takes the manager or admin role; you are a {role}. Your own keys are under{' '}
          <a href="/keys">API keys</a>.
        </p>
      )}
      {role === 'admin' ? <UsersSection currentKeyId={me.data.key.id} /> : null}
      {atLeast(role, 'manager') ? <MembersSection heading={role === 'admin' ? 'Project members' : 'Members'} /> : null}
    </Page>
  );
}
