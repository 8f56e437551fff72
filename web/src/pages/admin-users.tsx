import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import '../admin/admin.css';
import { ApiKeysPanel } from '../admin/api-keys.tsx';
import { atLeast, useMe } from '../admin/me.ts';
import { ProjectMembers } from '../admin/members.tsx';
import { ROLES, type Role, RolesEditor } from '../admin/roles.tsx';
import { ActionStatus } from '../admin/status.tsx';
import { ErrorBox, Loading, Page } from '../components.tsx';
import { useApi } from '../data.ts';
import { formatTime } from '../format.ts';
import { withQuery } from '../url.ts';

const PAGE_SIZE = 50;

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

function UserFilters({ query, path }: { query: Record<string, string>; path: string }) {
  const { route } = useLocation();
  const submit = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const value = (name: string) => String(form.get(name) ?? '').trim() || undefined;
    route(withQuery(path, query, { cursor: undefined, email: value('email'), role: value('role') }));
  };
  return (
    <form class="filters" onSubmit={submit} aria-label="Filter users">
      <label>
        E-mail contains
        <input name="email" value={query.email ?? ''} />
      </label>
      <label>
        Role
        <select name="role" value={query.role ?? ''}>
          {['', ...ROLES].map((role) => (
            <option key={role} value={role}>
              {role || 'any'}
            </option>
          ))}
        </select>
      </label>
      <button type="submit">Filter</button>
      <a href={path}>Clear</a>
    </form>
  );
}

/** One user, chosen from the list: their roles and their API keys. */
function UserDetail({
  email,
  onChanged,
  closeHref,
  currentKeyId,
}: {
  email: string;
  onChanged: () => void;
  closeHref: string;
  currentKeyId: string;
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
    </section>
  );
}

/** Every user (admins): filtered by e-mail and role, paged; one chosen with `?user=`. */
function UsersSection({ currentKeyId }: { currentKeyId: string }) {
  const { query, path, route } = useLocation();
  const role = ROLES.includes(query.role as Role) ? (query.role as Role) : undefined;
  const users = useApi(
    (client) =>
      client.call(v1.users.listUsers, {
        query: {
          limit: PAGE_SIZE,
          ...(query.cursor ? { cursor: query.cursor } : {}),
          ...(query.email ? { email: query.email } : {}),
          ...(role ? { role } : {}),
        },
      }),
    [query.cursor, query.email, role],
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
        />
      ) : null}
      <section class="panel" aria-labelledby="users-heading">
        <h2 id="users-heading">Users</h2>
        <UserFilters query={query} path={path} />
        {users.error ? <ErrorBox error={users.error} /> : null}
        {users.data === undefined ? (
          users.error ? null : (
            <Loading />
          )
        ) : users.data.items.length === 0 ? (
          <p class="muted">No user matches.</p>
        ) : (
          <table class="list" aria-label="Users">
            <thead>
              <tr>
                <th scope="col">E-mail</th>
                <th scope="col">Name</th>
                <th scope="col">Roles</th>
                <th scope="col">Password</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {users.data.items.map((user) => (
                <tr key={user.id} class={user.email === query.user ? 'selected' : undefined}>
                  <td>
                    <a href={withQuery(path, query, { user: user.email })} aria-label={`Manage ${user.email}`}>
                      {user.email}
                    </a>
                  </td>
                  <td>{user.name}</td>
                  <td>{user.roles.join(', ')}</td>
                  <td>{user.hasPassword ? 'yes' : 'no'}</td>
                  <td>{formatTime(user.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <nav class="pager" aria-label="Pages">
          {query.cursor ? <a href={withQuery(path, query, { cursor: undefined })}>First page</a> : null}
          {users.data?.nextCursor ? <a href={withQuery(path, query, { cursor: users.data.nextCursor })}>Next page</a> : null}
        </nav>
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
  if (me.error) {
    return (
      <Page title="Users">
        <ErrorBox error={me.error} />
      </Page>
    );
  }
  if (me.data === undefined) {
    return (
      <Page title="Users">
        <Loading />
      </Page>
    );
  }
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
