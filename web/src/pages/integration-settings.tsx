import { useEffect, useState } from 'preact/hooks';
import { v1 } from '../../../src/client/index.ts';
import { useAction } from '../admin/action.ts';
import { DoneNotice } from '../admin/status.tsx';
import { useApi } from '../data.ts';
import { bodyField, Field, FormProblem, problemAt, TextField } from '../forms.tsx';

// A project's integrations on its settings page (docs/integrations.md): the code host its jobs
// report to (FORGE-1) and the issue tracker "Create issue" files to (FORGE-5). Secrets are
// write-only: the forms say whether one is stored, and an empty field keeps it.

const PUT_FORGE = v1.integrations.putForgeSettings;
const PUT_TRACKER = v1.integrations.putIssueTracker;

/** A password input for a write-only secret: empty keeps the stored one. */
function SecretField(props: {
  label: string;
  name: string;
  value: string;
  set: boolean;
  onInput: (v: string) => void;
  problem?: string;
  multiline?: boolean;
}) {
  const hint = props.set ? 'One is stored; leave empty to keep it. It is never shown again.' : 'Not set.';
  return (
    <Field label={props.label} problem={props.problem} hint={hint}>
      {({ id, describedBy, invalid }) =>
        props.multiline ? (
          <textarea
            id={id}
            name={props.name}
            rows={4}
            class="mono"
            spellcheck={false}
            value={props.value}
            aria-describedby={describedBy}
            aria-invalid={invalid || undefined}
            onInput={(e) => props.onInput(e.currentTarget.value)}
          />
        ) : (
          <input
            id={id}
            name={props.name}
            type="password"
            autocomplete="off"
            value={props.value}
            aria-describedby={describedBy}
            aria-invalid={invalid || undefined}
            onInput={(e) => props.onInput(e.currentTarget.value)}
          />
        )
      }
    </Field>
  );
}

