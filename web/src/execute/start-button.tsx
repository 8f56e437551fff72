import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { ErrorBox } from '../components.tsx';

/**
 * "Execute": starts a run of a test by hand (`POST /testmgmt/testruns` with `testId`, running at
 * once) and opens it for execution. The button's idempotency key is made once, so a double click,
 * or a click retried after a lost answer, starts one run.
 */
export function ExecuteTestButton({ test }: { test: { id: string; projectId: string; name: string } }) {
  const { route } = useLocation();
  const action = useAction();
  const [idempotencyKey] = useState(() => `manual-${crypto.randomUUID?.() ?? `${Date.now()}-${Math.random()}`}`);
  const start = async () => {
    const run = await action.run(
      (client) => client.call(v1.runs.createRun, { body: { projectId: test.projectId, testId: test.id, name: test.name, idempotencyKey } }),
      () => 'Started.',
    );
    if (run) route(`/runs/${run.id}/execute`);
  };
  return (
    <>
      <button type="button" onClick={start} disabled={action.busy}>
        Execute
      </button>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </>
  );
}
