import { useState } from 'preact/hooks';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { ActionStatus } from '../admin/status.tsx';
import { ErrorBox } from '../components.tsx';
import { formatBytes } from '../format.ts';
import type { ArtifactDetails } from './steps.ts';

/** Delete, and once asked, "Yes, delete" or Cancel. */
function DeleteButton(props: {
  name: string;
  asking: boolean;
  busy: boolean;
  onAsk: () => void;
  onCancel: () => void;
  onConfirm: () => void;
}) {
  if (props.asking) {
    return (
      <span class="confirm">
        <button type="button" class="danger" onClick={props.onConfirm} disabled={props.busy}>
          Yes, delete {props.name}
        </button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
      </span>
    );
  }
  return (
    <button type="button" class="secondary" aria-label={`Delete artifact ${props.name}`} onClick={props.onAsk} disabled={props.busy}>
      Delete
    </button>
  );
}

/**
 * Every artifact of the run with a "Delete" each (manager, UI-12): asked first, then gone from the
 * page at once (`onRemove`, which hides it everywhere on the page); if the API refuses, it comes
 * back (`onRestore`) with the API's problem beside it. Storage no other artifact uses is reclaimed
 * later by garbage collection.
 */
export function ArtifactList({
  artifacts,
  onRemove,
  onRestore,
}: {
  artifacts: ArtifactDetails[];
  onRemove: (id: string) => void;
  onRestore: (id: string) => void;
}) {
  const action = useAction();
  /** The artifact being asked about, and the one whose deletion the API refused last. */
  const [asking, setAsking] = useState<string | undefined>();
  const [refused, setRefused] = useState<string | undefined>();
  const remove = async (artifact: ArtifactDetails) => {
    setAsking(undefined);
    setRefused(undefined);
    onRemove(artifact.id);
    const deleted = await action.run(
      (client) => client.call(v1.artifacts.deleteArtifact, { params: { artifactId: artifact.id } }).then(() => true),
      () => `Deleted ${artifact.name}.`,
    );
    if (!deleted) {
      setRefused(artifact.id);
      onRestore(artifact.id);
    }
  };
  return (
    <section class="panel" aria-labelledby="artifact-list-heading">
      <h2 id="artifact-list-heading">Artifacts</h2>
      {artifacts.length === 0 ? <p class="muted">No artifacts.</p> : null}
      <ul class="artifact-list">
        {artifacts.map((artifact) => (
          <li key={artifact.id} class="artifact-row" data-testid="artifact-row">
            <span class={`kind kind-${artifact.kind}`}>{artifact.kind}</span> <span class="artifact-name">{artifact.name}</span>{' '}
            <span class="muted">{formatBytes(artifact.size)}</span>{' '}
            <DeleteButton
              name={artifact.name}
              asking={asking === artifact.id}
              busy={action.busy}
              onAsk={() => setAsking(artifact.id)}
              onCancel={() => setAsking(undefined)}
              onConfirm={() => remove(artifact)}
            />
            {refused === artifact.id && action.error ? <ErrorBox error={action.error} /> : null}
          </li>
        ))}
      </ul>
      {action.done ? <ActionStatus state={action} /> : null}
    </section>
  );
}
