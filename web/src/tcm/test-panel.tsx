import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import type { Static } from 'typebox';
import { QuarantineBody } from '../../../src/api/v1/tests.ts';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { ErrorBox, Preformatted } from '../components.tsx';
import { useApi } from '../data.ts';
import { formatTime } from '../format.ts';
import { FormProblem, problemAt, TextField } from '../forms.tsx';
import { DisableControl } from './disable-control.tsx';
import { HealthPanel } from './health-panel.tsx';
import type { TestDefinition } from './tests-api.ts';

type TestVersion = Static<typeof v1.tests.TestVersion>;
type Quarantine = TestDefinition['health']['quarantine'];
type Lifecycle = TestDefinition['health']['lifecycle'];

/** Where the test stands in the quarantine lifecycle (TRIAGE-13), in words. */
function lifecycleText({ state, fixAttempt, disabled }: Lifecycle): string {
  const branch = fixAttempt?.branch ? ` on ${fixAttempt.branch}` : '';
  if (state === 'disabled') return `Disabled: ${disabled?.reason ?? ''}`;
  if (state === 'fix-pending' && fixAttempt)
    return `Fix pending: ${fixAttempt.passes} of ${fixAttempt.required} runs${branch} passed so far.`;
  if (state === 'fixed' && fixAttempt) return `Fixed: ${fixAttempt.passes} runs${branch} passed in a row, and the quarantine was released.`;
  if (state === 'quarantined' && fixAttempt?.outcome === 'failed')
    return `Quarantined: the last fix attempt failed after ${fixAttempt.passes} passing runs.`;
  return state === 'quarantined' ? 'Quarantined.' : 'Active.';
}

/** The steps of a test or of one of its versions: action, data, expected result. */
export function StepList({ steps }: { steps: TestDefinition['steps'] }) {
  return (
    <ol class="test-steps">
      {steps.map((step, i) => (
        // Steps have no ids; their place is their identity.
        <li key={i}>
          <div class="step-action">{step.action}</div>
          {step.data ? <div class="step-data">Data: {step.data}</div> : null}
          {step.expected ? <div class="step-expected">{step.expected}</div> : null}
        </li>
      ))}
    </ol>
  );
}

/** One earlier version, as the address asks (`?version=2`): what a run of that version executed. */
function VersionView({ testId, version }: { testId: string; version: number }) {
  const shown = useApi((client) => client.call(v1.tests.getTestVersion, { params: { testId, version } }), [testId, version]);
  if (shown.error) return <ErrorBox error={shown.error} />;
  const v = shown.data;
  if (!v) return null;
  return (
    <section class="panel" aria-labelledby="version-heading" data-testid="test-version">
      <h2 id="version-heading">
        Version {v.version}
        {v.current ? ' (current)' : ''}: {v.name}
      </h2>
      <p class="muted">Made {formatTime(v.createdAt)}.</p>
      <StepList steps={v.steps} />
      {v.source ? <Preformatted label={`Gherkin source of version ${v.version}`}>{v.source}</Preformatted> : null}
    </section>
  );
}

function VersionList({ testId, current }: { testId: string; current: number }) {
  const { path } = useLocation();
  const versions = useApi(
    (client) => client.call(v1.tests.listTestVersions, { params: { testId }, query: { limit: 50 } }),
    [testId, current],
  );
  const items: TestVersion[] = versions.data?.items ?? [];
  return (
    <ul class="chips" aria-label="Versions">
      {items.map((v) => (
        <li key={v.version}>
          <a class="chip" href={`${path}?version=${v.version}`} aria-current={v.current ? 'true' : undefined}>
            Version {v.version}
            {v.current ? ' (current)' : ''}, {formatTime(v.createdAt)}
          </a>
        </li>
      ))}
    </ul>
  );
}

/** The test's quarantine and lifecycle as last answered, and the actions that change them. */
function useQuarantine(test: TestDefinition) {
  const [quarantine, setQuarantine] = useState<Quarantine>(test.health.quarantine);
  const [lifecycle, setLifecycle] = useState<Lifecycle>(test.health.lifecycle);
  const action = useAction();
  const claimFix = async () => {
    const next = await action.run(
      (client) => client.call(v1.lifecycle.startFixAttempt, { params: { testId: test.id }, body: {} }),
      (l) => `Fix attempt started: the next ${l.fixAttempt?.required ?? 0} runs must pass.`,
    );
    if (next) setLifecycle(next);
  };
  const release = async () => {
    const before = quarantine;
    setQuarantine(null);
    const went = await action.run(
      (client) => client.call(v1.tests.releaseTest, { params: { testId: test.id } }).then(() => true),
      () => 'Released.',
    );
    if (!went) setQuarantine(before);
    else if (lifecycle.state !== 'disabled') setLifecycle({ ...lifecycle, state: 'active' });
  };
  const quarantineFor = async (form: QuarantineDraft) => {
    const entry = await action.run(
      (client) =>
        client.call(v1.tests.quarantineTest, {
          params: { testId: test.id },
          body: { owner: form.owner.trim(), reason: form.reason.trim() },
        }),
      (q) => `Quarantined until ${formatTime(q.expiresAt)}.`,
    );
    if (entry) {
      setQuarantine({ owner: entry.owner, reason: entry.reason, expiresAt: entry.expiresAt, expired: entry.expired });
      setLifecycle({ ...lifecycle, state: entry.state });
    }
  };
  return { quarantine, lifecycle, setLifecycle, action, claimFix, release, quarantineFor };
}