/** GitHub or GitLab: where the project's jobs with a commit and a repository report (check runs, commit statuses). */
export function ForgeForm({ projectId }: { projectId: string }) {
  const loaded = useApi((client) => client.call(v1.integrations.getForgeSettings, { params: { projectId } }), [projectId]);
  const action = useAction();
  const remove = useAction();
  const stored = loaded.data?.forge ?? null;
  const [form, setForm] = useState({
    kind: 'github',
    apiUrl: '',
    auth: 'token',
    token: '',
    appId: '',
    installationId: '',
    privateKey: '',
    checkName: '',
    comment: false,
  });
  const [current, setCurrent] = useState(stored);
  useEffect(() => {
    const f = loaded.data?.forge;
    setCurrent(f ?? null);
    if (f)
      setForm((old) => ({
        ...old,
        kind: f.kind,
        apiUrl: f.apiUrl,
        auth: f.auth,
        appId: f.appId ?? '',
        installationId: f.installationId ?? '',
        checkName: f.checkName,
        comment: f.pullRequestComment,
      }));
  }, [loaded.data]);
  const set = (changes: Partial<typeof form>) => setForm({ ...form, ...changes });
  const submit = async (event: Event) => {
    event.preventDefault();
    const app = form.kind === 'github' && form.auth === 'app';
    const saved = await action.run(
      (client) =>
        client.call(PUT_FORGE, {
          params: { projectId },
          body: {
            kind: form.kind as 'github' | 'gitlab',
            auth: app ? 'app' : 'token',
            pullRequestComment: form.comment,
            ...(form.apiUrl.trim() ? { apiUrl: form.apiUrl.trim() } : {}),
            ...(form.checkName.trim() ? { checkName: form.checkName.trim() } : {}),
            ...(!app && form.token ? { token: form.token } : {}),
            ...(app && form.appId.trim() ? { appId: form.appId.trim() } : {}),
            ...(app && form.installationId.trim() ? { installationId: form.installationId.trim() } : {}),
            ...(app && form.privateKey.trim() ? { privateKey: form.privateKey.trim() } : {}),
          },
        }),
      () => 'Saved the code host.',
    );
    if (saved) {
      setCurrent(saved.forge);
      setForm({ ...form, token: '', privateKey: '', apiUrl: saved.forge?.apiUrl ?? '' });
    }
  };
  const drop = async () => {
    const gone = await remove.run(
      (client) => client.call(v1.integrations.deleteForgeSettings, { params: { projectId } }).then(() => true),
      () => 'Removed the code host.',
    );
    if (gone) setCurrent(null);
  };
  const app = form.kind === 'github' && form.auth === 'app';
  return (
    <form class="panel form" onSubmit={submit} aria-label="Code host">
      <h2>Code host</h2>
      <p class="muted">
        Jobs created with a <code>commit</code> and a <code>repository</code> report here: a GitHub check run or a GitLab commit status,
        {current ? ` now to ${current.kind === 'github' ? 'GitHub' : 'GitLab'} at ${current.apiUrl}.` : ' once one is set.'}
      </p>
      <Field label="Host" problem={problemAt(action.error, '/kind')}>
        {({ id }) => (
          <select id={id} name="kind" value={form.kind} onChange={(e) => set({ kind: e.currentTarget.value, apiUrl: '' })}>
            <option value="github">GitHub</option>
            <option value="gitlab">GitLab</option>
          </select>
        )}
      </Field>
      <TextField
        label="API URL"
        name="apiUrl"
        type="url"
        value={form.apiUrl}
        onInput={(apiUrl) => set({ apiUrl })}
        schema={bodyField(PUT_FORGE, 'apiUrl')}
        problem={problemAt(action.error, '/apiUrl')}
        placeholder={form.kind === 'github' ? 'https://api.github.com' : 'https://gitlab.com/api/v4'}
        hint="Empty: the public service. GitHub Enterprise: https://host/api/v3."
      />
      {form.kind === 'github' ? (
        <Field label="Sign in as" problem={problemAt(action.error, '/auth')}>
          {({ id }) => (
            <select id={id} name="auth" value={form.auth} onChange={(e) => set({ auth: e.currentTarget.value })}>
              <option value="token">A token</option>
              <option value="app">A GitHub App</option>
            </select>
          )}
        </Field>
      ) : null}
      {app ? (
        <>
          <div class="form-row">
            <TextField
              label="App id"
              name="appId"
              value={form.appId}
              onInput={(appId) => set({ appId })}
              problem={problemAt(action.error, '/appId')}
            />
            <TextField
              label="Installation id"
              name="installationId"
              value={form.installationId}
              onInput={(installationId) => set({ installationId })}
              problem={problemAt(action.error, '/installationId')}
            />
          </div>
          <SecretField
            label="Private key (PEM)"
            name="privateKey"
            multiline
            value={form.privateKey}
            set={current?.privateKeySet ?? false}
            onInput={(privateKey) => set({ privateKey })}
            problem={problemAt(action.error, '/privateKey')}
          />
        </>
      ) : (
        <SecretField
          label="Access token"
          name="token"
          value={form.token}
          set={current?.tokenSet ?? false}
          onInput={(token) => set({ token })}
          problem={problemAt(action.error, '/token')}
        />
      )}
      <TextField
        label="Check name"
        name="checkName"
        value={form.checkName}
        onInput={(checkName) => set({ checkName })}
        problem={problemAt(action.error, '/checkName')}
        placeholder="Attest"
      />
      <label class="checkbox">
        <input type="checkbox" name="comment" checked={form.comment} onChange={(e) => set({ comment: e.currentTarget.checked })} />
        Keep one comment on the pull (merge) request up to date
      </label>
      <FormProblem
        error={action.error ?? remove.error}
        fields={['/kind', '/apiUrl', '/auth', '/token', '/appId', '/installationId', '/privateKey', '/checkName']}
      />
      <div class="form-actions">
        <button type="submit" disabled={action.busy || loaded.data === undefined}>
          Save code host
        </button>
        {current ? (
          <button type="button" class="secondary" disabled={remove.busy} onClick={drop}>
            Remove code host
          </button>
        ) : null}
        <DoneNotice done={action.done ?? remove.done} />
      </div>
    </form>
  );
}

