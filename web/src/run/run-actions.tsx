import { useState } from 'preact/hooks';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { ErrorBox } from '../components.tsx';
import { ConfirmDeletion, type Freed, useMeasuredDeletion } from '../deletion.tsx';
import { formatBytes } from '../format.ts';
import type { ArtifactDetails, TestRun } from './steps.ts';
import '../manage.css';

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
  onDeleted: (freed: Freed) => void;
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

function DeleteRun({ run, artifacts, onDeleted }: { run: TestRun; artifacts: ArtifactDetails[]; onDeleted: (freed: Freed) => void }) {
  const deletion = useMeasuredDeletion(run.projectId);
  const held = artifacts.reduce((sum, a) => sum + a.size, 0);
  const confirm = async () => {
    const freed = await deletion.confirm(`the run ${run.name}`, (client) =>
      client.call(v1.runs.deleteRun, { params: { testRunId: run.id } }),
    );
    if (freed) onDeleted(freed);
  };
  return (
    <ConfirmDeletion deletion={deletion} ask="Delete run" label={`Delete ${run.name}`} onConfirm={confirm}>
      Delete <strong>{run.name}</strong> with its steps, text cells and {artifacts.length} artifact{artifacts.length === 1 ? '' : 's'} (
      {formatBytes(held)}; bytes shared with other runs stay)?
    </ConfirmDeletion>
  );
}