interface QuarantineDraft {
  owner: string;
  reason: string;
}

/**
 * Quarantine a test (its failures stop failing CI until the expiry) or release it, claim a fix,
 * disable or enable it. Releasing shows at once and comes back if the API refuses.
 */
function QuarantinePanel({ test }: { test: TestDefinition }) {
  const { quarantine, lifecycle, setLifecycle, action, claimFix, release, quarantineFor } = useQuarantine(test);
  // Kept here, not in the form: after a release the form shows what was typed last.
  const [form, setForm] = useState<QuarantineDraft>({ owner: '', reason: '' });
  return (
    <section class="panel" aria-labelledby="quarantine-heading">
      <h2 id="quarantine-heading">Quarantine</h2>
      <p data-testid="lifecycle-state">
        {lifecycleText(lifecycle)}
        {lifecycle.fixAttempt?.failedRunId && lifecycle.state === 'quarantined' ? (
          <>
            {' '}
            <a href={`/runs/${lifecycle.fixAttempt.failedRunId}`}>The failing run</a>
          </>
        ) : null}
      </p>
      {quarantine ? (
        <div class="form-actions">
          <span>
            Quarantined by {quarantine.owner} until {formatTime(quarantine.expiresAt)}
            {quarantine.expired ? ' (expired)' : ''}: {quarantine.reason}
          </span>
          {lifecycle.state === 'quarantined' ? (
            <button type="button" onClick={claimFix} disabled={action.busy}>
              Claim a fix
            </button>
          ) : null}
          <button type="button" class="secondary" onClick={release} disabled={action.busy}>
            Release
          </button>
        </div>
      ) : (
        <QuarantineForm form={form} setForm={setForm} action={action} onSubmit={() => quarantineFor(form)} />
      )}
      <FormProblem error={action.error} fields={['/owner', '/reason']} />
      <DisableControl testId={test.id} lifecycle={lifecycle} onChange={setLifecycle} />
    </section>
  );
}

/** Who owns the quarantine and why, each field with the API's problem beside it. */
function QuarantineForm({
  form,
  setForm,
  action,
  onSubmit,
}: {
  form: QuarantineDraft;
  setForm: (form: QuarantineDraft) => void;
  action: { busy: boolean; error: Error | undefined };
  onSubmit: () => void;
}) {
  return (
    <form
      class="form"
      onSubmit={(event) => {
        event.preventDefault();
        onSubmit();
      }}
      aria-label="Quarantine this test"
    >
      <div class="form-row">
        <TextField
          label="Owner"
          name="owner"
          value={form.owner}
          required
          schema={QuarantineBody.properties.owner}
          onInput={(owner) => setForm({ ...form, owner })}
          problem={problemAt(action.error, '/owner')}
        />
        <TextField
          label="Reason"
          name="reason"
          value={form.reason}
          required
          schema={QuarantineBody.properties.reason}
          onInput={(reason) => setForm({ ...form, reason })}
          problem={problemAt(action.error, '/reason')}
        />
      </div>
      <div class="form-actions">
        <button type="submit" disabled={action.busy}>
          Quarantine
        </button>
        <span class="muted">For 14 days.</span>
      </div>
    </form>
  );
}

/** What a test page adds for writing tests (TCM): edit, suite, links, versions, and its quarantine. */
export function TestAuthoring({ test }: { test: TestDefinition }) {
  const { query } = useLocation();
  const asked = Number(query.version);
  return (
    <>
      <section class="panel" aria-labelledby="definition-heading">
        <div class="form-actions">
          <h2 id="definition-heading">Version {test.version}</h2>
          <a class="button" href={`/tests/${test.id}/edit`}>
            Edit test
          </a>
        </div>
        <dl class="facts">
          <div>
            <dt>Suite</dt>
            <dd>{test.suite ?? '—'}</dd>
          </div>
          <div>
            <dt>Updated</dt>
            <dd>{formatTime(test.updatedAt)}</dd>
          </div>
        </dl>
        {test.links.length > 0 ? (
          <ul class="test-links" aria-label="Links">
            {test.links.map((link) => (
              <li key={`${link.kind}:${link.key ?? link.url}`}>
                <span class="muted">{link.kind}</span>{' '}
                {link.url ? (
                  <a href={link.url} rel="noopener noreferrer" target="_blank">
                    {link.key ?? link.url}
                  </a>
                ) : (
                  link.key
                )}
                {link.title ? ` · ${link.title}` : ''}
              </li>
            ))}
          </ul>
        ) : null}
        <VersionList testId={test.id} current={test.version} />
      </section>
      {Number.isInteger(asked) && asked >= 1 && asked !== test.version ? <VersionView testId={test.id} version={asked} /> : null}
      <HealthPanel test={test} />
      <QuarantinePanel test={test} />
    </>
  );
}
