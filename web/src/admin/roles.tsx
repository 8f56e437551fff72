import { useEffect, useState } from 'preact/hooks';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from './action.ts';
import { ActionStatus } from './status.tsx';

export const ROLES = ['viewer', 'tester', 'manager', 'admin'] as const;
export type Role = (typeof ROLES)[number];

const WHAT: Record<Role, string> = {
  viewer: 'reads results',
  tester: 'records runs and tests',
  manager: 'manages projects, members and devices',
  admin: 'everything, users included',
};

/** A user's roles as checkboxes and a Save button; the answer (or the API's refusal) is shown under it. */
export function RolesEditor({ email, roles, onSaved }: { email: string; roles: readonly Role[]; onSaved: () => void }) {
  const action = useAction();
  const [chosen, setChosen] = useState<Set<Role>>(new Set(roles));
  // Another user selected, or the saved roles came back: start from what the server holds.
  useEffect(() => setChosen(new Set(roles)), [email, roles.join(',')]);
  const toggle = (role: Role, on: boolean) => {
    const next = new Set(chosen);
    if (on) next.add(role);
    else next.delete(role);
    setChosen(next);
  };
  const save = async (event: Event) => {
    event.preventDefault();
    const wanted = ROLES.filter((role) => chosen.has(role));
    const saved = await action.run(
      (client) => client.call(v1.users.setUserRoles, { params: { email }, body: { roles: wanted } }),
      (user) => `Saved: ${user.email} now has the role${user.roles.length > 1 ? 's' : ''} ${user.roles.join(', ')}.`,
    );
    if (saved) onSaved();
  };
  const unchanged = ROLES.every((role) => chosen.has(role) === roles.includes(role));
  return (
    <form onSubmit={save} aria-label={`Roles of ${email}`}>
      <fieldset class="roles">
        <legend>Roles</legend>
        {ROLES.map((role) => (
          <label class="checkbox" key={role} title={WHAT[role]}>
            <input
              type="checkbox"
              name="roles"
              value={role}
              checked={chosen.has(role)}
              onChange={(e) => toggle(role, e.currentTarget.checked)}
              data-testid={`role-${role}`}
            />
            {role} <span class="muted">({WHAT[role]})</span>
          </label>
        ))}
      </fieldset>
      <button type="submit" data-testid="save-roles" disabled={action.busy || chosen.size === 0 || unchanged}>
        Save roles
      </button>
      {chosen.size === 0 ? <span class="muted"> A user keeps at least one role.</span> : null}
      <ActionStatus state={action} testId="roles-result" />
    </form>
  );
}