/** Jira or GitHub Issues: where "Create issue" on an error group or a run files to. */
export function IssueTrackerForm({ projectId }: { projectId: string }) {
  const loaded = useApi((client) => client.call(v1.integrations.getIssueTracker, { params: { projectId } }), [projectId]);
  const action = useAction();
  const remove = useAction();
  const [form, setForm] = useState({
    kind: 'jira',
    baseUrl: '',
    apiVersion: '3',
    email: '',
    token: '',
    projectKey: '',
    issueType: '',
    repository: '',
  });
  const [current, setCurrent] = useState(loaded.data?.tracker ?? null);
  useEffect(() => {
    const t = loaded.data?.tracker;
    setCurrent(t ?? null);
    if (t)
      setForm((old) => ({
        ...old,
        kind: t.kind,
        baseUrl: t.baseUrl,
        apiVersion: String(t.apiVersion ?? 3),
        email: t.email ?? '',
        projectKey: t.projectKey ?? '',
        issueType: t.issueType ?? '',
        repository: t.repository ?? '',
      }));
  }, [loaded.data]);
  const set = (changes: Partial<typeof form>) => setForm({ ...form, ...changes });
  const jira = form.kind === 'jira';
  const submit = async (event: Event) => {
    event.preventDefault();
    const saved = await action.run(
      (client) =>
        client.call(PUT_TRACKER, {
          params: { projectId },
          body: jira
            ? {
                kind: 'jira',
                baseUrl: form.baseUrl.trim(),
                apiVersion: form.apiVersion === '2' ? 2 : 3,
                email: form.email.trim() || null,
                projectKey: form.projectKey.trim(),
                ...(form.issueType.trim() ? { issueType: form.issueType.trim() } : {}),
                ...(form.token ? { token: form.token } : {}),
              }
            : {
                kind: 'github',
                repository: form.repository.trim(),
                ...(form.baseUrl.trim() ? { baseUrl: form.baseUrl.trim() } : {}),
                ...(form.token ? { token: form.token } : {}),
              },
        }),
      () => 'Saved the issue tracker.',
    );
    if (saved) {
      setCurrent(saved.tracker);
      setForm({ ...form, token: '' });
    }
  };
  const drop = async () => {
    const gone = await remove.run(
      (client) => client.call(v1.integrations.deleteIssueTracker, { params: { projectId } }).then(() => true),
      () => 'Removed the issue tracker.',
    );
    if (gone) setCurrent(null);
  };
  return (
    <form class="panel form" onSubmit={submit} aria-label="Issue tracker">
      <h2>Issue tracker</h2>
      <p class="muted">"Create issue" on an error group or a run files it here, with the failure, the steps and links back.</p>
      <Field label="Tracker" problem={problemAt(action.error, '/kind')}>
        {({ id }) => (
          <select id={id} name="trackerKind" value={form.kind} onChange={(e) => set({ kind: e.currentTarget.value })}>
            <option value="jira">Jira</option>
            <option value="github">GitHub Issues</option>
          </select>
        )}
      </Field>
      <TextField
        label={jira ? 'Jira site' : 'API URL'}
        name="baseUrl"
        type="url"
        value={form.baseUrl}
        onInput={(baseUrl) => set({ baseUrl })}
        problem={problemAt(action.error, '/baseUrl')}
        placeholder={jira ? 'https://acme.atlassian.net' : 'https://api.github.com'}
        required={jira}
      />
      {jira ? (
        <>
          <div class="form-row">
            <TextField
              label="Project key"
              name="projectKey"
              value={form.projectKey}
              onInput={(projectKey) => set({ projectKey })}
              problem={problemAt(action.error, '/projectKey')}
              required
            />
            <TextField
              label="Issue type"
              name="issueType"
              value={form.issueType}
              onInput={(issueType) => set({ issueType })}
              problem={problemAt(action.error, '/issueType')}
              placeholder="Bug"
            />
            <Field label="REST API" problem={problemAt(action.error, '/apiVersion')}>
              {({ id }) => (
                <select id={id} name="apiVersion" value={form.apiVersion} onChange={(e) => set({ apiVersion: e.currentTarget.value })}>
                  <option value="3">v3 (Cloud)</option>
                  <option value="2">v2 (Server, Data Center)</option>
                </select>
              )}
            </Field>
          </div>
          <TextField
            label="Account e-mail"
            name="email"
            type="email"
            value={form.email}
            onInput={(email) => set({ email })}
            problem={problemAt(action.error, '/email')}
            hint="Jira Cloud: the account of the API token. Empty: the token is a personal access token."
          />
        </>
      ) : (
        <TextField
          label="Repository (owner/name)"
          name="repository"
          value={form.repository}
          onInput={(repository) => set({ repository })}
          problem={problemAt(action.error, '/repository')}
          required
        />
      )}
      <SecretField
        label="Token"
        name="trackerToken"
        value={form.token}
        set={current?.tokenSet ?? false}
        onInput={(token) => set({ token })}
        problem={problemAt(action.error, '/token')}
      />
      <FormProblem
        error={action.error ?? remove.error}
        fields={['/kind', '/baseUrl', '/projectKey', '/issueType', '/apiVersion', '/email', '/repository', '/token']}
      />
      <div class="form-actions">
        <button type="submit" disabled={action.busy || loaded.data === undefined}>
          Save issue tracker
        </button>
        {current ? (
          <button type="button" class="secondary" disabled={remove.busy} onClick={drop}>
            Remove issue tracker
          </button>
        ) : null}
        <DoneNotice done={action.done ?? remove.done} />
      </div>
    </form>
  );
}
