import { useState } from 'preact/hooks';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { FormProblem, problemAt, TextField } from '../forms.tsx';
import type { TestDefinition } from './tests-api.ts';

type Lifecycle = TestDefinition['health']['lifecycle'];

const REASON = v1.lifecycle.disableTest.body.properties.reason;

/**
 * Disable a test by hand, with a reason, or enable it again (TRIAGE-13): while disabled, the
 * lifecycle and automatic quarantine leave it alone. The panel shows the state the API answers.
 */
export function DisableControl({
  testId,
  lifecycle,
  onChange,
}: {
  testId: string;
  lifecycle: Lifecycle;
  onChange: (next: Lifecycle) => void;
}) {
  const action = useAction();
  const [reason, setReason] = useState('');
  const enable = async () => {
    const next = await action.run(
      (client) => client.call(v1.lifecycle.enableTest, { params: { testId } }),
      (l) => `Enabled: ${l.state}.`,
    );
    if (next) onChange(next);
  };
  const disable = async (event: Event) => {
    event.preventDefault();
    const next = await action.run(
      (client) => client.call(v1.lifecycle.disableTest, { params: { testId }, body: { reason: reason.trim() } }),
      () => 'Disabled.',
    );
    if (next) {
      setReason('');
      onChange(next);
    }
  };
  return lifecycle.state === 'disabled' ? (
    <div class="form-actions">
      <button type="button" class="secondary" onClick={enable} disabled={action.busy}>
        Enable
      </button>
      <FormProblem error={action.error} fields={[]} />
    </div>
  ) : (
    <form class="form" onSubmit={disable} aria-label="Disable this test">
      <div class="form-row">
        <TextField
          label="Why disable it"
          name="disable-reason"
          value={reason}
          required
          schema={REASON}
          onInput={setReason}
          problem={problemAt(action.error, '/reason')}
        />
      </div>
      <div class="form-actions">
        <button type="submit" class="secondary" disabled={action.busy}>
          Disable
        </button>
        <span class="muted">The lifecycle and automatic quarantine pass it by until it is enabled.</span>
      </div>
      <FormProblem error={action.error} fields={['/reason']} />
    </form>
  );
}
