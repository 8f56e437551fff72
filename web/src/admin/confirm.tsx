import { useState } from 'preact/hooks';
import type { AttestClient } from '../../../src/client/index.ts';
import { ErrorBox } from '../components.tsx';
import { useAction } from './action.ts';

/**
 * A destructive action asked twice: "Revoke" turns into "Revoke <what>" and "Cancel"; the API's
 * refusal, if any, shows beside them. `perform` is the one call; `onDone` hears it went through.
 */
export function ConfirmAction({
  verb,
  what,
  done,
  perform,
  onDone,
}: {
  verb: string;
  what: string;
  /** What to say once it went through: "Revoked CI key." */
  done: string;
  perform: (client: AttestClient) => Promise<unknown>;
  onDone: () => void;
}) {
  const action = useAction();
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" class="secondary" onClick={() => setAsking(true)} aria-label={`${verb} ${what}`}>
        {verb}
      </button>
    );
  }
  const confirm = async () => {
    const went = await action.run(
      (client) => perform(client).then(() => true),
      () => done,
    );
    if (went) onDone();
  };
  return (
    <span class="confirm">
      <button type="button" class="danger" onClick={confirm} disabled={action.busy}>
        {verb} {what}
      </button>
      <button type="button" class="secondary" onClick={() => setAsking(false)}>
        Cancel
      </button>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </span>
  );
}
