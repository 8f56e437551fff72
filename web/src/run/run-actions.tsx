import { useState } from 'preact/hooks';
import type { Static } from 'typebox';
import type { ProjectUsage } from '../../../src/api/v1/projects.ts';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { ErrorBox } from '../components.tsx';
import { formatBytes } from '../format.ts';
import type { ArtifactDetails, TestRun } from './steps.ts';
import '../manage.css';

type Usage = Static<typeof ProjectUsage>;

/** What a deletion freed: the project's usage before and after. */
export interface Deleted {
  run: TestRun;
  before: Usage;
  after: Usage | undefined;
}

const describeUsage = (usage: Usage) => `${usage.runs.toLocaleString('en')} runs, ${formatBytes(usage.storedBytes)} stored`;

/**
 * What a person does with a run from its page (UI-12): execute it by hand while it is queued or
 * running, keep it from retention once finished, delete it (asked twice, saying what it holds).
 */
export function RunActions({
  run,
  artifacts,
  onChanged,
  onDeleted,
}: {
  run: TestRun;
  artifacts: ArtifactDetails[];
  onChanged: () => void;
  onDeleted: (deleted: Deleted) => void;
}) {
  const unfinished = run.status === 'queued' || run.status === 'running';
  return (
    <>
      {unfinished && run.testId ? (
        <a class="button" href={`/runs/${run.id}/execute`}>
          Execute
        </a>
      ) : null}
      {unfinished ? null : <KeepToggle run={run} onChanged={onChanged} />}
      <DeleteRun run={run} artifacts={artifacts} onDeleted={onDeleted} />
    </>
  );
}

/** Keep (never expired by retention) or let go; the box shows the new state at once and goes back if the API refuses. */
function KeepToggle({ run, onChanged }: { run: TestRun; onChanged: () => void }) {
  const action = useAction();
  const [shown, setShown] = useState<boolean | undefined>();
  const keep = shown ?? run.keep;
  const change = async (wanted: boolean) => {
    setShown(wanted);
    const done = await action.run(
      (client) => client.call(v1.runs.keepRun, { params: { testRunId: run.id }, body: { keep: wanted } }),
      () => (wanted ? 'Kept.' : 'No longer kept.'),
    );
    setShown(undefined);
    if (done) onChanged();
  };
  return (
    <span class="keep">
      <label class="checkbox">
        <input
          type="checkbox"
          checked={keep}
          disabled={action.busy}
          onChange={(event) => change((event.target as HTMLInputElement).checked)}
        />
        Keep run
      </label>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </span>
  );
}

function DeleteRun({ run, artifacts, onDeleted }: { run: TestRun; artifacts: ArtifactDetails[]; onDeleted: (deleted: Deleted) => void }) {
  const action = useAction();
  const [before, setBefore] = useState<Usage | undefined>();
  const [asking, setAsking] = useState(false);
  const held = artifacts.reduce((sum, a) => sum + a.size, 0);
  const ask = async () => {
    setAsking(true);
    setBefore(
      await action.run(
        (client) => client.call(v1.projects.getProjectUsage, { params: { projectId: run.projectId } }),
        () => '',
      ),
    );
  };
  if (!asking) {
    return (
      <button type="button" class="secondary" onClick={ask}>
        Delete run
      </button>
    );
  }
  const confirm = async () => {
    // `action.run` answers undefined on a refusal; the usage after may be missing on its own.
    const deleted = await action.run(
      async (client) => {
        await client.call(v1.runs.deleteRun, { params: { testRunId: run.id } });
        const after = await client.call(v1.projects.getProjectUsage, { params: { projectId: run.projectId } }).catch(() => undefined);
        return { after };
      },
      () => 'Deleted.',
    );
    if (deleted && before) onDeleted({ run, before, after: deleted.after });
  };
  return (
    <div class="confirm-delete">
      <p>
        Delete <strong>{run.name}</strong> with its steps, text cells and {artifacts.length} artifact{artifacts.length === 1 ? '' : 's'} (
        {formatBytes(held)}; bytes shared with other runs stay)?
        {before ? <span class="muted"> The project holds {describeUsage(before)} now.</span> : null}
      </p>
      <button type="button" class="danger" onClick={confirm} disabled={action.busy}>
        Delete {run.name}
      </button>{' '}
      <button type="button" class="secondary" onClick={() => setAsking(false)}>
        Cancel
      </button>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </div>
  );
}

/** The page of a run just deleted: what the project held before and holds now. */
export function DeletedRun({ deleted, projectHref }: { deleted: Deleted; projectHref: string }) {
  return (
    <div class="panel" role="status">
      <p>
        Deleted the run <strong>{deleted.run.name}</strong>.
      </p>
      <p class="usage-change" data-testid="usage-change">
        Project usage: {describeUsage(deleted.before)} before, {deleted.after ? describeUsage(deleted.after) : 'unknown'} now
        {deleted.after ? ` (${formatBytes(Math.max(0, deleted.before.storedBytes - deleted.after.storedBytes))} freed)` : ''}.
      </p>
      <p>
        <a href={projectHref}>Back to the project</a>
      </p>
    </div>
  );
}
