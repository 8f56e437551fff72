import type { Static } from 'typebox';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { atLeast, useMe } from '../admin/me.ts';
import { DoneNotice } from '../admin/status.tsx';
import { useApi } from '../data.ts';
import { formatTime } from '../format.ts';
import { FormProblem } from '../forms.tsx';

type IssueLink = Static<typeof v1.integrations.IssueLink>;

/**
 * The issues filed from Attest for an error group or a run (FORGE-6), with their title and status
 * as last read from the tracker, and "Create issue" (FORGE-5) when the project has a tracker.
 */
export function IssueLinks({
  projectId,
  failureGroupId,
  testRunId,
  onCreated,
}: {
  projectId: string;
  failureGroupId?: string;
  testRunId?: string;
  onCreated?: (link: IssueLink) => void;
}) {
  const me = useMe();
  const tracker = useApi((client) => client.call(v1.integrations.getIssueTracker, { params: { projectId } }), [projectId]);
  const links = useApi(
    (client) =>
      client.call(v1.integrations.listIssueLinks, { params: { projectId }, query: failureGroupId ? { failureGroupId } : { testRunId } }),
    [projectId, failureGroupId, testRunId],
  );
  const action = useAction();
  const create = async () => {
    const link = await action.run(
      (client) =>
        failureGroupId
          ? client.call(v1.integrations.createFailureGroupIssue, { params: { projectId, groupId: failureGroupId }, body: {} })
          : client.call(v1.integrations.createRunIssue, { params: { testRunId: testRunId as string }, body: {} }),
      (l) => `Filed ${l.key}.`,
    );
    if (link) {
      links.reload();
      onCreated?.(link);
    }
  };
  const configured = tracker.data?.tracker ?? null;
  return (
    <section class="panel" aria-labelledby="issues-heading">
      <h2 id="issues-heading">Issues</h2>
      <IssueLinkList items={links.data?.items ?? []} error={links.error} />
      {configured && atLeast(me.data?.role, 'tester') ? (
        <div class="form-actions">
          <button type="button" onClick={create} disabled={action.busy}>
            Create issue
          </button>
          <span class="muted">
            on {configured.kind === 'jira' ? `Jira ${configured.projectKey ?? ''}` : `GitHub ${configured.repository ?? ''}`}
          </span>
          <DoneNotice done={action.done} />
        </div>
      ) : null}
      {configured === null && tracker.data ? (
        <p class="muted">A manager sets an issue tracker in the project's settings to file issues from here.</p>
      ) : null}
      <FormProblem error={action.error} fields={[]} />
    </section>
  );
}

/** The filed issues, each with its key, title and last-read status, or why there are none. */
function IssueLinkList({ items, error }: { items: IssueLink[]; error: Error | undefined }) {
  if (items.length === 0) return <p class="muted">{error ? error.message : 'No issue filed from Attest.'}</p>;
  return (
    <ul class="issue-links" data-testid="issue-links">
      {items.map((link) => (
        <li key={link.id}>
          <a href={link.url} rel="noopener noreferrer" target="_blank">
            {link.key}
          </a>{' '}
          {link.title}{' '}
          <span class="muted">
            ({link.status ?? 'status not read yet'}
            {link.refreshedAt ? `, read ${formatTime(link.refreshedAt)}` : ''})
          </span>
        </li>
      ))}
    </ul>
  );
}
