import { useState } from 'preact/hooks';
import type { Static } from 'typebox';
import { v1 } from '../../../src/client/index.ts';
import { useApi } from '../data.ts';
import { formatTime } from '../format.ts';
import { type Column, ListTable } from '../list-table.tsx';
import { useAction } from './action.ts';
import { ConfirmAction } from './confirm.tsx';
import { ActionStatus } from './status.tsx';

type Member = Static<typeof v1.projects.Member>;

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
  const removed = (gone: string) => {
    add.clear();
    setNotice(`Removed ${gone} from ${projectName}.`);
    members.reload();
  };
  const columns: Column<Member>[] = [
    { header: 'Name', cell: (member) => member.name },
    { header: 'E-mail', cell: (member) => member.email ?? <span class="muted">hidden</span> },
    { header: 'Added', cell: (member) => formatTime(member.addedAt) },
    {
      header: 'Actions',
      hideHeader: true,
      cell: (member) => (member.email ? <RemoveMember projectId={projectId} email={member.email} onRemoved={removed} /> : null),
    },
  ];
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
      <ListTable
        label={`Members of ${projectName}`}
        rows={members.data?.items}
        error={members.error}
        empty="No member yet."
        columns={columns}
        rowKey={(member) => member.userId}
      />
    </div>
  );
}
