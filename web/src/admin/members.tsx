import { useState } from 'preact/hooks';
import { v1 } from '../../../src/client/index.ts';
import { ErrorBox, Loading } from '../components.tsx';
import { useApi } from '../data.ts';
import { formatTime } from '../format.ts';
import { useAction } from './action.ts';
import { ConfirmAction } from './confirm.tsx';
import { ActionStatus } from './status.tsx';

function RemoveMember({ projectId, email, onRemoved }: { projectId: string; email: string; onRemoved: (email: string) => void }) {
  return (
    <ConfirmAction
      verb="Remove"
      done={`Removed ${email}.`}
      what={email}
      perform={(client) => client.call(v1.projects.removeMember, { params: { projectId, email } })}
      onDone={() => onRemoved(email)}
    />
  );
}

/** A project's members, with adding by e-mail and removing (managers and admins; the API decides). */
export function ProjectMembers({ projectId, projectName }: { projectId: string; projectName: string }) {
  const members = useApi((client) => client.call(v1.projects.listMembers, { params: { projectId }, query: { limit: 200 } }), [projectId]);
  const add = useAction();
  const [email, setEmail] = useState('');
  const [notice, setNotice] = useState<string | undefined>();
  const submit = async (event: Event) => {
    event.preventDefault();
    setNotice(undefined);
    const added = await add.run(
      (client) => client.call(v1.projects.addMember, { params: { projectId, email: email.trim() } }),
      (member) => `${member.name} (${member.email ?? email.trim()}) is a member of ${projectName}.`,
    );
    if (added) {
      setEmail('');
      members.reload();
    }
  };
  return (
    <div>
      <form class="inline-form" onSubmit={submit} aria-label={`Add a member to ${projectName}`}>
        <label>
          E-mail
          <input type="email" name="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={add.busy || email.trim() === ''}>
          Add member
        </button>
      </form>
      <ActionStatus state={add} />
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
      {members.error ? <ErrorBox error={members.error} /> : null}
      {members.data === undefined ? (
        members.error ? null : (
          <Loading />
        )
      ) : members.data.items.length === 0 ? (
        <p class="muted">No member yet.</p>
      ) : (
        <table class="list" aria-label={`Members of ${projectName}`}>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">E-mail</th>
              <th scope="col">Added</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {members.data.items.map((member) => (
              <tr key={member.userId}>
                <td>{member.name}</td>
                <td>{member.email ?? <span class="muted">hidden</span>}</td>
                <td>{formatTime(member.addedAt)}</td>
                <td>
                  {member.email ? (
                    <RemoveMember
                      projectId={projectId}
                      email={member.email}
                      onRemoved={(gone) => {
                        add.clear();
                        setNotice(`Removed ${gone} from ${projectName}.`);
                        members.reload();
                      }}
                    />
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
